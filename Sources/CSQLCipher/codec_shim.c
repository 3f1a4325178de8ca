/* See include/cblite_sqlcipher.h. Compiled with the amalgamation's defines. */
#include "cblite_sqlcipher.h"

int cblite_sqlcipher_key(sqlite3* db, const void* key, int length) {
    return sqlite3_key(db, key, length);
}
