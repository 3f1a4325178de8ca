/* cblite_index_rows: a table-valued function over rows held in the caller's memory, so
 * that a view index takes a whole batch of rows in one INSERT ... SELECT. One statement
 * keeps its b-tree cursor between rows, and rows given in key order then append at the
 * cursor instead of each searching the tree from its root (the pattern of SQLite's own
 * carray extension, which the amalgamation does not include).
 *
 *   INSERT INTO t(key, docid, n, row) SELECT key, docid, n, row FROM cblite_index_rows(?1)
 *
 * ?1 is bound with sqlite3_bind_pointer(stmt, 1, &rows, CBLITE_INDEX_ROWS_TYPE, NULL);
 * the rows and their bytes must stay valid until the statement is reset. */
#ifndef CBLITE_INDEX_ROWS_H
#define CBLITE_INDEX_ROWS_H
#include <stdint.h>
#include "sqlite3.h"

#define CBLITE_INDEX_ROWS_TYPE "cblite_index_rows"

typedef struct cblite_index_row {
    const void* key;        /* blob */
    const char* docid;      /* UTF-8 text */
    const void* row;        /* blob */
    int64_t n;
    int32_t key_len, docid_len, row_len;
} cblite_index_row;

typedef struct cblite_index_rows {
    const cblite_index_row* rows;
    int64_t count;
} cblite_index_rows;

/* Registers the function on a connection, and the scalar function
 * cblite_row_sequence(row), the sequence a view index row blob records (NULL for a blob
 * that is not one), by which a scan joins a view's rows to their documents (SQLITE_OK or
 * an SQLite error code). */
int cblite_register_index_rows(sqlite3* db);

/* Binds `rows` to parameter `index` of `stmt` for cblite_index_rows. */
int cblite_bind_index_rows(sqlite3_stmt* stmt, int index, const cblite_index_rows* rows);

/* A span of bytes in a caller's buffer; length -1 for none. */
typedef struct cblite_span {
    int32_t offset, length;
} cblite_span;

/* The fields of a view index row blob (IndexRow.swift describes the layout), as offsets
 * from the blob's start: the key JSON (length -1: made from the key) and the value
 * (length -1: none). Returns 0 when the bytes are not an index row. */
typedef struct cblite_row_fields {
    int64_t sequence, n;
    cblite_span key_json, value;
} cblite_row_fields;

int cblite_decode_index_row(const unsigned char* blob, int64_t length, cblite_row_fields* out);

/* A row of a view index scan, copied into the caller's buffer: its document ID and
 * CollatableKey (length -1 when the scan did not read it), and its row blob's fields,
 * with offsets into the buffer. `damaged`: the row blob is not an index row. */
typedef struct cblite_scan_row {
    cblite_row_fields fields;
    cblite_span docid, key;
    int32_t damaged;
    /* A scan joined to the documents (with_doc): whether it found the row's document, and
     * that document's revision ID and body (length -1: none) — or, when doc_rendered, the
     * document rendered with its ID and revision (cblite_document_json.h) in doc_body. */
    int32_t doc_found, doc_rendered;
    cblite_span doc_rev, doc_body;
} cblite_scan_row;

/* Copies the rows of a scan "SELECT docid, row[, key][, doc docid, flags, revid, body] ..."
 * (the last four with with_doc: a LEFT JOIN to the documents by sequence; the document is
 * the row's when its ID is the row's and its flags have none of deleted_flags, and is
 * copied rendered when its ID and revision need no escaping) into
 * buf[*used...] (every
 * text followed by a 0 byte, so that rows lent from the buffer are C strings) and decodes
 * each into rows[i]: one call per page instead of several per row from Swift.
 *
 * Steps the statement first unless `pending` is set (the statement already sits on a row
 * a previous call could not copy). Copies up to max_rows rows and returns how many;
 * *rc is SQLITE_DONE at the end, SQLITE_ROW when it stopped with rows left (max_rows
 * reached; *used at least stop_at after a row was copied, before stepping again; or
 * *pending_out set: the current row did not fit in `capacity`, so grow the buffer and
 * call again with pending), or an SQLite error code. */
int cblite_copy_scan_rows(sqlite3_stmt* stmt, int with_key, int with_doc, int64_t deleted_flags, int max_rows, int pending,
                          int64_t stop_at, unsigned char* buf, int64_t capacity, int64_t* used, cblite_scan_row* rows,
                          int* pending_out, int* rc);

#endif
