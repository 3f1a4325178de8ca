/* The SQLCipher amalgamation and cblite's code that works on SQLite's own structures, in
 * one translation unit: index_rows.c reads a statement's current result row where the
 * statement holds it (struct Vdbe and Mem are private to the amalgamation). Built from
 * this file only; sqlite3.c and index_rows.c are not compiled on their own. */
#include "sqlite3.c"
#include "index_rows.c"
