/* The SQLCipher amalgamation and cblite's code that works on SQLite's own structures, in
 * one translation unit: result_row.c reads a statement's current result row where the
 * statement holds it (struct Vdbe and Mem are private to the amalgamation), and
 * index_rows.c's copy of scanned rows uses it inline. Built from this file only;
 * sqlite3.c, result_row.c and index_rows.c are not compiled on their own. */
#include "sqlite3.c"
#include "result_row.c"
#include "index_rows.c"
