/* See ../include/cblite_faults.h. A VFS shim over "unix" (the pattern of SQLite's own
 * test_vfs / vfstrace: each file wraps the unix file that follows it in memory) whose
 * xWrite, xSync and xTruncate pass a fault point first, and the counter the attachment
 * store's points share. Only in builds with CBLITE_FAULT_INJECTION (Package.swift: debug). */
#ifdef CBLITE_FAULT_INJECTION
#include "sqlite3.h"
#include "cblite_faults.h"
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

static _Atomic int armed;
static _Atomic int64_t fail_at, passed, injected;
static _Atomic int fail_errno, fail_sticky;

void cblite_faults_arm(int64_t at, int errnum, int sticky) {
    atomic_store(&armed, 0);
    atomic_store(&passed, 0);
    atomic_store(&injected, 0);
    atomic_store(&fail_at, at);
    atomic_store(&fail_errno, errnum);
    atomic_store(&fail_sticky, sticky);
    atomic_store(&armed, 1);
}

void cblite_faults_disarm(void) { atomic_store(&armed, 0); }
int64_t cblite_faults_count(void) { return atomic_load(&passed); }
int64_t cblite_faults_injected(void) { return atomic_load(&injected); }

int cblite_fault_point(int kind) {
    (void)kind;
    if (!atomic_load(&armed)) return 0;
    int64_t n = atomic_fetch_add(&passed, 1) + 1, at = atomic_load(&fail_at);
    if (at <= 0 || n < at || (n > at && !atomic_load(&fail_sticky))) return 0;
    atomic_fetch_add(&injected, 1);
    return atomic_load(&fail_errno);
}

/* ---- the VFS shim ---- */

typedef struct FaultFile {
    sqlite3_file base;
    sqlite3_file* real;      /* the unix file, right after this struct */
} FaultFile;

static sqlite3_vfs* real_vfs;
#define REAL(f) (((FaultFile*)(f))->real)

/* The SQLite code the unix VFS gives for `errnum` at this kind of call; errno is left
 * set, which is what sqlite3_system_errno reports (SQLiteError reads it). */
static int fault_code(int errnum, int kind) {
    errno = errnum;
    switch (kind) {
    case CBLITE_FAULT_WRITE: return errnum == ENOSPC ? SQLITE_FULL : SQLITE_IOERR_WRITE;
    case CBLITE_FAULT_SYNC: return SQLITE_IOERR_FSYNC;
    default: return SQLITE_IOERR_TRUNCATE;
    }
}

static int f_close(sqlite3_file* f) { return REAL(f)->pMethods->xClose(REAL(f)); }
static int f_read(sqlite3_file* f, void* b, int n, sqlite3_int64 o) { return REAL(f)->pMethods->xRead(REAL(f), b, n, o); }

static int f_write(sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
    int e = cblite_fault_point(CBLITE_FAULT_WRITE);
    if (e) {
        /* A full disk takes part of a write before refusing the rest: a torn page or frame. */
        if (e == ENOSPC && n > 1) (void)REAL(f)->pMethods->xWrite(REAL(f), b, n / 2, o);
        return fault_code(e, CBLITE_FAULT_WRITE);
    }
    return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}

