/* WAL read locks kept between read transactions, through the unix VFS's documented
 * system-call override (sqlite3_vfs.xSetSystemCall for "fcntl" and "close").
 *
 * Why: every read transaction on a WAL database takes a shared lock on one of the five
 * read-mark bytes of the -shm file and releases it at its end. When no other connection
 * of the process holds that byte, each is an fcntl() system call: two per cbl_doc_get,
 * ~28% of the benchmark's read phase (perf; bench/RESULTS.md, "Session 9").
 *
 * What: while no other process has the database open, a read-mark lock released within
 * KEEP_MS of the previous release on the same -shm file (reads that come in a run) stays
 * held at the system level and is only marked unused; the next shared lock on that byte
 * takes it back without a system call. SQLite's in-process accounting
 * (unixShmNode.aLock) is untouched, so its rules still hold: it asks the system for a
 * shared lock, or its release, only when no connection of the process holds the byte,
 * and for an exclusive lock only when none does; the system then upgrades the process's
 * own kept lock, so the process's writers and checkpoints are never held up by it.
 *
 * Other processes: a kept lock would look to them like a reader that never ends, and
 * stop their log from starting over for as long as this process reads. So locks are
 * kept only while this process is the only one with the -shm file open: none holds the
 * dead-man-switch byte that every process attached to it holds (F_GETLK, at most once per
 * KEEP_MS). A thread, running only while a lock is kept, looks every KEEP_MS: it releases
 * the locks left unused for a whole period, and all of them once another process has
 * come. Another process is held up by at most that period, as by any reader. It ends
 * once nothing is kept and no read taken back from a kept lock is still going on: ended
 * whenever it found the run's read in progress (nothing kept at that moment), it was
 * started again up to 92 times in one 100,000-document scan (a clone3 each).
 *
 * A close() of the -shm file drops the process's locks on it, and its entry here. */
#define _GNU_SOURCE
#include "pinned_sqlite.h"
#include "cblite_sqlcipher.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* SQLite's unix VFS locks bytes 120..128 of the -shm file (UNIX_SHM_BASE = 120):
 * WRITE 120, CHECKPOINT 121, RECOVER 122, the read marks READ(0..4) at 123..127, and the
 * dead-man switch at 128. A database file's own locks lie at 0x40000000 and above. */
enum { READ_FIRST = 123, READ_COUNT = 5, DEAD_MAN_SWITCH = 128 };
enum { KEEP_MS = 10, MAX_FILES = 64 };

typedef enum {
    SLOT_FREE = 0,      /* no lock of ours at the system level (as far as we know) */
    SLOT_IN_USE,        /* a shared lock SQLite holds */
    SLOT_KEPT,          /* a shared lock SQLite released and this file keeps */
    SLOT_EXCLUSIVE,     /* an exclusive lock SQLite holds */
} slot_state;

typedef struct {
    int fd;                             /* -1: entry unused */
    uint8_t state[READ_COUNT];
    uint8_t used[READ_COUNT];           /* taken back since the releasing thread last looked */
    int64_t last_release_ms;            /* when SQLite last released a read mark */
    int64_t alone_checked_ms;           /* when `alone` was last asked of the system */
    int alone;                          /* no other process had the file open then */
} shm_file;

typedef int (*fcntl_fn)(int, int, ...);
typedef int (*close_fn)(int);

static fcntl_fn real_fcntl;
static close_fn real_close;
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;
static shm_file files[MAX_FILES];
static int kept_count;                  /* slots in SLOT_KEPT, all files */
static int releaser_running;
static unsigned long long calls_saved;  /* system calls not made (tests and diagnostics) */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The entry of fd, or a new one when make is set (NULL when the table is full). */
static shm_file* file_of(int fd, int make) {
    shm_file* unused = NULL;
    for (int i = 0; i < MAX_FILES; i++) {
        if (files[i].fd == fd) return &files[i];
        if (!unused && files[i].fd == -1) unused = &files[i];
    }
    if (!make || !unused) return NULL;
    memset(unused, 0, sizeof *unused);
    unused->fd = fd;
    unused->last_release_ms = INT64_MIN / 2;
    unused->alone_checked_ms = INT64_MIN / 2;
    return unused;
}

