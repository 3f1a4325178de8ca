/* The SQLCipher amalgamation and cblite's code that works on SQLite's own structures, in
 * one translation unit: cblite/result_row.c reads a statement's current result row where
 * the statement holds it (struct Vdbe and Mem are private to the amalgamation),
 * cblite/index_rows.c's copy of scanned rows uses it inline, and cblite/page_crypto.c
 * changes SQLCipher's crypto provider (its functions are private to the amalgamation).
 * Built from this file only; sqlite3.c and those three are not compiled on their own.
 * Each checks that sqlite3.c is the pinned version (cblite/pinned_sqlite.h). */
#include "sqlite3.c"
#include "cblite/result_row.c"
#include "cblite/index_rows.c"
#include "cblite/page_crypto.c"
