/* See ../include/cblite_index_rows.h. An eponymous-only virtual table with the columns of a
 * view index row and a hidden column taking the rows pointer, and the copy of scanned
 * rows. Compiled inside the amalgamation (../sqlite_unit.c), after result_row.c. */
#include "pinned_sqlite.h"
#include "cblite_index_rows.h"
#include "cblite_document_json.h"
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

static void row_sequence(sqlite3_context* ctx, int argc, sqlite3_value** argv);

int cblite_register_index_rows(sqlite3* db) {
    int rc = sqlite3_create_module(db, "cblite_index_rows", &rows_module, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function_v2(db, "cblite_row_sequence", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                                        NULL, row_sequence, NULL, NULL, NULL);
    return rc;
}

int cblite_bind_index_rows(sqlite3_stmt* stmt, int index, const cblite_index_rows* rows) {
    return sqlite3_bind_pointer(stmt, index, (void*)rows, CBLITE_INDEX_ROWS_TYPE, NULL);
}

/* One unsigned LEB128 varint at *pos (advanced); 0 when it runs past the end. Most
 * fields of a row are one byte: that case first. */
static inline int get_varint(const unsigned char* p, int64_t end, int64_t* pos, uint64_t* out) {
    if (*pos < end && p[*pos] < 0x80) { *out = p[(*pos)++]; return 1; }
    uint64_t v = 0;
    for (int shift = 0; *pos < end && shift < 64; shift += 7) {
        unsigned char c = p[(*pos)++];
        v |= (uint64_t)(c & 0x7F) << shift;
        if (c < 0x80) { *out = v; return 1; }
    }
    return 0;
}

/* cblite_row_sequence(row): the sequence a row blob records (its first varint), NULL
 * for what is not one — a view's rows joined to their documents in the scan's statement
 * (a rowid lookup each) instead of a second statement reading the documents of a page by
 * a list of sequences (bench_mango's range find: 79.4 M instructions then, 73.9 M). */
static void row_sequence(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
    (void)argc;
    const unsigned char* p = sqlite3_value_blob(argv[0]);
    int64_t pos = 0;
    uint64_t seq;
    if (p != NULL && get_varint(p, sqlite3_value_bytes(argv[0]), &pos, &seq) && seq <= INT64_MAX)
        sqlite3_result_int64(ctx, (int64_t)seq);
    else
        sqlite3_result_null(ctx);
}

/* The decoder itself, for the page copy below and cblite_decode_index_row. */
static int decode_index_row(const unsigned char* p, int64_t end, cblite_row_fields* out) {
    enum { STORED_KEY_JSON = 1, STORED_VALUE = 2 };
    int64_t pos = 0;
    uint64_t seq, n_flags, length;
    if (p == NULL || !get_varint(p, end, &pos, &seq) || !get_varint(p, end, &pos, &n_flags)) return 0;
    if ((n_flags >> 2) > UINT32_MAX) return 0;
    out->sequence = (int64_t)seq;
    out->n = (int64_t)(n_flags >> 2);
    out->key_json.offset = 0; out->key_json.length = -1;
    out->value.offset = 0; out->value.length = -1;
    if (n_flags & STORED_KEY_JSON) {
        if (!get_varint(p, end, &pos, &length) || length >= (uint64_t)(end - pos) || p[pos + (int64_t)length] != 0) return 0;
        out->key_json.offset = (int32_t)pos;
        out->key_json.length = (int32_t)length;
        pos += (int64_t)length + 1;
    }
    if (n_flags & STORED_VALUE) {
        if (pos >= end || p[end - 1] != 0) return 0;
        out->value.offset = (int32_t)pos;
        out->value.length = (int32_t)(end - 1 - pos);
    } else if (pos != end) {
        return 0;
    }
    return 1;
}

int cblite_decode_index_row(const unsigned char* p, int64_t end, cblite_row_fields* out) {
    return decode_index_row(p, end, out);
}

/* The common row, decoded inline by the page copy: no key JSON, no value, and an emit
 * number under 32, so the blob is the sequence's varint and one byte (n << 2). Returns 0
 * for every other blob, which the full decoder then reads. (The sequence's varint is
 * read the same way either way, so it ends just before the last byte only when nothing
 * follows that byte.) */
static inline int decode_plain_row(const unsigned char* p, int len, cblite_row_fields* out) {
    if (len < 2 || len > 11 || (p[len - 1] & 0x83) != 0) return 0;
    uint64_t seq = 0;
    int i = 0;
    for (;; i++) {
        seq |= (uint64_t)(p[i] & 0x7F) << (7 * i);
        if (p[i] < 0x80) break;
        if (i == len - 2) return 0;
    }
    if (i != len - 2) return 0;
    out->sequence = (int64_t)seq;
    out->n = p[len - 1] >> 2;
    out->key_json.offset = 0; out->key_json.length = -1;
    out->value.offset = 0; out->value.length = -1;
    return 1;
}

/* memcpy for the short texts of index rows (document IDs, keys: mostly under 16 bytes),
 * where the libc call costs more than the copy. */
static inline void copy_bytes(unsigned char* to, const unsigned char* from, int n) {
    if (n >= 8 && n <= 16) {
        uint64_t head, tail;
        memcpy(&head, from, 8);
        memcpy(&tail, from + n - 8, 8);
        memcpy(to, &head, 8);
        memcpy(to + n - 8, &tail, 8);
    } else if (n < 8) {
        for (int i = 0; i < n; i++) to[i] = from[i];
    } else {
        memcpy(to, from, (size_t)n);
    }
}

/* Whether n bytes are equal: document IDs are mostly under 16 bytes, where the libc call
 * costs more than the comparison (two overlapping words). */
static inline int same_bytes(const unsigned char* a, const unsigned char* b, int n) {
    if (n >= 8 && n <= 16) {
        uint64_t a0, a1, b0, b1;
        memcpy(&a0, a, 8); memcpy(&b0, b, 8);
        memcpy(&a1, a + n - 8, 8); memcpy(&b1, b + n - 8, 8);
        return a0 == b0 && a1 == b1;
    }
    return n <= 0 || memcmp(a, b, (size_t)n) == 0;
}

/* Copies `len` bytes and a 0 byte to buf[*used], setting *out (len -1: none). */
static inline void copy_text(unsigned char* buf, int64_t* used, const unsigned char* p, int len, cblite_span* out) {
    if (len < 0) { out->offset = 0; out->length = -1; return; }
    copy_bytes(buf + *used, p, len);
    buf[*used + len] = 0;
    out->offset = (int32_t)*used;
    out->length = len;
    *used += len + 1;
}

/* One column's bytes: NULL (length -1) for NULL and empty values, read where SQLite
 * holds the row (result_row.c): through the public calls (sqlite3_column_value, _blob,
 * _bytes) a column cost ~80 instructions, and a view row reads two, about a sixth of a
 * scanned row's whole cost (callgrind, N=100,000). */
static inline const unsigned char* column_bytes(sqlite3_stmt* stmt, int c, int* len) {
    const unsigned char* p = column_bytes_inline(stmt, c, len);
    if (p == NULL) *len = -1;
    return p;
}

int cblite_copy_scan_rows(sqlite3_stmt* stmt, int with_key, int with_doc, int64_t deleted_flags, int max_rows, int pending,
                          int64_t stop_at, unsigned char* buf, int64_t capacity, int64_t* used, cblite_scan_row* rows,
                          int* pending_out, int* rc) {
    int copied = 0;
    *pending_out = 0;
    *rc = SQLITE_ROW;
    while (copied < max_rows) {
        if (copied > 0 && *used >= stop_at) return copied;       /* the page's bytes are spent */
        if (!pending) {
            *rc = sqlite3_step(stmt);
            if (*rc != SQLITE_ROW) return copied;
        }
        pending = 0;
        int docid_len, blob_len, key_len = -1;
        const unsigned char* docid = column_bytes(stmt, 0, &docid_len);
        const unsigned char* blob = column_bytes(stmt, 1, &blob_len);
        const unsigned char* key = with_key ? column_bytes(stmt, 2, &key_len) : NULL;
        /* The joined document: its ID (NULL: no row at the sequence), flags, revid, body.
         * It is the row's when the IDs are equal and it is not deleted. */
        int rev_len = -1, body_len = -1, doc_found = 0;
        const unsigned char *rev = NULL, *body = NULL;
        if (with_doc) {
            int c = with_key ? 3 : 2, doc_docid_len;
            const Mem* m = result_mem(stmt, c);
            int joined = m != NULL ? (m->flags & MEM_Null) == 0 : sqlite3_column_type(stmt, c) != SQLITE_NULL;
            const unsigned char* doc_docid = column_bytes(stmt, c, &doc_docid_len);
            doc_found = joined && doc_docid_len == docid_len && same_bytes(doc_docid, docid, docid_len)
                     && (cblite_column_int64(stmt, c + 1) & deleted_flags) == 0;
            if (doc_found) {
                rev = column_bytes(stmt, c + 2, &rev_len);
                body = column_bytes(stmt, c + 3, &body_len);
            }
        }
        /* The row blob is decoded where SQLite holds it; only its texts (key JSON, value,
         * each already followed by its 0 byte) are copied, from the first of them to the
         * blob's end. Most rows have none. */
        cblite_scan_row* r = rows + copied;
        r->damaged = blob == NULL || !(decode_plain_row(blob, blob_len, &r->fields) ||
                                       decode_index_row(blob, blob_len, &r->fields));
        int texts_from = blob_len;
        if (!r->damaged) {
            if (r->fields.value.length >= 0) texts_from = r->fields.value.offset;
            if (r->fields.key_json.length >= 0) texts_from = r->fields.key_json.offset;
        }
        int texts_len = blob == NULL ? 0 : blob_len - texts_from;
        /* The document rendered at once when its ID and revision need no escaping. */
        int64_t rendered_len = doc_found ? cblite_plain_document_length(docid, docid_len < 0 ? 0 : docid_len, rev,
                                                                        rev_len < 0 ? 0 : rev_len, 0, body_len) : -1;
        int64_t need = (docid_len >= 0 ? docid_len + 1 : 0) + (key_len >= 0 ? key_len + 1 : 0) + texts_len
                     + (rendered_len >= 0 ? rendered_len + 1
                                          : (rev_len >= 0 ? rev_len + 1 : 0) + (body_len >= 0 ? body_len + 1 : 0));
        if (*used + need > capacity || *used + need > INT32_MAX) { *pending_out = 1; return copied; }
        copy_text(buf, used, docid, docid_len, &r->docid);
        copy_text(buf, used, key, key_len, &r->key);
        r->doc_found = doc_found;
        r->doc_rendered = rendered_len >= 0;
        if (rendered_len >= 0) {
            unsigned char* start = buf + *used;
            unsigned char* end = cblite_write_plain_document(start, docid, docid_len < 0 ? 0 : docid_len, rev,
                                                             rev_len < 0 ? 0 : rev_len, 0, body, body_len);
            *end = 0;
            r->doc_rev.offset = 0; r->doc_rev.length = -1;
            r->doc_body.offset = (int32_t)*used; r->doc_body.length = (int32_t)rendered_len;
            *used += rendered_len + 1;
        } else {
            copy_text(buf, used, rev, rev_len, &r->doc_rev);
            copy_text(buf, used, body, body_len, &r->doc_body);
        }
        if (texts_len > 0) {
            int32_t shift = (int32_t)*used - texts_from;
            memcpy(buf + *used, blob + texts_from, (size_t)texts_len);
            *used += texts_len;
            if (r->fields.key_json.length >= 0) r->fields.key_json.offset += shift;
            if (r->fields.value.length >= 0) r->fields.value.offset += shift;
        }
        copied++;
    }
    return copied;
}
