/*
 * crash_test.c — crash safety of libcblite under SIGKILL.
 *
 * The driver runs `kills` rounds. Each round it spawns itself as a child (fork + exec, so the
 * child starts from a clean process), which opens the database and writes through the C ABI
 * — single saves, cbl_doc_update, deletes, multi-document transactions (some deliberately
 * aborted), now and then a compaction — and reports every operation to a pipe: its intent
 * before the call, and the acknowledged revision ID after the library returned CBL_OK.
 * The driver SIGKILLs the child at a random (seeded) moment, reopens the database and checks:
 *   - every acknowledged write is there with its exact revision ID (and tombstones as such);
 *   - the one operation in flight at the kill is either fully there or not at all;
 *   - an unacknowledged or aborted transaction is all there or not at all / not at all;
 *   - each document's history is a valid chain (consecutive generations, current rev first,
 *     the previously verified revision among its ancestors);
 *   - a re-encryption (cbl_db_change_encryption_key, now and then) in flight at the kill
 *     leaves the database openable with exactly the old or the new key, data intact;
 *   - every live document that names an attachment (stored with cbl_db_blob_put inside
 *     the transactions, so its durability is deferred to their commit) reads it back
 *     whole and matching its digest;
 *   - cbl_db_count matches the model, cbl_db_integrity_check passes, and SQLite's own
 *     `PRAGMA integrity_check` (through the system libsqlite3, on the closed file) says ok.
 *
 *   crash_test [--kills N] [--seed S] [--max-delay-us U] [--docs D] [--dir DIR] [--verbose]
 *
 * Ends with "N passed, N failed"; exit 1 on any failure.
 */
#include "rel_common.h"

#include <poll.h>
#include <sqlite3.h>

#define MAX_DOCS 256
#define DB_NAME "crash"
/* Encryption states: 0 plain, 1 key A, 2 key B (raw keys: no PBKDF2 cost). */
#define KEY_A "{\"raw_hex\":\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}"
#define KEY_B "{\"raw_hex\":\"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf\"}"
static const char* const KEYS[3] = { NULL, KEY_A, KEY_B };
static const char* const OPTS[3] = { "{\"busy_timeout_ms\":20000}",
    "{\"busy_timeout_ms\":20000,\"encryption_key\":" KEY_A "}",
    "{\"busy_timeout_ms\":20000,\"encryption_key\":" KEY_B "}" };

/* ======================================================================================= */
/* Child: the writer                                                                        */
/* ======================================================================================= */

typedef struct { int exists, deleted; char rev[80]; } child_doc;

static int g_fd = -1;
static child_doc g_cdocs[MAX_DOCS];

static void emit(const char* fmt, ...) {
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    /* < PIPE_BUF: atomic. A driver that went away ends the child. */
    if (write(g_fd, line, (size_t)n) != n) _exit(3);
}

static void make_body(char* buf, size_t sz, long long op, long long tx, int deleted, rel_rng* r) {
    char pad[200];
    int plen = (int)rel_below(r, 150);
    for (int i = 0; i < plen; i++) pad[i] = (char)('a' + rel_below(r, 26));
    pad[plen] = 0;
    snprintf(buf, sz, "{%s\"op\":%lld,\"tx\":%lld,\"pad\":\"%s\",\"nested\":{\"a\":[1,2,{\"b\":%lld}]}}",
             deleted ? "\"_deleted\":true," : "", op, tx, pad, op * 7);
}

/* Attachment content of op `op`: "att-op-<op>-" then pseudo-random bytes, 100 B to 40 KB. */
static size_t make_attachment(unsigned char* buf, size_t cap, long long op, rel_rng* r) {
    size_t n = 100 + rel_below(r, 40000);
    if (n > cap) n = cap;
    int h = snprintf((char*)buf, cap, "att-op-%lld-", op);
    for (size_t i = (size_t)h; i < n; i++) buf[i] = (unsigned char)rel_below(r, 256);
    return n;
}

