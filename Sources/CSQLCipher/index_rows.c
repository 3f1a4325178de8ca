/* See include/cblite_index_rows.h. An eponymous-only virtual table with the columns of a
 * view index row and a hidden column taking the rows pointer. */
#include "cblite_index_rows.h"
#include <string.h>

enum { COL_KEY, COL_DOCID, COL_N, COL_ROW, COL_ROWS };

typedef struct {
    sqlite3_vtab_cursor base;
    const cblite_index_rows* rows;
    int64_t i;
} rows_cursor;

static int rows_connect(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
                        char** err) {
    (void)aux; (void)argc; (void)argv; (void)err;
    int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(key BLOB, docid TEXT, n INTEGER, row BLOB, rows HIDDEN)");
    if (rc != SQLITE_OK) return rc;
    sqlite3_vtab* t = sqlite3_malloc(sizeof *t);
    if (!t) return SQLITE_NOMEM;
    memset(t, 0, sizeof *t);
    sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
    *out = t;
    return SQLITE_OK;
}

static int rows_disconnect(sqlite3_vtab* t) { sqlite3_free(t); return SQLITE_OK; }

static int rows_open(sqlite3_vtab* t, sqlite3_vtab_cursor** out) {
    (void)t;
    rows_cursor* c = sqlite3_malloc(sizeof *c);
    if (!c) return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static int rows_close(sqlite3_vtab_cursor* c) { sqlite3_free(c); return SQLITE_OK; }

/* Usable only with "rows = ?": without it the plan is refused. */
static int rows_best_index(sqlite3_vtab* t, sqlite3_index_info* info) {
    (void)t;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint* k = &info->aConstraint[i];
        if (k->iColumn == COL_ROWS && k->op == SQLITE_INDEX_CONSTRAINT_EQ && k->usable) {
            info->aConstraintUsage[i].argvIndex = 1;
            info->aConstraintUsage[i].omit = 1;
            info->estimatedCost = 1;
            info->idxNum = 1;
            return SQLITE_OK;
        }
    }
    return SQLITE_CONSTRAINT;
}

static int rows_filter(sqlite3_vtab_cursor* cur, int idxNum, const char* idxStr, int argc, sqlite3_value** argv) {
    (void)idxStr;
    rows_cursor* c = (rows_cursor*)cur;
    c->rows = (idxNum == 1 && argc == 1) ? sqlite3_value_pointer(argv[0], CBLITE_INDEX_ROWS_TYPE) : NULL;
    c->i = 0;
    return SQLITE_OK;
}

static int rows_next(sqlite3_vtab_cursor* cur) { ((rows_cursor*)cur)->i++; return SQLITE_OK; }

static int rows_eof(sqlite3_vtab_cursor* cur) {
    rows_cursor* c = (rows_cursor*)cur;
    return c->rows == NULL || c->i >= c->rows->count;
}

static int rows_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col) {
    rows_cursor* c = (rows_cursor*)cur;
    const cblite_index_row* r = &c->rows->rows[c->i];
    switch (col) {
    case COL_KEY: sqlite3_result_blob(ctx, r->key_len ? r->key : "", r->key_len, SQLITE_STATIC); break;
    case COL_DOCID: sqlite3_result_text(ctx, r->docid_len ? r->docid : "", r->docid_len, SQLITE_STATIC); break;
    case COL_N: sqlite3_result_int64(ctx, r->n); break;
    case COL_ROW: sqlite3_result_blob(ctx, r->row_len ? r->row : "", r->row_len, SQLITE_STATIC); break;
    default: sqlite3_result_null(ctx); break;
    }
    return SQLITE_OK;
}

static int rows_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* out) {
    *out = ((rows_cursor*)cur)->i;
    return SQLITE_OK;
}

static sqlite3_module rows_module = {
    .iVersion = 0,
    .xCreate = NULL,              /* eponymous-only */
    .xConnect = rows_connect,
    .xBestIndex = rows_best_index,
    .xDisconnect = rows_disconnect,
    .xDestroy = rows_disconnect,
    .xOpen = rows_open,
    .xClose = rows_close,
    .xFilter = rows_filter,
    .xNext = rows_next,
    .xEof = rows_eof,
    .xColumn = rows_column,
    .xRowid = rows_rowid,
};

int cblite_register_index_rows(sqlite3* db) {
    return sqlite3_create_module(db, "cblite_index_rows", &rows_module, NULL);
}

int cblite_bind_index_rows(sqlite3_stmt* stmt, int index, const cblite_index_rows* rows) {
    return sqlite3_bind_pointer(stmt, index, (void*)rows, CBLITE_INDEX_ROWS_TYPE, NULL);
}

int cblite_copy_rows(sqlite3_stmt* stmt, int ncols, int max_rows, int pending, unsigned char* buf, int64_t capacity,
                     int64_t* used, cblite_span* spans, int* pending_out, int* rc) {
    enum { MAX_COLUMNS = 8 };
    const void* ptr[MAX_COLUMNS];
    int len[MAX_COLUMNS];
    int copied = 0;
    *pending_out = 0;
    *rc = SQLITE_ROW;
    if (ncols < 0 || ncols > MAX_COLUMNS) { *rc = SQLITE_MISUSE; return 0; }
    while (copied < max_rows) {
        if (!pending) {
            *rc = sqlite3_step(stmt);
            if (*rc != SQLITE_ROW) return copied;
        }
        pending = 0;
        int64_t need = 0;
        for (int c = 0; c < ncols; c++) {
            ptr[c] = sqlite3_column_blob(stmt, c);       /* NULL for NULL and for empty values */
            len[c] = ptr[c] ? sqlite3_column_bytes(stmt, c) : (sqlite3_column_type(stmt, c) == SQLITE_NULL ? -1 : 0);
            need += (len[c] > 0 ? len[c] : 0) + 1;
        }
        if (*used + need > capacity || *used + need > INT32_MAX) { *pending_out = 1; return copied; }
        cblite_span* out = spans + (int64_t)copied * ncols;
        for (int c = 0; c < ncols; c++) {
            if (len[c] < 0) { out[c].offset = 0; out[c].length = -1; continue; }
            if (len[c] > 0) memcpy(buf + *used, ptr[c], (size_t)len[c]);
            buf[*used + len[c]] = 0;
            out[c].offset = (int32_t)*used;
            out[c].length = len[c];
            *used += len[c] + 1;
        }
        copied++;
    }
    return copied;
}
