/* See ../include/cblite_result_row.h. Compiled inside the amalgamation (../sqlite_unit.c). */
#include "pinned_sqlite.h"
#include "cblite_result_row.h"

/* The current row's value of column `col`, or NULL when there is no current row. */
static inline const Mem* result_mem(sqlite3_stmt* stmt, int col) {
    const Vdbe* vm = (const Vdbe*)stmt;
    if (vm == NULL || vm->pResultRow == NULL || col < 0 || col >= vm->nResColumn) return NULL;
    return &vm->pResultRow[col];
}

/* The bytes of a text or blob value held as such (not zero-filled); NULL otherwise. */
static inline int result_bytes(const Mem* m, const unsigned char** out, int* length) {
    if (m == NULL) return 0;
    if ((m->flags & MEM_Null) != 0) { *out = NULL; *length = -1; return 1; }
    if ((m->flags & (MEM_Str | MEM_Blob)) == 0 || (m->flags & MEM_Zero) != 0) return 0;
    *out = m->n > 0 ? (const unsigned char*)m->z : NULL;
    *length = m->n;
    return 1;
}

static inline const unsigned char* column_bytes_inline(sqlite3_stmt* stmt, int col, int* length) {
    const unsigned char* p;
    if (result_bytes(result_mem(stmt, col), &p, length)) return p;
    if (sqlite3_column_type(stmt, col) == SQLITE_NULL) { *length = -1; return NULL; }
    p = sqlite3_column_blob(stmt, col);
    *length = sqlite3_column_bytes(stmt, col);
    return p;
}

const unsigned char* cblite_column_bytes(sqlite3_stmt* stmt, int col, int* length) {
    return column_bytes_inline(stmt, col, length);
}

int64_t cblite_column_int64(sqlite3_stmt* stmt, int col) {
    const Mem* m = result_mem(stmt, col);
    if (m != NULL && (m->flags & (MEM_Int | MEM_IntReal)) != 0) return m->u.i;
    return sqlite3_column_int64(stmt, col);
}