static int f_truncate(sqlite3_file* f, sqlite3_int64 size) {
    int e = cblite_fault_point(CBLITE_FAULT_TRUNCATE);
    return e ? fault_code(e, CBLITE_FAULT_TRUNCATE) : REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int f_sync(sqlite3_file* f, int flags) {
    int e = cblite_fault_point(CBLITE_FAULT_SYNC);
    return e ? fault_code(e, CBLITE_FAULT_SYNC) : REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int f_size(sqlite3_file* f, sqlite3_int64* s) { return REAL(f)->pMethods->xFileSize(REAL(f), s); }
static int f_lock(sqlite3_file* f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int f_unlock(sqlite3_file* f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int f_check(sqlite3_file* f, int* r) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), r); }
static int f_control(sqlite3_file* f, int op, void* a) { return REAL(f)->pMethods->xFileControl(REAL(f), op, a); }
static int f_sector(sqlite3_file* f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int f_caps(sqlite3_file* f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int f_shm_map(sqlite3_file* f, int pg, int sz, int ext, void volatile** p) {
    return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, ext, p);
}
static int f_shm_lock(sqlite3_file* f, int o, int n, int fl) { return REAL(f)->pMethods->xShmLock(REAL(f), o, n, fl); }
static void f_shm_barrier(sqlite3_file* f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int f_shm_unmap(sqlite3_file* f, int d) { return REAL(f)->pMethods->xShmUnmap(REAL(f), d); }
static int f_fetch(sqlite3_file* f, sqlite3_int64 o, int n, void** p) { return REAL(f)->pMethods->xFetch(REAL(f), o, n, p); }
static int f_unfetch(sqlite3_file* f, sqlite3_int64 o, void* p) { return REAL(f)->pMethods->xUnfetch(REAL(f), o, p); }

/* The unix VFS's files are all version 3 (shared memory and fetch included). */
static const sqlite3_io_methods fault_methods = {
    3, f_close, f_read, f_write, f_truncate, f_sync, f_size, f_lock, f_unlock, f_check, f_control,
    f_sector, f_caps, f_shm_map, f_shm_lock, f_shm_barrier, f_shm_unmap, f_fetch, f_unfetch,
};

static int v_open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* f, int flags, int* out) {
    (void)vfs;
    FaultFile* p = (FaultFile*)f;
    p->real = (sqlite3_file*)&p[1];
    int rc = real_vfs->xOpen(real_vfs, name, p->real, flags, out);
    p->base.pMethods = p->real->pMethods ? &fault_methods : 0;
    return rc;
}

#define FORWARD(call) (real_vfs->call)
static int v_delete(sqlite3_vfs* v, const char* n, int s) { (void)v; return FORWARD(xDelete)(real_vfs, n, s); }
static int v_access(sqlite3_vfs* v, const char* n, int fl, int* r) { (void)v; return FORWARD(xAccess)(real_vfs, n, fl, r); }
static int v_full(sqlite3_vfs* v, const char* n, int sz, char* out) { (void)v; return FORWARD(xFullPathname)(real_vfs, n, sz, out); }
static void* v_dlopen(sqlite3_vfs* v, const char* n) { (void)v; return FORWARD(xDlOpen)(real_vfs, n); }
static void v_dlerror(sqlite3_vfs* v, int n, char* m) { (void)v; FORWARD(xDlError)(real_vfs, n, m); }
static void (*v_dlsym(sqlite3_vfs* v, void* h, const char* s))(void) { (void)v; return FORWARD(xDlSym)(real_vfs, h, s); }
static void v_dlclose(sqlite3_vfs* v, void* h) { (void)v; FORWARD(xDlClose)(real_vfs, h); }
static int v_random(sqlite3_vfs* v, int n, char* out) { (void)v; return FORWARD(xRandomness)(real_vfs, n, out); }
static int v_sleep(sqlite3_vfs* v, int us) { (void)v; return FORWARD(xSleep)(real_vfs, us); }
static int v_time(sqlite3_vfs* v, double* t) { (void)v; return FORWARD(xCurrentTime)(real_vfs, t); }
static int v_lasterr(sqlite3_vfs* v, int n, char* m) { (void)v; return FORWARD(xGetLastError)(real_vfs, n, m); }
static int v_time64(sqlite3_vfs* v, sqlite3_int64* t) { (void)v; return FORWARD(xCurrentTimeInt64)(real_vfs, t); }
static int v_setsys(sqlite3_vfs* v, const char* n, sqlite3_syscall_ptr p) { (void)v; return FORWARD(xSetSystemCall)(real_vfs, n, p); }
static sqlite3_syscall_ptr v_getsys(sqlite3_vfs* v, const char* n) { (void)v; return FORWARD(xGetSystemCall)(real_vfs, n); }
static const char* v_nextsys(sqlite3_vfs* v, const char* n) { (void)v; return FORWARD(xNextSystemCall)(real_vfs, n); }

static sqlite3_vfs fault_vfs = {
    3, 0, 0, 0, "cblite-faults", 0,
    v_open, v_delete, v_access, v_full, v_dlopen, v_dlerror, v_dlsym, v_dlclose,
    v_random, v_sleep, v_time, v_lasterr, v_time64, v_setsys, v_getsys, v_nextsys,
};

int cblite_faults_install(void) {
    if (real_vfs) return SQLITE_OK;
    sqlite3_vfs* unix_vfs = sqlite3_vfs_find("unix");
    if (!unix_vfs) return SQLITE_ERROR;
    real_vfs = unix_vfs;
    fault_vfs.szOsFile = (int)sizeof(FaultFile) + unix_vfs->szOsFile;
    fault_vfs.mxPathname = unix_vfs->mxPathname;
    return sqlite3_vfs_register(&fault_vfs, 1);
}
#endif