/* Is this process the only one attached to the -shm file? Every attached process holds a
 * shared lock on the dead-man switch; F_GETLK reports other processes' locks only. Asked
 * of the system at most once per KEEP_MS unless `now` is forced. */
static int alone(shm_file* file, int64_t now, int force) {
    if (!force && now - file->alone_checked_ms <= KEEP_MS) return file->alone;
    struct flock f = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = DEAD_MAN_SWITCH, .l_len = 1 };
    file->alone = real_fcntl(file->fd, F_GETLK, &f) == 0 && f.l_type == F_UNLCK;
    file->alone_checked_ms = now;
    return file->alone;
}

static int unlock_slot(int fd, int slot) {
    struct flock f = { .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = READ_FIRST + slot, .l_len = 1 };
    return real_fcntl(fd, F_SETLK, &f);
}

static void* release_unused(void* arg) {
    (void)arg;
    for (;;) {
        struct timespec pause = { 0, KEEP_MS * 1000000L };
        nanosleep(&pause, NULL);
        pthread_mutex_lock(&files_lock);
        int64_t now = now_ms();
        int runs_on = 0;                /* reads of a run in progress: more will be kept */
        for (int i = 0; i < MAX_FILES; i++) {
            shm_file* file = &files[i];
            if (file->fd == -1) continue;
            int kept_here = 0;
            for (int s = 0; s < READ_COUNT; s++) {
                kept_here += file->state[s] == SLOT_KEPT;
                /* Taken back from a kept lock since the last look: counted once only, so a
                 * read that lasts longer than a period does not keep the thread. */
                if (file->state[s] == SLOT_IN_USE && file->used[s]) { file->used[s] = 0; runs_on = 1; }
            }
            if (!kept_here) continue;
            int others = !alone(file, now, 1);
            for (int s = 0; s < READ_COUNT; s++) {
                if (file->state[s] != SLOT_KEPT) continue;
                if (file->used[s] && !others) { file->used[s] = 0; continue; }
                /* A failed unlock leaves the lock held, as it would be after SQLite's own
                 * failed unlock; the slot is forgotten either way (at worst a reader
                 * that stays, never a reader that is not protected). */
                unlock_slot(file->fd, s);
                file->state[s] = SLOT_FREE;
                kept_count--;
            }
        }
        if (kept_count == 0 && !runs_on) {
            releaser_running = 0;
            pthread_mutex_unlock(&files_lock);
            return NULL;
        }
        pthread_mutex_unlock(&files_lock);
    }
}

/* Under files_lock: is a releasing thread running, or could one be started? */
static int releaser_started(void) {
    if (releaser_running) return 1;
    pthread_attr_t attr;
    pthread_t thread;
    if (pthread_attr_init(&attr) != 0) return 0;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    int rc = pthread_create(&thread, &attr, release_unused, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) return 0;
    releaser_running = 1;
    return 1;
}

static int covers_read_marks(const struct flock* f) {
    return f->l_whence == SEEK_SET && f->l_len >= 1
        && f->l_start < READ_FIRST + READ_COUNT && f->l_start + f->l_len > READ_FIRST;
}

/* Under files_lock, F_SETLK on bytes of the read marks: returns 1 and sets *result when
 * handled here (0: the table is full, the call goes to the system untracked). */
