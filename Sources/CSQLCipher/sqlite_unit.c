/* The SQLCipher amalgamation and cblite's code that works on SQLite's own structures, in
 * one translation unit: result_row.c reads a statement's current result row where the
 * statement holds it (struct Vdbe and Mem are private to the amalgamation),
 * index_rows.c's copy of scanned rows uses it inline, and page_crypto.c changes
 * SQLCipher's crypto provider (its functions are private to the amalgamation). Built from this file only;
 * sqlite3.c, result_row.c, index_rows.c and page_crypto.c are not compiled on their own. */
#include "sqlite3.c"
#include "result_row.c"
#include "index_rows.c"
#include "page_crypto.c"