/* A transaction's body that names content put with cbl_db_blob_put. */
static void make_body_with_attachment(char* buf, size_t sz, long long op, long long tx, const char* digest) {
    snprintf(buf, sz, "{\"op\":%lld,\"tx\":%lld,\"_attachments\":{\"a.bin\":{\"digest\":\"%s\",\"stub\":true}}}",
             op, tx, digest);
}

typedef struct { long long op; rel_rng* r; } upd_ctx;
static int update_cb(void* ctx, const char* current, char** out) {
    upd_ctx* u = (upd_ctx*)ctx;
    (void)current;
    char body[512];
    make_body(body, sizeof body, u->op, 0, 0, u->r);
    *out = cbl_strdup(body);
    return 1;
}

static int child_main(const char* dir, uint64_t seed, long long opbase, int ndocs, int fd, int enc_hint) {
    g_fd = fd;
    rel_rng r = { seed };
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    cbl_error e;
    /* The driver's idea of the key first (no SQLCipher noise), then the others. */
    int enc = enc_hint % 3, rekeyed = 0;
    cbl_status ost = cbl_db_open(DB_NAME, dir, OPTS[enc], &db, &e);
    for (int t = 1; ost == CBL_UNAUTHORIZED && t < 3; t++) {
        enc = (enc_hint + t) % 3;
        ost = cbl_db_open(DB_NAME, dir, OPTS[enc], &db, &e);
    }
    if (ost != CBL_OK) {
        emit("F 0 open %d %s", e.code, e.message);
        return 2;
    }
    if (cbl_db_default_collection(db, &c, &e) != CBL_OK) { emit("F 0 coll %d", e.code); return 2; }
    for (int i = 0; i < ndocs; i++) {
        char id[32], *json = NULL;
        snprintf(id, sizeof id, "d%03d", i);
        cbl_status st = cbl_doc_get(c, id, CBL_GET_DELETED, &json, &e);
        if (st == CBL_OK) {
            g_cdocs[i].exists = 1;
            g_cdocs[i].deleted = rel_json_true(json, "_deleted");
            rel_json_str(json, "_rev", g_cdocs[i].rev, sizeof g_cdocs[i].rev);
        } else if (st != CBL_NOT_FOUND) {
            emit("F 0 get %d", st);
            return 2;
        }
        cbl_free(json);
    }
    emit("R");
    long long op = opbase, tx = opbase;
    char body[512];
    for (;;) {
        uint32_t k = rel_below(&r, 100);
        if (k < 45) {                                     /* single save */
            int i = (int)rel_below(&r, (uint32_t)ndocs);
            char id[32]; snprintf(id, sizeof id, "d%03d", i);
            char* rev = NULL;
            op++;
            make_body(body, sizeof body, op, 0, 0, &r);
            emit("I %lld %s P", op, id);
            cbl_status st = cbl_doc_put(c, id, body, g_cdocs[i].exists ? g_cdocs[i].rev : NULL, 0,
                                        NULL, &rev, &e);
            if (st != CBL_OK) { emit("F %lld put %d %s", op, st, e.message); return 2; }
            emit("A %lld %s %s", op, id, rev);
            g_cdocs[i].exists = 1; g_cdocs[i].deleted = 0;
            snprintf(g_cdocs[i].rev, sizeof g_cdocs[i].rev, "%s", rev);
            cbl_free(rev);
        } else if (k < 55) {                              /* delete (tombstone) */
            int i = (int)rel_below(&r, (uint32_t)ndocs);
            if (!g_cdocs[i].exists || g_cdocs[i].deleted) continue;
            char id[32]; snprintf(id, sizeof id, "d%03d", i);
            char* rev = NULL;
            op++;
            emit("I %lld %s D", op, id);
            cbl_status st = cbl_doc_delete(c, id, g_cdocs[i].rev, &rev, &e);
            if (st != CBL_OK) { emit("F %lld delete %d %s", op, st, e.message); return 2; }
            emit("A %lld %s %s", op, id, rev);
            g_cdocs[i].deleted = 1;
            snprintf(g_cdocs[i].rev, sizeof g_cdocs[i].rev, "%s", rev);
            cbl_free(rev);
        } else if (k < 65) {                              /* read-modify-write */
            int i = (int)rel_below(&r, (uint32_t)ndocs);
            char id[32]; snprintf(id, sizeof id, "d%03d", i);
            char* rev = NULL;
            op++;
            upd_ctx u = { op, &r };
            emit("I %lld %s U", op, id);
            cbl_status st = cbl_doc_update(c, id, update_cb, &u, &rev, &e);
            if (st != CBL_OK) { emit("F %lld update %d %s", op, st, e.message); return 2; }
            emit("A %lld %s %s", op, id, rev);
            g_cdocs[i].exists = 1; g_cdocs[i].deleted = 0;
            snprintf(g_cdocs[i].rev, sizeof g_cdocs[i].rev, "%s", rev);
            cbl_free(rev);
        } else if (k < 98) {                              /* transaction of many docs */
            int abort_it = rel_below(&r, 10) == 0;
            int m = 2 + (int)rel_below(&r, 40);
            child_doc saved[MAX_DOCS];
            memcpy(saved, g_cdocs, sizeof saved);
            tx++;
            if (cbl_db_begin(db, &e) != CBL_OK) { emit("F %lld begin %d %s", op, e.code, e.message); return 2; }
            emit("B %lld", tx);
            for (int j = 0; j < m; j++) {
                int i = (int)rel_below(&r, (uint32_t)ndocs);
                char id[32]; snprintf(id, sizeof id, "d%03d", i);
                int del = g_cdocs[i].exists && !g_cdocs[i].deleted && rel_below(&r, 5) == 0;
                char* rev = NULL;
                op++;
                make_body(body, sizeof body, op, tx, del, &r);
                if (!del && rel_below(&r, 3) == 0) {       /* with an attachment stored in the transaction */
                    static unsigned char att[40000];
                    size_t n = make_attachment(att, sizeof att, op, &r);
                    char* digest = NULL;
                    if (cbl_db_blob_put(db, att, n, &digest, &e) != CBL_OK) { emit("F %lld blob_put %d %s", op, e.code, e.message); return 2; }
                    make_body_with_attachment(body, sizeof body, op, tx, digest);
                    cbl_free(digest);
                }
                emit("I %lld %s %c", op, id, del ? 'X' : 'P');
                cbl_status st = cbl_doc_put(c, id, body, g_cdocs[i].exists ? g_cdocs[i].rev : NULL, 0,
                                            NULL, &rev, &e);
                if (st != CBL_OK) { emit("F %lld txput %d %s", op, st, e.message); return 2; }
                emit("A %lld %s %s", op, id, rev);
                g_cdocs[i].exists = 1; g_cdocs[i].deleted = del;
                snprintf(g_cdocs[i].rev, sizeof g_cdocs[i].rev, "%s", rev);
                cbl_free(rev);
            }
            if (abort_it) {
                if (cbl_db_abort(db, &e) != CBL_OK) { emit("F %lld abort %d %s", op, e.code, e.message); return 2; }
                memcpy(g_cdocs, saved, sizeof saved);
                emit("X %lld", tx);
            } else {
                if (cbl_db_commit(db, &e) != CBL_OK) { emit("F %lld commit %d %s", op, e.code, e.message); return 2; }
                emit("C %lld", tx);
            }
        } else if (k == 98 && !rekeyed) {                /* re-encryption: new file swapped in */
            /* Once per process: a second cbl_db_change_encryption_key on the same handle
             * fails with 500 (reported engine bug; bad_input_test has the reproducer). */
            int target = (enc + 1) % 3;
            rekeyed = 1;
            emit("E %d", target);
            cbl_status st = cbl_db_change_encryption_key(db, KEYS[target], &e);
            if (st != CBL_OK) { emit("F %lld rekey %d %s", op, st, e.message); return 2; }
            enc = target;
            emit("e %d", enc);
        } else {                                          /* maintenance */
            emit("K");
            cbl_status st = cbl_db_compact(db, &e);
            if (st != CBL_OK && st != CBL_BUSY) { emit("F %lld compact %d %s", op, st, e.message); return 2; }
            emit("k");
        }
    }
}