static int read_mark_lock(int fd, const struct flock* f, int* result) {
    int single = f->l_len == 1 && f->l_start >= READ_FIRST;
    int slot = (int)(f->l_start - READ_FIRST);
    shm_file* file = file_of(fd, 1);
    if (!file) return 0;

    if (single && f->l_type == F_RDLCK && file->state[slot] == SLOT_KEPT) {
        file->state[slot] = SLOT_IN_USE;
        file->used[slot] = 1;
        kept_count--;
        calls_saved++;
        *result = 0;
        return 1;
    }
    if (single && f->l_type == F_UNLCK && file->state[slot] == SLOT_IN_USE) {
        int64_t now = now_ms();
        int in_a_run = now - file->last_release_ms <= KEEP_MS;
        file->last_release_ms = now;
        if (in_a_run && alone(file, now, 0) && releaser_started()) {
            file->state[slot] = SLOT_KEPT;
            file->used[slot] = 1;
            kept_count++;
            calls_saved++;
            *result = 0;
            return 1;
        }
    }

    /* Anything else goes to the system; the slots it covers follow its outcome. */
    int rc = real_fcntl(fd, F_SETLK, f);
    if (rc == 0) {
        int64_t first = f->l_start > READ_FIRST ? f->l_start - READ_FIRST : 0;
        int64_t end = f->l_start + f->l_len - READ_FIRST;
        if (end > READ_COUNT) end = READ_COUNT;
        for (int64_t s = first; s < end; s++) {
            if (file->state[s] == SLOT_KEPT) kept_count--;
            file->state[s] = f->l_type == F_UNLCK ? SLOT_FREE
                           : f->l_type == F_RDLCK ? SLOT_IN_USE : SLOT_EXCLUSIVE;
            file->used[s] = 0;
        }
    }
    *result = rc;
    return 1;
}

static int kept_fcntl(int fd, int op, ...) {
    va_list args;
    va_start(args, op);
    void* arg = va_arg(args, void*);
    va_end(args);
    if (op == F_SETLK && arg && covers_read_marks(arg)) {
        const struct flock* f = arg;
        int result = 0;
        pthread_mutex_lock(&files_lock);
        int handled = read_mark_lock(fd, f, &result);
        int saved_errno = errno;
        pthread_mutex_unlock(&files_lock);
        if (handled) { errno = saved_errno; return result; }
    }
    return real_fcntl(fd, op, arg);
}

static int kept_close(int fd) {
    pthread_mutex_lock(&files_lock);
    shm_file* file = file_of(fd, 0);
    if (file) {
        for (int s = 0; s < READ_COUNT; s++) if (file->state[s] == SLOT_KEPT) kept_count--;
        file->fd = -1;
    }
    pthread_mutex_unlock(&files_lock);
    return real_close(fd);
}

/* A child of fork() holds none of its parent's locks and has none of its threads: it
 * starts with nothing kept (and a lock no parent thread held across the fork). */
static void before_fork(void) { pthread_mutex_lock(&files_lock); }
static void after_fork_in_parent(void) { pthread_mutex_unlock(&files_lock); }
static void after_fork_in_child(void) {
    pthread_mutex_init(&files_lock, NULL);
    for (int i = 0; i < MAX_FILES; i++) files[i].fd = -1;
    kept_count = 0;
    releaser_running = 0;
}

static int install_rc = SQLITE_NOTFOUND;

static void install(void) {
    sqlite3_vfs* unix_vfs = sqlite3_vfs_find("unix");
    if (!unix_vfs || unix_vfs->iVersion < 3 || !unix_vfs->xSetSystemCall) return;
    for (int i = 0; i < MAX_FILES; i++) files[i].fd = -1;
    real_fcntl = (fcntl_fn)unix_vfs->xGetSystemCall(unix_vfs, "fcntl");
    real_close = (close_fn)unix_vfs->xGetSystemCall(unix_vfs, "close");
    if (!real_fcntl || !real_close) return;
    if (pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child) != 0) return;
    /* close first: an fcntl wrapper never runs without the close that forgets its files */
    install_rc = unix_vfs->xSetSystemCall(unix_vfs, "close", (sqlite3_syscall_ptr)kept_close);
    if (install_rc == SQLITE_OK) install_rc = unix_vfs->xSetSystemCall(unix_vfs, "fcntl", (sqlite3_syscall_ptr)kept_fcntl);
}

/* Once per process (a second wrapping would take the first wrapper for the system). Call
 * before the first connection opens. */
int cblite_sqlite_keep_read_locks(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
    return install_rc;
}

void cblite_kept_read_locks(int* kept, int* releasing, unsigned long long* saved) {
    pthread_mutex_lock(&files_lock);
    if (kept) *kept = kept_count;
    if (releasing) *releasing = releaser_running;
    if (saved) *saved = calls_saved;
    pthread_mutex_unlock(&files_lock);
}
