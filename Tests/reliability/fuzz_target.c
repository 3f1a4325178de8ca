/*
 * fuzz_target.c — libFuzzer target over the C ABI of libcblite.
 *
 * Input: one selector byte, one flags byte, then up to three NUL-separated fields
 * (document ID / name, JSON body / options, revision ID / history JSON). Each input runs
 * one operation against a database kept open for the whole run: saves, saves of existing
 * revisions with histories, reads (all flags), deletes and purges, read-modify-write,
 * local documents, the changes feed with options, opening databases with options JSON,
 * collections with fuzzed names. Invariants checked (abort() = a finding):
 *   - every status is one of the documented codes, and `err` agrees with it;
 *   - out-parameters are NULL after a failure;
 *   - a document saved with CBL_OK can be read back, and its current revision is the one
 *     returned (unless a conflict branch made another leaf win);
 *   - 500 (internal error) never answers bad input on document calls;
 *   - every 512 inputs, cbl_db_integrity_check passes.
 * Seed corpus: Tests/reliability/corpus/ (made by make_corpus.py). Regression inputs that
 * once crashed go to Tests/reliability/corpus/regressions/ and run in `make fuzz`.
 */
#define _POSIX_C_SOURCE 200809L
#include "cblite.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cbl_db* g_db;
static cbl_collection* g_coll;
static char g_dir[512];
static unsigned long g_iter;

static void die(const char* what, cbl_status st, const cbl_error* e) {
    fprintf(stderr, "FUZZ INVARIANT VIOLATED: %s (status %d: %s)\n", what, (int)st, e ? e->message : "");
    abort();
}

static void check_status(const char* fn, cbl_status st, const cbl_error* e) {
    switch (st) {
    case CBL_OK: case CBL_BAD_REQUEST: case CBL_UNAUTHORIZED: case CBL_FORBIDDEN: case CBL_NOT_FOUND:
    case CBL_NOT_ACCEPTABLE: case CBL_CONFLICT: case CBL_PRECONDITION_FAILED: case CBL_INTERNAL_ERROR:
    case CBL_NOT_IMPLEMENTED: case CBL_BUSY: case CBL_INSUFFICIENT_STORAGE: break;
    default: die(fn, st, e);
    }
    if (e->code != st) die("err.code differs from the status", st, e);
    if (st != CBL_OK && e->message[0] == 0) die("no message on failure", st, e);
}
/* Document-level calls on an open database: bad input is 4xx, never 500. */
#define DOC_CALL(fn, st, e) do { check_status(fn, st, e); if ((st) == CBL_INTERNAL_ERROR) die(fn " -> 500 on input", st, e); } while (0)