/* ======================================================================================= */
/* Driver                                                                                    */
/* ======================================================================================= */

typedef struct { int exists, deleted; char rev[80]; long long op; } model_doc;
typedef struct { long long op; int doc; char kind; char rev[80]; int acked; } pend_op;

static model_doc g_model[MAX_DOCS];
static int g_ndocs = 64;
static int g_verbose;
static long long g_acked_ops, g_verified_ops, g_inflight_there, g_inflight_absent;
static long long g_tx_committed, g_tx_aborted, g_tx_inflight_there, g_tx_inflight_absent;
static long long g_kill_during_open;
static int g_enc, g_rekey_pending = -1;
static long long g_rekeys, g_rekey_inflight_new, g_rekey_inflight_old;
static int g_compacting;
static long long g_compactions, g_compact_kills;
static long long g_attachments_checked;

static int doc_index(const char* id) {
    return (id[0] == 'd') ? atoi(id + 1) : -1;
}

typedef struct {
    pend_op ops[4096]; int n;      /* ops of the open transaction, or the single op in flight */
    int in_tx; long long tx;
} pending;

static void apply_op(const pend_op* p) {
    model_doc* m = &g_model[p->doc];
    m->exists = 1;
    m->deleted = (p->kind == 'D' || p->kind == 'X');
    snprintf(m->rev, sizeof m->rev, "%s", p->rev);
    m->op = (p->kind == 'D') ? -1 : p->op;
    g_acked_ops++;
}

