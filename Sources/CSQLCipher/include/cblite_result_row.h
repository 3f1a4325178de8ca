/* A statement's current result row, read where SQLite holds it: the values of the row
 * that the last sqlite3_step returned SQLITE_ROW for, without the public column calls'
 * per-call checks (statement and bounds checks, a mutex test, an error-state update:
 * ~40-80 instructions a column, measured with callgrind). cblite/result_row.c, compiled
 * inside the amalgamation (sqlite_unit.c), whose private Vdbe and Mem it reads. A value of
 * another type, or a call with no current row, takes the public path, with its result.
 * For a statement used by one thread at a time (cblite's connections are NOMUTEX). */
#ifndef CBLITE_RESULT_ROW_H
#define CBLITE_RESULT_ROW_H
#include <stdint.h>
#include "sqlite3.h"

/* Column `col`'s bytes, as sqlite3_column_blob gives them (a number as its text);
 * *length is the byte count, or -1 for SQL NULL (the pointer is then NULL; it may also be
 * NULL for an empty value). Valid until the statement steps again or is reset. */
const unsigned char* cblite_column_bytes(sqlite3_stmt* stmt, int col, int* length);

/* Column `col` as sqlite3_column_int64 gives it. */
int64_t cblite_column_int64(sqlite3_stmt* stmt, int col);

#endif
