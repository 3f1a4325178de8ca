/* SQLite's mutexes as adaptive pthread mutexes (glibc: spin briefly, then sleep), installed
 * through SQLite's documented SQLITE_CONFIG_MUTEX interface.
 *
 * Why: every read transaction takes a WAL read lock, whose in-process bookkeeping runs
 * under the file's shared-memory mutex, and the first (or last) holder in the process
 * makes an fcntl() call while holding it. With SQLite's default mutexes a second reader
 * thread arriving meanwhile went to sleep in the kernel and had to be woken: two reader
 * threads on one database reached ~1.4x one reader. A waiter that spins for the length
 * of a system call instead overlaps its lock with the holder's, so the process's count
 * rarely falls to zero and the fcntl() calls mostly disappear: ~2.7x (bench/RESULTS.md,
 * "Concurrency, fifth round"). Elsewhere the behaviour is the default implementation's
 * (src/mutex_unix.c): static mutexes, fast and recursive ones. */
#define _GNU_SOURCE
#include "pinned_sqlite.h"
#include "cblite_sqlcipher.h"

#include <pthread.h>
#include <stdlib.h>

struct sqlite3_mutex {
    pthread_mutex_t mutex;
};

#define STATIC_FIRST SQLITE_MUTEX_STATIC_MAIN
#define STATIC_LAST SQLITE_MUTEX_STATIC_VFS3
static sqlite3_mutex static_mutexes[STATIC_LAST - STATIC_FIRST + 1];
static pthread_once_t static_once = PTHREAD_ONCE_INIT;

static int init_mutex(pthread_mutex_t* m, int type) {
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr) != 0) return -1;
    int rc = pthread_mutexattr_settype(&attr, type);
    if (rc == 0) rc = pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
    return rc;
}

static int fast_type(void) {
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
    return PTHREAD_MUTEX_ADAPTIVE_NP;
#else
    return PTHREAD_MUTEX_NORMAL;
#endif
}

static int static_ok = 0;
static void init_static(void) {
    int ok = 1;
    for (size_t i = 0; i < sizeof static_mutexes / sizeof static_mutexes[0]; i++)
        if (init_mutex(&static_mutexes[i].mutex, fast_type()) != 0) ok = 0;
    static_ok = ok;
}

static int mutex_init(void) {
    pthread_once(&static_once, init_static);
    return static_ok ? SQLITE_OK : SQLITE_NOMEM;
}

static int mutex_end(void) { return SQLITE_OK; }

static sqlite3_mutex* mutex_alloc(int id) {
    if (id >= STATIC_FIRST && id <= STATIC_LAST) return &static_mutexes[id - STATIC_FIRST];
    if (id != SQLITE_MUTEX_FAST && id != SQLITE_MUTEX_RECURSIVE) return NULL;
    sqlite3_mutex* p = malloc(sizeof *p);
    if (!p) return NULL;
    if (init_mutex(&p->mutex, id == SQLITE_MUTEX_RECURSIVE ? PTHREAD_MUTEX_RECURSIVE : fast_type()) != 0) {
        free(p);
        return NULL;
    }
    return p;
}

static void mutex_free(sqlite3_mutex* p) {
    if (p >= static_mutexes && p < static_mutexes + sizeof static_mutexes / sizeof static_mutexes[0]) return;
    pthread_mutex_destroy(&p->mutex);
    free(p);
}

static void mutex_enter(sqlite3_mutex* p) { pthread_mutex_lock(&p->mutex); }
static int mutex_try(sqlite3_mutex* p) { return pthread_mutex_trylock(&p->mutex) == 0 ? SQLITE_OK : SQLITE_BUSY; }
static void mutex_leave(sqlite3_mutex* p) { pthread_mutex_unlock(&p->mutex); }

/* Only used inside SQLite's assert()s; "true" is what the interface asks of an
 * implementation that cannot tell (sqlite3_mutex_held's documentation). */
static int mutex_held(sqlite3_mutex* p) { (void)p; return 1; }
static int mutex_notheld(sqlite3_mutex* p) { (void)p; return 1; }

static const sqlite3_mutex_methods adaptive_methods = {
    mutex_init, mutex_end, mutex_alloc, mutex_free, mutex_enter, mutex_try, mutex_leave,
    mutex_held, mutex_notheld,
};

int cblite_sqlite_use_adaptive_mutexes(void) {
    return sqlite3_config(SQLITE_CONFIG_MUTEX, &adaptive_methods);
}