/* Parses the child's log, applies what was acknowledged, leaves what was in flight in *pd. */
static void parse_log(char* buf, pending* pd, int round) {
    pd->n = 0; pd->in_tx = 0;
    char* save = NULL;
    for (char* line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char id[64], kind = 0, rev[80];
        long long op = 0;
        if (line[0] == 'K') { g_compacting = 1; continue; }
        if (line[0] == 'k') { g_compacting = 0; g_compactions++; continue; }
        if (line[0] == 'R') continue;
        if (line[0] == 'E') { g_rekey_pending = atoi(line + 2); continue; }
        if (line[0] == 'e') { g_enc = atoi(line + 2); g_rekey_pending = -1; g_rekeys++; continue; }
        if (line[0] == 'F') { rel_failf("round %d: child reported an error: %s", round, line); continue; }
        if (line[0] == 'B') { pd->in_tx = 1; pd->tx = atoll(line + 2); pd->n = 0; continue; }
        if (line[0] == 'C') { for (int i = 0; i < pd->n; i++) apply_op(&pd->ops[i]); g_tx_committed++;
                              pd->in_tx = 0; pd->n = 0; continue; }
        if (line[0] == 'X') { g_tx_aborted++; g_verified_ops += pd->n; pd->in_tx = 0; pd->n = 0; continue; }
        if (line[0] == 'I' && sscanf(line + 2, "%lld %63s %c", &op, id, &kind) == 3) {
            if (!pd->in_tx) pd->n = 0;
            if (pd->n < (int)(sizeof pd->ops / sizeof pd->ops[0])) {
                pend_op* p = &pd->ops[pd->n++];
                memset(p, 0, sizeof *p);
                p->op = op; p->doc = doc_index(id); p->kind = kind;
            }
            continue;
        }
        if (line[0] == 'A' && sscanf(line + 2, "%lld %63s %79s", &op, id, rev) == 3) {
            pend_op* p = pd->n ? &pd->ops[pd->n - 1] : NULL;
            if (!p || p->op != op) { rel_failf("round %d: ack without intent: %s", round, line); continue; }
            p->acked = 1;
            snprintf(p->rev, sizeof p->rev, "%s", rev);
            if (!pd->in_tx) { apply_op(p); pd->n = 0; }
            continue;
        }
        rel_failf("round %d: unparsable log line '%s'", round, line);
    }
}

typedef struct { int exists, deleted; char rev[80]; long long op; } actual_doc;