static void init(void) {
    if (g_db) return;
    const char* base = getenv("FUZZ_TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/cblite-fuzz-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(g_dir)) { perror("mkdtemp"); exit(2); }
    cbl_error e;
    for (int d = 0; d < CBL_LOG_DOMAIN_COUNT; d++)
        if (cbl_log_set_level((cbl_log_domain)d, CBL_LOG_NONE, &e) != CBL_OK) { fprintf(stderr, "fuzz init: %s\n", e.message); exit(2); }
    if (cbl_db_open("fuzz", g_dir, NULL, &g_db, &e) != CBL_OK || cbl_db_default_collection(g_db, &g_coll, &e) != CBL_OK) {
        fprintf(stderr, "fuzz init: %s\n", e.message);
        exit(2);
    }
    if (cbl_doc_put(g_coll, "seed", "{\"a\":1}", NULL, 0, NULL, NULL, &e) != CBL_OK) {
        fprintf(stderr, "fuzz init: %s\n", e.message);
        exit(2);
    }
}

static const char* cb_body;
static int update_cb(void* ctx, const char* cur, char** out) {
    (void)ctx; (void)cur;
    *out = cbl_strdup(cb_body);
    return cb_body[0] != 'X';
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    init();
    if (size < 2) return 0;
    uint8_t sel = data[0], flags = data[1];
    /* Fields: copy so each is NUL-terminated. */
    char* buf = malloc(size - 2 + 4);
    memcpy(buf, data + 2, size - 2);
    memset(buf + size - 2, 0, 4);
    const char* f[3] = { "", "", "" };
    size_t pos = 0;
    for (int i = 0; i < 3; i++) {
        f[i] = buf + pos;
        size_t len = strlen(buf + pos);
        pos += len + 1;
        if (pos > size - 2) { for (int j = i + 1; j < 3; j++) f[j] = buf + size - 2 + 1; break; }
    }
    const char* id = f[0][0] ? f[0] : NULL;
    const char* rev = f[2][0] ? f[2] : NULL;
    cbl_error e;
    char *a = NULL, *b = NULL;
    cbl_status st;

    switch (sel % 10) {
    case 0: {                                            /* save */
        st = cbl_doc_put(g_coll, (flags & 0x80) ? NULL : id, f[1], rev, flags & 1, &a, &b, &e);
        DOC_CALL("cbl_doc_put", st, &e);
        if (st != CBL_OK && (a || b)) die("put: out-parameters set on failure", st, &e);
        if (st == CBL_OK) {
            char* got = NULL;
            cbl_status g = cbl_doc_get(g_coll, a, CBL_GET_DELETED, &got, &e);
            if (g != CBL_OK) die("saved document cannot be read back", g, &e);
            if (!(flags & 1) && !strstr(got, b)) die("current revision is not the one just saved", g, &e);
            cbl_free(got);
        }
        break;
    }
    case 1:                                              /* a revision from elsewhere, with history */
        st = cbl_doc_put_existing(g_coll, id ? id : "pe", f[1], f[2], &e);
        DOC_CALL("cbl_doc_put_existing", st, &e);
        if (st == CBL_OK) {
            char* t = NULL;
            if (cbl_doc_revision_tree(g_coll, id ? id : "pe", &t, &e) != CBL_OK) die("tree after put_existing", e.code, &e);
            cbl_free(t);
        }
        break;
    case 2:                                              /* reads with every flag */
        st = cbl_doc_get(g_coll, id ? id : "seed", flags & 0x0F, &a, &e);
        DOC_CALL("cbl_doc_get", st, &e);
        if (st != CBL_OK && a) die("get: out set on failure", st, &e);
        cbl_free(a); a = NULL;
        if (rev) { st = cbl_doc_get_revision(g_coll, id ? id : "seed", rev, flags & 0x0F, &a, &e); DOC_CALL("get_revision", st, &e); }
        cbl_free(a); a = NULL;
        st = cbl_doc_history(g_coll, id ? id : "seed", rev, &a, &e); DOC_CALL("history", st, &e);
        cbl_free(a); a = NULL;
        st = cbl_doc_revision_tree(g_coll, id ? id : "seed", &a, &e); DOC_CALL("revision_tree", st, &e);
        cbl_free(a); a = NULL;
        st = cbl_doc_conflicts(g_coll, id ? id : "seed", &a, &e); DOC_CALL("conflicts", st, &e);
        break;
    case 3:                                              /* delete / purge */
        if (flags & 1) { st = cbl_doc_purge(g_coll, id ? id : "nothing", &e); DOC_CALL("purge", st, &e); }
        else { st = cbl_doc_delete(g_coll, id ? id : "nothing", rev, &a, &e); DOC_CALL("delete", st, &e); }
        break;
    case 4:                                              /* read-modify-write with a fuzzed new body */
        cb_body = f[1];
        st = cbl_doc_update(g_coll, id ? id : "upd", update_cb, NULL, &a, &e);
        DOC_CALL("cbl_doc_update", st, &e);
        break;
    case 5:                                              /* local documents */
        st = cbl_local_put(g_coll, id ? id : "l", f[1], rev, &a, &e); DOC_CALL("local_put", st, &e);
        cbl_free(a); a = NULL;
        st = cbl_local_get(g_coll, id ? id : "l", &a, &e); DOC_CALL("local_get", st, &e);
        if (flags & 1) { st = cbl_local_delete(g_coll, id ? id : "l", rev, &e); DOC_CALL("local_delete", st, &e); }
        break;
    case 6:                                              /* changes feed with options */
        st = cbl_collection_changes(g_coll, flags, f[1][0] ? f[1] : NULL, &a, &e);
        DOC_CALL("cbl_collection_changes", st, &e);
        break;
    case 7: {                                            /* open with fuzzed name / options */
        cbl_db* d = NULL;
        const char* opts = f[1][0] ? f[1] : NULL;
        if (opts && strstr(opts, "encryption")) opts = "{\"encryption_key\":{\"raw_hex\":\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}}";  /* raw: no PBKDF2 */
        st = cbl_db_open(id ? id : "other", g_dir, opts, &d, &e);
        check_status("cbl_db_open", st, &e);
        if (st == CBL_OK) {
            cbl_status d1 = cbl_db_delete(d, &e);
            if (d1 != CBL_OK && d1 != CBL_BUSY) die("delete of a db just opened", d1, &e);
            if (d1 == CBL_BUSY && cbl_db_close(d, &e) != CBL_OK) die("close after a busy delete", d1, &e);
        } else if (d) die("open: out set on failure", st, &e);
        break;
    }
    case 8: {                                            /* collections with fuzzed names */
        cbl_collection* c = NULL;
        st = cbl_db_create_collection(g_db, id, f[1][0] ? f[1] : "c", &c, &e);
        check_status("create_collection", st, &e);
        if (st == CBL_OK) {
            st = cbl_doc_put(c, rev ? rev : "x", "{}", NULL, 0, NULL, NULL, &e); check_status("put in coll", st, &e);
            st = cbl_db_collection_names(g_db, id, &a, &e); check_status("collection_names", st, &e);
            cbl_collection_release(c);
            if (flags & 1) { st = cbl_db_delete_collection(g_db, id, f[1][0] ? f[1] : "c", &e); check_status("delete_collection", st, &e); }
        }
        break;
    }
    case 9: {                                            /* expiration + validator + listeners */
        st = cbl_doc_set_expiration(g_coll, id ? id : "seed", (int64_t)(flags & 1 ? 0 : 4102444800LL), &e);
        DOC_CALL("set_expiration", st, &e);
        cbl_listener_token* t = NULL;
        st = cbl_collection_add_document_listener(g_coll, id ? id : "seed", NULL, NULL, &t, &e);
        if (st != CBL_BAD_REQUEST || t) die("listener with NULL callback accepted", st, &e);
        break;
    }
    }
    cbl_free(a);
    cbl_free(b);
    free(buf);
    if (++g_iter % 512 == 0) {
        char* rep = NULL;
        st = cbl_db_integrity_check(g_db, &rep, &e);
        if (st != CBL_OK) { fprintf(stderr, "%s\n", rep ? rep : ""); die("integrity check", st, &e); }
        cbl_free(rep);
    }
    return 0;
}
