/* The one SQLCipher that the C in this directory was written and measured against. That
 * code reads private structures and relies on internal behaviour of this exact source
 * (README.md here), which another version can change without any compile error. So every
 * file here includes this header, and the build fails on any other amalgamation.
 *
 * generate.sh reads the values below (the `#define NAME "value"` lines): the Debian source
 * package it fetches, the SHA-256 of each file of it, and the version and source ID the
 * generated amalgamation must carry. To move to another SQLCipher, re-check what README.md
 * lists for each file, then change every value here. */
#ifndef CBLITE_PINNED_SQLITE_H
#define CBLITE_PINNED_SQLITE_H
#include "sqlite3.h"

#define CBLITE_PINNED_DEBIAN_SOURCE "4.6.1-2"
#define CBLITE_PINNED_DSC "sqlcipher_4.6.1-2.dsc"
#define CBLITE_PINNED_DSC_SHA256 "dbe12db69e46bd2e3db2efc1d780a167e127ede1e97b18d39f9ddbd6a17faf5f"
#define CBLITE_PINNED_ORIG "sqlcipher_4.6.1.orig.tar.gz"
#define CBLITE_PINNED_ORIG_SHA256 "d8f9afcbc2f4b55e316ca4ada4425daf3d0b4aab25f45e11a802ae422b9f53a3"
#define CBLITE_PINNED_DEBIAN "sqlcipher_4.6.1-2.debian.tar.xz"
#define CBLITE_PINNED_DEBIAN_SHA256 "1b779e7bf317d2a9091e1121c2978e6610c91e74dd2370cb1729d38a13257c82"

#define CBLITE_PINNED_SQLCIPHER_VERSION "4.6.1"
#define CBLITE_PINNED_SQLITE_VERSION_NUMBER 3046001
#define CBLITE_PINNED_SQLITE_SOURCE_ID "2024-08-13 09:16:08 c9c2ab54ba1f5f46360f1b4f35d849cd3f080e6fc2b6c60e91b16c63f69aalt1"

#if SQLITE_VERSION_NUMBER != CBLITE_PINNED_SQLITE_VERSION_NUMBER
#error "cblite: the SQLite in Sources/CSQLCipher (sqlite3.c, include/sqlite3.h) is not the version pinned in Sources/CSQLCipher/cblite/pinned_sqlite.h, whose private structures cblite's C reads. Delete sqlite3.c and include/sqlite3.h and run Sources/CSQLCipher/generate.sh; to move to another version, re-check what Sources/CSQLCipher/cblite/README.md lists, then change the pin."
#endif

/* The source ID tells apart two builds of one SQLite version (SQLCipher's changes, Debian's
 * patches). A string: compared by the compiler's constant folding of strcmp. */
#if defined(__GNUC__) || defined(__clang__)
#define CBLITE_PIN_STR(x) #x
#define CBLITE_PIN_XSTR(x) CBLITE_PIN_STR(x)
_Static_assert(__builtin_strcmp(SQLITE_SOURCE_ID, CBLITE_PINNED_SQLITE_SOURCE_ID) == 0,
               "cblite: the SQLite source ID in Sources/CSQLCipher is not the one pinned in "
               "Sources/CSQLCipher/cblite/pinned_sqlite.h. Delete Sources/CSQLCipher/sqlite3.c and "
               "include/sqlite3.h and run Sources/CSQLCipher/generate.sh.");
#ifdef SQLITE_AMALGAMATION
/* Inside sqlite_unit.c, after sqlite3.c: SQLCipher's own version is visible too. */
#ifndef CIPHER_VERSION_NUMBER
#error "cblite: Sources/CSQLCipher/sqlite3.c is not a SQLCipher amalgamation; delete it and run Sources/CSQLCipher/generate.sh."
#endif
_Static_assert(__builtin_strcmp(CBLITE_PIN_XSTR(CIPHER_VERSION_NUMBER), CBLITE_PINNED_SQLCIPHER_VERSION) == 0,
               "cblite: Sources/CSQLCipher/sqlite3.c is not the SQLCipher version pinned in "
               "Sources/CSQLCipher/cblite/pinned_sqlite.h. Delete Sources/CSQLCipher/sqlite3.c and "
               "include/sqlite3.h and run Sources/CSQLCipher/generate.sh.");
#endif
#endif

#endif