static void read_actual(cbl_collection* c, int i, actual_doc* a) {
    char id[32], *json = NULL;
    snprintf(id, sizeof id, "d%03d", i);
    memset(a, 0, sizeof *a);
    cbl_status st = cbl_doc_get(c, id, CBL_GET_DELETED, &json, NULL);
    if (st == CBL_OK) {
        a->exists = 1;
        a->deleted = rel_json_true(json, "_deleted");
        rel_json_str(json, "_rev", a->rev, sizeof a->rev);
        a->op = rel_json_int(json, "op", -1);
        if (!a->deleted && strstr(json, "\"_attachments\"")) {
            /* A committed document never names content that is missing or torn. */
            void* bytes = NULL;
            size_t n = 0;
            cbl_error e;
            cbl_status ast = cbl_doc_get_attachment(c, id, "a.bin", &bytes, &n, &e);
            if (ast != CBL_OK) rel_failf("%s: attachment unreadable: %d %s (%s)", id, ast, e.message, json);
            else if (n < 8 || memcmp(bytes, "att-op-", 7) != 0) rel_failf("%s: attachment content wrong (%zu bytes)", id, n);
            else g_attachments_checked++;
            cbl_free(bytes);
        }
    } else if (st != CBL_NOT_FOUND) {
        rel_failf("cbl_doc_get(%s) -> %d", id, st);
    }
    cbl_free(json);
}

static int same_as_model(const actual_doc* a, const model_doc* m) {
    if (!m->exists) return !a->exists;
    return a->exists && a->deleted == m->deleted && strcmp(a->rev, m->rev) == 0;
}

/* Checks the history chain of one document; `prev_rev` (may be "") must be an ancestor. */
static void check_history(cbl_collection* c, int i, const actual_doc* a, const char* prev_rev, int round) {
    if (!a->exists) return;
    char id[32], *json = NULL;
    snprintf(id, sizeof id, "d%03d", i);
    cbl_status st = cbl_doc_history(c, id, NULL, &json, NULL);
    if (st != CBL_OK) { rel_failf("round %d: history(%s) -> %d", round, id, st); return; }
    static char items[200][80];
    int n = rel_json_str_array(json, items, 200);
    int ok = n >= 1 && strcmp(items[0], a->rev) == 0;
    for (int k = 1; ok && k < n; k++)
        if (rel_rev_gen(items[k]) != rel_rev_gen(items[k - 1]) - 1) ok = 0;
    if (!ok) rel_failf("round %d: %s: bad history %s (current %s)", round, id, json, a->rev);
    if (ok && prev_rev[0] && strcmp(prev_rev, a->rev) != 0 &&
        rel_rev_gen(a->rev) - rel_rev_gen(prev_rev) < n) {
        int found = 0;
        for (int k = 0; k < n; k++) if (strcmp(items[k], prev_rev) == 0) found = 1;
        if (!found) rel_failf("round %d: %s: previous revision %s not in history %s", round, id, prev_rev, json);
        else g_pass++;
    }
    char* tree = NULL;
    if (cbl_doc_revision_tree(c, id, &tree, NULL) != CBL_OK) rel_failf("round %d: revision_tree(%s)", round, id);
    else {
        char cur[80];
        rel_json_str(tree, "current", cur, sizeof cur);
        if (strcmp(cur, a->rev) != 0) rel_failf("round %d: %s: tree current %s != %s", round, id, cur, a->rev);
    }
    cbl_free(tree);
    cbl_free(json);
}

