/* Codec entry points of the compiled-in SQLCipher, declared for Swift (sqlite3.h only
 * declares them when SQLITE_HAS_CODEC is defined, which importers do not see). */
#ifndef CBLITE_SQLCIPHER_H
#define CBLITE_SQLCIPHER_H
#include "sqlite3.h"

/* Applies the key to a freshly opened connection: sqlite3_key. A raw 256-bit key is
 * passed in SQLCipher's blob-literal form x'<64 hex digits>'. */
int cblite_sqlcipher_key(sqlite3* db, const void* key, int length);

/* Process-wide settings of the compiled-in SQLCipher: adaptive mutexes
 * (cblite/adaptive_mutex.c) and no memory-mapped files, which sqlite3_config (variadic:
 * not callable from Swift) takes before SQLite initializes; then WAL read locks kept
 * between the reads of a run (cblite/kept_read_locks.c) and page crypto contexts kept per
 * connection (cblite/page_crypto.c). Call once, before the first connection opens. */
int cblite_sqlite_configure(void);

/* Keeps WAL read-mark locks at the system level between read transactions that come in
 * a run (cblite/kept_read_locks.c); part of cblite_sqlite_configure. */
int cblite_sqlite_keep_read_locks(void);

/* For tests and diagnostics: the read-mark locks kept now (all files), whether the thread
 * that releases unused ones runs, and how many system calls keeping has saved. */
void cblite_kept_read_locks(int* kept, int* releasing, unsigned long long* saved);

/* Page HMAC and AES contexts kept per connection instead of made per page
 * (cblite/page_crypto.c); part of cblite_sqlite_configure. */
int cblite_sqlcipher_keep_crypto_contexts(void);

/* For tests (cblite/page_crypto.c): one page through SQLCipher's stock functions
 * (stock = 1) or through cblite's provider with the context in *state (kept across calls,
 * released by cblite_sqlcipher_page_crypto_release). */
int cblite_sqlcipher_page_crypto_check(int stock, int algorithm, unsigned char* hmac_key, unsigned char* key,
                                       int key_sz, unsigned char* iv, unsigned char* in, int in_sz,
                                       unsigned char* mac_out, unsigned char* enc_out, unsigned char* dec_out,
                                       void** state);
void cblite_sqlcipher_page_crypto_release(void** state);

/* Installs adaptive pthread mutexes as SQLite's mutex implementation
 * (cblite/adaptive_mutex.c); part of cblite_sqlite_configure. */
int cblite_sqlite_use_adaptive_mutexes(void);

#endif
