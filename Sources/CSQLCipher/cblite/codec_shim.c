/* See ../include/cblite_sqlcipher.h. Compiled with the amalgamation's defines. */
#include "pinned_sqlite.h"
#include "cblite_sqlcipher.h"
#include "cblite_faults.h"

int cblite_sqlcipher_key(sqlite3* db, const void* key, int length) {
    return sqlite3_key(db, key, length);
}

int cblite_sqlite_configure(void) {
    int mutexes = cblite_sqlite_use_adaptive_mutexes();
    /* No memory-mapped files: cblite never maps its databases (mmap_size stays 0), and the
     * sorter's spilled runs (a CREATE INDEX larger than the page cache) are then read with
     * read() instead of being mapped whole, which counted them in the resident set. Only
     * effective before SQLite initializes. */
    int mmap = sqlite3_config(SQLITE_CONFIG_MMAP_SIZE, (sqlite3_int64)0, (sqlite3_int64)0);
    if (mutexes != SQLITE_OK) return mutexes;
    if (mmap != SQLITE_OK) return mmap;
    /* Then: finding the unix VFS initializes SQLite, after which sqlite3_config refuses;
     * SQLCipher's provider can only be changed once SQLite is initialized. */
    int locks = cblite_sqlite_keep_read_locks();
    int crypto = cblite_sqlcipher_keep_crypto_contexts();
#ifdef CBLITE_FAULT_INJECTION
    /* Test builds: every connection through the fault-injecting VFS (inert until armed). */
    int faults = cblite_faults_install();
    if (faults != SQLITE_OK) return faults;
#endif
    return locks != SQLITE_OK ? locks : crypto;
}