static int sqlite_integrity(const char* dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.cblite2/db.sqlite3", dir, DB_NAME);
    sqlite3* s = NULL;
    if (sqlite3_open_v2(path, &s, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        rel_failf("sqlite3_open(%s): %s", path, s ? sqlite3_errmsg(s) : "?");
        sqlite3_close(s);
        return 0;
    }
    sqlite3_stmt* q = NULL;
    int ok = 0;
    if (sqlite3_prepare_v2(s, "PRAGMA integrity_check", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW) {
        const char* res = (const char*)sqlite3_column_text(q, 0);
        ok = res && strcmp(res, "ok") == 0;
        if (!ok) rel_failf("PRAGMA integrity_check: %s", res ? res : "(null)");
    } else {
        rel_failf("PRAGMA integrity_check failed: %s", sqlite3_errmsg(s));
    }
    sqlite3_finalize(q);
    sqlite3_close(s);
    return ok;
}

/* Verifies the database against the model and the in-flight work; updates the model. */
static void verify(const char* dir, pending* pd, int round) {
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    cbl_error e;
    /* The acknowledged encryption state opens it; during an unacknowledged re-encryption
     * either the old or the new key does, never neither. */
    cbl_status ost = cbl_db_open(DB_NAME, dir, OPTS[g_enc], &db, &e);
    if (ost == CBL_UNAUTHORIZED && g_rekey_pending >= 0 && g_rekey_pending != g_enc) {
        ost = cbl_db_open(DB_NAME, dir, OPTS[g_rekey_pending], &db, &e);
        if (ost == CBL_OK) { g_enc = g_rekey_pending; g_rekey_inflight_new++; }
    } else if (ost == CBL_OK && g_rekey_pending >= 0) g_rekey_inflight_old++;
    g_rekey_pending = -1;
    if (ost != CBL_OK) {
        rel_failf("round %d: reopen failed (encrypted: %d): %d %s", round, g_enc, e.code, e.message);
        return;
    }
    int encrypted = -1;
    if (cbl_db_is_encrypted_v2(db, &encrypted, &e) != CBL_OK || encrypted != (g_enc != 0))
        rel_failf("round %d: cbl_db_is_encrypted_v2 %d, expected %d", round, encrypted, g_enc != 0);
    if (cbl_db_default_collection(db, &c, &e) != CBL_OK) { rel_failf("coll"); IGNORE_STATUS(cbl_db_close(db, NULL)); return; }

    static actual_doc act[MAX_DOCS];
    static char prev_rev[MAX_DOCS][80];
    for (int i = 0; i < g_ndocs; i++) { read_actual(c, i, &act[i]); snprintf(prev_rev[i], 80, "%s", g_model[i].rev); }

    /* The in-flight work: the single op or the transaction. For a transaction, "new" state
     * of a doc = its last op in the tx; the tx may only count as there if every op was
     * acknowledged (commit comes after the last op). */
    int ntouched = 0, nnew = 0, nold = 0;
    static int touched[MAX_DOCS];
    static pend_op* last[MAX_DOCS];
    memset(touched, 0, sizeof touched);
    memset(last, 0, sizeof last);
    int all_acked = 1;
    for (int k = 0; k < pd->n; k++) {
        pend_op* p = &pd->ops[k];
        if (p->doc < 0 || p->doc >= g_ndocs) continue;
        if (!p->acked) all_acked = 0;
        touched[p->doc] = 1;
        last[p->doc] = p;
    }
    for (int i = 0; i < g_ndocs; i++) {
        if (!touched[i]) {
            if (!same_as_model(&act[i], &g_model[i]))
                rel_failf("round %d: d%03d: acknowledged state lost: expected %s%s, found %s%s (op %lld)", round, i,
                          g_model[i].exists ? g_model[i].rev : "<absent>", g_model[i].deleted ? " (deleted)" : "",
                          act[i].exists ? act[i].rev : "<absent>", act[i].deleted ? " (deleted)" : "", act[i].op);
            else g_pass++;
            continue;
        }
        ntouched++;
        pend_op* p = last[i];
        int is_old = same_as_model(&act[i], &g_model[i]);
        int is_new;
        if (pd->in_tx)
            is_new = all_acked && act[i].exists && strcmp(act[i].rev, p->rev) == 0 &&
                     act[i].deleted == (p->kind == 'X');
        else if (p->kind == 'D')
            is_new = act[i].exists && act[i].deleted &&
                     rel_rev_gen(act[i].rev) == rel_rev_gen(g_model[i].rev) + 1;
        else
            is_new = act[i].exists && !act[i].deleted && act[i].op == p->op &&
                     rel_rev_gen(act[i].rev) == rel_rev_gen(g_model[i].rev) + 1 &&
                     (!p->acked || strcmp(act[i].rev, p->rev) == 0);
        if (is_new) nnew++;
        else if (is_old) nold++;
        else rel_failf("round %d: d%03d: in-flight op %lld (%c) left neither the old state (%s) nor the new one: found %s op %lld",
                       round, i, p->op, p->kind, g_model[i].rev, act[i].exists ? act[i].rev : "<absent>", act[i].op);
    }
    if (ntouched) {
        if (nnew && nold)
            rel_failf("round %d: %s half there: %d docs new, %d old", round,
                      pd->in_tx ? "transaction" : "operation", nnew, nold);
        else {
            g_pass++;
            if (pd->in_tx) { if (nnew) g_tx_inflight_there++; else g_tx_inflight_absent++; }
            else { if (nnew) g_inflight_there++; else g_inflight_absent++; }
            g_verified_ops += pd->n;
        }
    }
    /* Adopt what is there as the new model, then check the trees and the counts. */
    uint64_t live = 0;
    for (int i = 0; i < g_ndocs; i++) {
        model_doc* m = &g_model[i];
        m->exists = act[i].exists; m->deleted = act[i].deleted;
        snprintf(m->rev, sizeof m->rev, "%s", act[i].rev);
        m->op = act[i].op;
        if (m->exists && !m->deleted) live++;
        check_history(c, i, &act[i], prev_rev[i], round);
    }
    uint64_t count = 0;
    if (cbl_db_count(db, &count, &e) != CBL_OK || count != live)
        rel_failf("round %d: cbl_db_count %llu, model says %llu", round, (unsigned long long)count, (unsigned long long)live);
    else g_pass++;
    char* report = NULL;
    cbl_status st = cbl_db_integrity_check(db, &report, &e);
    if (st != CBL_OK) rel_failf("round %d: cbl_db_integrity_check -> %d: %s %s", round, st, e.message, report ? report : "");
    else g_pass++;
    cbl_free(report);
    cbl_collection_release(c);
    if (cbl_db_close(db, &e) != CBL_OK) rel_failf("round %d: close -> %d", round, e.code);
    if (!g_enc && sqlite_integrity(dir)) g_pass++;      /* the system SQLite cannot read SQLCipher files */
}

static pid_t spawn_child(const char* self, const char* dir, uint64_t seed, long long opbase, int* rfd) {
    int p[2];
    if (pipe(p) != 0) { perror("pipe"); exit(2); }
    char a_seed[32], a_op[32], a_docs[16], a_fd[16], a_enc[8];
    snprintf(a_enc, sizeof a_enc, "%d", g_enc);
    snprintf(a_seed, sizeof a_seed, "%llu", (unsigned long long)seed);
    snprintf(a_op, sizeof a_op, "%lld", opbase);
    snprintf(a_docs, sizeof a_docs, "%d", g_ndocs);
    snprintf(a_fd, sizeof a_fd, "%d", p[1]);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(2); }
    if (pid == 0) {
        close(p[0]);
        execl(self, self, "--child", dir, a_seed, a_op, a_docs, a_fd, a_enc, (char*)NULL);
        _exit(127);
    }
    close(p[1]);
    *rfd = p[0];
    return pid;
}

int main(int argc, char** argv) {
    if (argc == 8 && strcmp(argv[1], "--child") == 0)
        return child_main(argv[2], strtoull(argv[3], NULL, 10), atoll(argv[4]), atoi(argv[5]), atoi(argv[6]), atoi(argv[7]));

    int kills = 200;
    uint64_t seed = 12345;
    long max_delay_us = 40000;
    const char* dir_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kills") && i + 1 < argc) kills = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--max-delay-us") && i + 1 < argc) max_delay_us = atol(argv[++i]);
        else if (!strcmp(argv[i], "--docs") && i + 1 < argc) g_ndocs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir_arg = argv[++i];
        else if (!strcmp(argv[i], "--verbose")) g_verbose = 1;
        else { fprintf(stderr, "usage: %s [--kills N] [--seed S] [--max-delay-us U] [--docs D] [--dir DIR]\n", argv[0]); return 2; }
    }
    if (g_ndocs < 1 || g_ndocs > MAX_DOCS) g_ndocs = 64;
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) { perror("readlink"); return 2; }
    self[n] = 0;
    char dir[1024];
    if (dir_arg) { snprintf(dir, sizeof dir, "%s", dir_arg); mkdir(dir, 0755); }
    else rel_mktemp(dir, sizeof dir, "crash");
    IGNORE_STATUS(cbl_db_delete_named(DB_NAME, dir, NULL));
    printf("crash_test: seed %llu, %d kills, max delay %ld us, %d docs, dir %s\n",
           (unsigned long long)seed, kills, max_delay_us, g_ndocs, dir);
    fflush(stdout);

    signal(SIGPIPE, SIG_IGN);
    rel_rng r = { seed };
    static pending pd;
    size_t cap = 1 << 20;
    char* buf = malloc(cap);
    double t0 = rel_now();
    int round;
    for (round = 1; round <= kills && g_fail < 20; round++) {
        uint64_t child_seed = rel_next(&r);
        int early = rel_below(&r, 10) == 0;          /* kill during library load / open / recovery */
        long delay = (long)rel_below(&r, (uint32_t)max_delay_us + 1);
        if (rel_below(&r, 5) == 0) delay *= 8;          /* some longer runs: bigger databases, completed re-encryptions */
        int rfd;
        pid_t pid = spawn_child(self, dir, child_seed, (long long)round * 10000000LL, &rfd);
        size_t len = 0;
        double start = rel_now();
        double deadline = early ? start + delay / 1e6 * 0.5 : 0;
        int ready = 0, killed = 0;
        for (;;) {
            double now = rel_now();
            if (!killed && deadline && now >= deadline) { kill(pid, SIGKILL); killed = 1; }
            int timeout = killed ? 1000 : deadline ? (int)((deadline - now) * 1000) + 1 : 1000;
            struct pollfd pf = { rfd, POLLIN, 0 };
            int pr = poll(&pf, 1, timeout);
            if (pr > 0) {
                if (len + 65536 > cap) { cap *= 2; buf = realloc(buf, cap); }
                ssize_t got = read(rfd, buf + len, cap - len - 1);
                if (got <= 0) break;                 /* EOF: the child is gone */
                len += (size_t)got;
                if (!ready && memchr(buf, 'R', len) && (len >= 2 && buf[0] == 'R')) {
                    ready = 1;
                    if (!deadline) deadline = rel_now() + delay / 1e6;
                }
            }
            if (!killed && !deadline && rel_now() - start > 30) {
                rel_failf("round %d: child not ready after 30 s", round);
                kill(pid, SIGKILL); killed = 1;
            }
        }
        close(rfd);
        int status = 0;
        waitpid(pid, &status, 0);
        if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
            rel_failf("round %d: child ended on its own (status 0x%x) instead of being killed", round, status);
        if (!ready) g_kill_during_open++;
        buf[len] = 0;
        g_compacting = 0;
        parse_log(buf, &pd, round);
        if (g_compacting) g_compact_kills++;
        if (g_verbose)
            printf("round %d: delay %ld us%s, log %zu bytes, in flight: %s%d ops\n", round, delay,
                   early ? " (early)" : "", len, pd.in_tx ? "tx of " : "", pd.n);
        verify(dir, &pd, round);
    }
    double secs = rel_now() - t0;
    printf("crash_test: %d kills survived (%lld during open), %lld acknowledged operations verified exactly, "
           "%lld more in flight or aborted checked; in-flight single ops there/absent %lld/%lld; transactions committed %lld, "
           "aborted %lld, in flight at kill there/absent %lld/%lld; re-encryptions %lld acknowledged, in flight at kill new/old key %lld/%lld; compactions %lld, %lld killed midway; attachments read back %lld; %.1f s\n",
           round - 1, g_kill_during_open, g_acked_ops, g_verified_ops, g_inflight_there, g_inflight_absent,
           g_tx_committed, g_tx_aborted, g_tx_inflight_there, g_tx_inflight_absent, g_rekeys, g_rekey_inflight_new,
           g_rekey_inflight_old, g_compactions, g_compact_kills, g_attachments_checked, secs);
    free(buf);
    if (!dir_arg && g_fail == 0) rel_rm_rf(dir);
    else printf("crash_test: database kept in %s\n", dir);
    return rel_summary();
}
