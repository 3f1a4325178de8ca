/*
 * bench_sqlite.c — the raw-SQLite baseline of the cblite benchmark: the workload of
 * WORKLOAD.md done with the simplest sound schema, on the SQLCipher amalgamation the
 * library compiles (linked in statically, no key):
 *
 *   docs(id TEXT PRIMARY KEY, seq INTEGER UNIQUE, rev TEXT, deleted INT, body TEXT)
 *   blobs(key TEXT PRIMARY KEY, data BLOB)
 *   WAL, synchronous=NORMAL, json_extract for reads, an expression index for the view.
 *
 * It does the logical work a document layer must do and nothing more: revision IDs
 * "<gen>-<sha1(parent, deleted, body)>" on every write, one sequence per write, reads
 * by ID that parse the body for `age`, tombstones that keep their row.
 * Usage: bench_sqlite --n N --dir DIR [--phases ...]   (see bench_common.h)
 */
#define _XOPEN_SOURCE 700
#include "bench_common.h"

#include <openssl/evp.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static sqlite3* db;
static EVP_MD_CTX* md;
static int64_t next_seq = 1;

static void fail(int rc, const char* what) {
    bench_die("baseline: %s failed: %s (%d)", what, db ? sqlite3_errmsg(db) : "", rc);
}

static void exec(const char* sql) {
    char* msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) bench_die("baseline: %s failed: %s (%d)", sql, msg ? msg : "", rc);
}

static sqlite3_stmt* prep(const char* sql) {
    sqlite3_stmt* st = NULL;
    int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK) fail(rc, sql);
    return st;
}

static int step(sqlite3_stmt* st) {
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail(rc, sqlite3_sql(st));
    return rc;
}

static void done(sqlite3_stmt* st) {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* "<gen>-<hex sha1 of parent, deleted flag, body>" */
static void make_rev(char out[64], const char* parent, int deleted, const char* body, size_t len) {
    int gen = parent ? atoi(parent) + 1 : 1;
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    unsigned char flag = deleted ? 1 : 0;
    if (!EVP_DigestInit_ex(md, EVP_sha1(), NULL) ||
        (parent && !EVP_DigestUpdate(md, parent, strlen(parent))) ||
        !EVP_DigestUpdate(md, &flag, 1) || !EVP_DigestUpdate(md, body, len) ||
        !EVP_DigestFinal_ex(md, d, &dlen))
        bench_die("baseline: SHA-1 failed");
    int k = snprintf(out, 64, "%d-", gen);
    static const char hex[] = "0123456789abcdef";
    for (unsigned int i = 0; i < dlen && k + 2 < 64; i++) {
        out[k++] = hex[d[i] >> 4];
        out[k++] = hex[d[i] & 15];
    }
    out[k] = 0;
}

static void sha1_key(char out[64], const unsigned char* data, size_t len) {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    if (!EVP_Digest(data, len, d, &dlen, EVP_sha1(), NULL)) bench_die("baseline: SHA-1 failed");
    static const char hex[] = "0123456789abcdef";
    int k = snprintf(out, 64, "sha1-");
    for (unsigned int i = 0; i < dlen && k + 2 < 64; i++) {
        out[k++] = hex[d[i] >> 4];
        out[k++] = hex[d[i] & 15];
    }
    out[k] = 0;
}

static const char* VIEW_WHERE =
    "json_extract(body,'$.type')='person' AND deleted=0";

int main(int argc, char** argv) {
    static const int available[PH_COUNT] = {1, 1, 1, 1, 1, 1, 1, 1};
    bench_opts o;
    if (bench_parse_side_args(argc, argv, available, &o)) return 0;
    bench_side s;
    bench_side_init(&s, "baseline");
    const long n = o.n;
    char id[BENCH_ID_SIZE], body[BENCH_BODY_SIZE], rev[64], path[4096];
    int rc;

    if (bench_remove_tree(o.dir) != 0 || bench_mkdirs(o.dir) != 0)
        bench_die("baseline: cannot create %s", o.dir);
    snprintf(path, sizeof path, "%s/bench.sqlite3", o.dir);
    rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) fail(rc, "sqlite3_open_v2");
    md = EVP_MD_CTX_new();
    if (!md) bench_die("baseline: EVP_MD_CTX_new failed");
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
    exec("CREATE TABLE docs(id TEXT PRIMARY KEY, seq INTEGER UNIQUE, rev TEXT, deleted INT, body TEXT)");
    exec("CREATE TABLE blobs(key TEXT PRIMARY KEY, data BLOB)");
    {
        sqlite3_stmt* v = prep("PRAGMA cipher_version");
        const char* cv = step(v) == SQLITE_ROW ? (const char*)sqlite3_column_text(v, 0) : NULL;
        printf("info storage {\"sqlite\":\"%s\",\"sqlcipher\":\"%s\"}\n", sqlite3_libversion(),
               cv ? cv : "none");
        sqlite3_finalize(v);
    }

    /* 1. insert: N documents, 1,000 per transaction */
    if (o.phases[PH_INSERT]) {
        sqlite3_stmt* ins = prep("INSERT INTO docs(id, seq, rev, deleted, body) VALUES (?1, ?2, ?3, 0, ?4)");
        bench_phase_begin(&s, PH_INSERT);
        for (long i = 0; i < n; i++) {
            if (i % BENCH_BATCH == 0) exec("BEGIN");
            bench_doc_id(id, i);
            int len = bench_doc_body(body, i, (int)(i % 90));
            make_rev(rev, NULL, 0, body, (size_t)len);
            sqlite3_bind_text(ins, 1, id, -1, SQLITE_STATIC);
            sqlite3_bind_int64(ins, 2, next_seq++);
            sqlite3_bind_text(ins, 3, rev, -1, SQLITE_STATIC);
            sqlite3_bind_text(ins, 4, body, len, SQLITE_STATIC);
            step(ins);
            done(ins);
            if (i % BENCH_BATCH == BENCH_BATCH - 1 || i == n - 1) exec("COMMIT");
        }
        bench_phase_end(&s, n);
        sqlite3_finalize(ins);
    }

    /* 2. read: all N by ID in LCG order, reading `age` */
    if (o.phases[PH_READ]) {
        long* order = bench_read_order(n);
        sqlite3_stmt* sel = prep("SELECT rev, json_extract(body, '$.age') FROM docs WHERE id = ?1 AND deleted = 0");
        long bad = 0, missing = 0;
        long long agesum = 0;
        bench_phase_begin(&s, PH_READ);
        for (long k = 0; k < n; k++) {
            long i = order[k];
            bench_doc_id(id, i);
            sqlite3_bind_text(sel, 1, id, -1, SQLITE_STATIC);
            if (step(sel) == SQLITE_ROW) {
                int age = sqlite3_column_int(sel, 1);
                agesum += age;
                if (age != i % 90) bad++;
            } else {
                missing++;
            }
            done(sel);
        }
        bench_phase_end(&s, n);
        if (bad || missing) bench_check("read", "%ld documents missing, %ld with a wrong age", missing, bad);
        sqlite3_finalize(sel);
        free(order);
    }

    /* 3. update: every 10th document (i % 10 == 0), age + 1, on the current revision */
    if (o.phases[PH_UPDATE]) {
        sqlite3_stmt* sel = prep("SELECT rev, json_extract(body, '$.age') FROM docs WHERE id = ?1 AND deleted = 0");
        sqlite3_stmt* upd = prep("UPDATE docs SET seq = ?2, rev = ?3, body = ?4 WHERE id = ?1");
        long count = 0, missing = 0;
        char parent[64];
        bench_phase_begin(&s, PH_UPDATE);
        for (long i = 0; i < n; i += 10) {
            if (count % BENCH_BATCH == 0) exec("BEGIN");
            bench_doc_id(id, i);
            sqlite3_bind_text(sel, 1, id, -1, SQLITE_STATIC);
            if (step(sel) == SQLITE_ROW) {
                snprintf(parent, sizeof parent, "%s", (const char*)sqlite3_column_text(sel, 0));
                int age = sqlite3_column_int(sel, 1);
                done(sel);
                int len = bench_doc_body(body, i, age + 1);
                make_rev(rev, parent, 0, body, (size_t)len);
                sqlite3_bind_text(upd, 1, id, -1, SQLITE_STATIC);
                sqlite3_bind_int64(upd, 2, next_seq++);
                sqlite3_bind_text(upd, 3, rev, -1, SQLITE_STATIC);
                sqlite3_bind_text(upd, 4, body, len, SQLITE_STATIC);
                step(upd);
                done(upd);
            } else {
                done(sel);
                missing++;
            }
            count++;
            if (count % BENCH_BATCH == 0 || i + 10 >= n) exec("COMMIT");
        }
        bench_phase_end(&s, count);
        if (missing) bench_check("update", "%ld documents missing", missing);
        sqlite3_finalize(sel);
        sqlite3_finalize(upd);
    }

    /* 4. view build: an expression index on (age, id) for live docs of type person; the
     * first query (key = 42) is part of the build, as a view's first query builds its
     * index. The queries read the index only: a row's key is the key asked for, and the
     * reduce walks the distinct keys (skip scan) counting each, because SQLite 3.46 would
     * otherwise re-parse every body to get the key out of an expression index. */
    const char* KEY = "json_extract(body,'$.age')";
    char q_sql[512], first_sql[512], next_sql[512], count_sql[512];
    snprintf(q_sql, sizeof q_sql, "SELECT id FROM docs WHERE %s AND %s = ?1 ORDER BY id", VIEW_WHERE, KEY);
    snprintf(first_sql, sizeof first_sql, "SELECT %s FROM docs WHERE %s ORDER BY %s LIMIT 1", KEY, VIEW_WHERE, KEY);
    snprintf(next_sql, sizeof next_sql, "SELECT %s FROM docs WHERE %s AND %s > ?1 ORDER BY %s LIMIT 1",
             KEY, VIEW_WHERE, KEY, KEY);
    snprintf(count_sql, sizeof count_sql, "SELECT count(*) FROM docs WHERE %s AND %s = ?1", VIEW_WHERE, KEY);
    const int after_delete_for_view = 0; /* the view phases run before the delete phase */
    if (o.phases[PH_VIEW_BUILD]) {
        char ddl[512];
        snprintf(ddl, sizeof ddl, "CREATE INDEX docs_view_age ON docs(%s, id) WHERE %s", KEY, VIEW_WHERE);
        bench_phase_begin(&s, PH_VIEW_BUILD);
        exec(ddl);
        sqlite3_stmt* q = prep(q_sql);
        sqlite3_bind_int(q, 1, BENCH_VIEW_KEY);
        long rows = 0;
        while (step(q) == SQLITE_ROW) rows++;
        sqlite3_finalize(q);
        bench_phase_end(&s, n);
        long want = bench_expected_key_count(n, BENCH_VIEW_KEY, after_delete_for_view);
        if (rows != want) bench_check("view_build", "key %d: %ld rows, expected %ld", BENCH_VIEW_KEY, rows, want);
    }

    /* 5. view query: key = 42, 100 times; then _count grouped by age */
    if (o.phases[PH_VIEW_QUERY]) {
        if (!o.phases[PH_VIEW_BUILD]) bench_die("baseline: view_query needs view_build");
        sqlite3_stmt* q = prep(q_sql);
        sqlite3_stmt* first = prep(first_sql);
        sqlite3_stmt* next = prep(next_sql);
        sqlite3_stmt* cnt = prep(count_sql);
        long rows = 0, groups = 0, total = 0;
        bench_phase_begin(&s, PH_VIEW_QUERY);
        for (int k = 0; k < BENCH_VIEW_QUERIES; k++) {
            sqlite3_bind_int(q, 1, BENCH_VIEW_KEY);
            while (step(q) == SQLITE_ROW) {
                (void)sqlite3_column_text(q, 0);
                rows++;
            }
            done(q);
        }
        sqlite3_value* key = NULL;
        if (step(first) == SQLITE_ROW) key = sqlite3_value_dup(sqlite3_column_value(first, 0));
        done(first);
        while (key) {
            sqlite3_bind_value(cnt, 1, key);
            if (step(cnt) == SQLITE_ROW) total += sqlite3_column_int64(cnt, 0);
            done(cnt);
            groups++;
            sqlite3_bind_value(next, 1, key);
            sqlite3_value_free(key);
            key = step(next) == SQLITE_ROW ? sqlite3_value_dup(sqlite3_column_value(next, 0)) : NULL;
            done(next);
        }
        bench_phase_end(&s, BENCH_VIEW_QUERIES + 1);
        long want = bench_expected_key_count(n, BENCH_VIEW_KEY, after_delete_for_view) * BENCH_VIEW_QUERIES;
        long wantg = bench_expected_groups(n, after_delete_for_view);
        if (rows != want || groups != wantg || total != n)
            bench_check("view_query", "%ld rows (expected %ld), %ld groups (expected %ld) counting %ld docs (expected %ld)",
                        rows, want, groups, wantg, total, n);
        sqlite3_finalize(q);
        sqlite3_finalize(first);
        sqlite3_finalize(next);
        sqlite3_finalize(cnt);
    }

    /* 6. delete: every 10th document (i % 10 == 5), tombstones */
    if (o.phases[PH_DELETE]) {
        sqlite3_stmt* sel = prep("SELECT rev FROM docs WHERE id = ?1 AND deleted = 0");
        sqlite3_stmt* upd = prep("UPDATE docs SET seq = ?2, rev = ?3, deleted = 1, body = '{}' WHERE id = ?1");
        long count = 0, missing = 0;
        char parent[64];
        bench_phase_begin(&s, PH_DELETE);
        for (long i = 5; i < n; i += 10) {
            if (count % BENCH_BATCH == 0) exec("BEGIN");
            bench_doc_id(id, i);
            sqlite3_bind_text(sel, 1, id, -1, SQLITE_STATIC);
            if (step(sel) == SQLITE_ROW) {
                snprintf(parent, sizeof parent, "%s", (const char*)sqlite3_column_text(sel, 0));
                done(sel);
                make_rev(rev, parent, 1, "{}", 2);
                sqlite3_bind_text(upd, 1, id, -1, SQLITE_STATIC);
                sqlite3_bind_int64(upd, 2, next_seq++);
                sqlite3_bind_text(upd, 3, rev, -1, SQLITE_STATIC);
                step(upd);
                done(upd);
            } else {
                done(sel);
                missing++;
            }
            count++;
            if (count % BENCH_BATCH == 0 || i + 10 >= n) exec("COMMIT");
        }
        bench_phase_end(&s, count);
        if (missing) bench_check("delete", "%ld documents missing", missing);
        sqlite3_finalize(sel);
        sqlite3_finalize(upd);
    }

    /* 7. changes: the whole feed from sequence 0, in pages */
    if (o.phases[PH_CHANGES]) {
        sqlite3_stmt* q = o.changes_page > 0
            ? prep("SELECT seq, id, rev, deleted FROM docs WHERE seq > ?1 ORDER BY seq LIMIT ?2")
            : prep("SELECT seq, id, rev, deleted FROM docs WHERE seq > ?1 ORDER BY seq");
        long entries = 0, deleted = 0;
        int64_t since = 0;
        size_t bytes = 0;
        bench_phase_begin(&s, PH_CHANGES);
        for (;;) {
            long page = 0;
            sqlite3_bind_int64(q, 1, since);
            if (o.changes_page > 0) sqlite3_bind_int64(q, 2, o.changes_page);
            while (step(q) == SQLITE_ROW) {
                since = sqlite3_column_int64(q, 0);
                bytes += (size_t)sqlite3_column_bytes(q, 1) + (size_t)sqlite3_column_bytes(q, 2);
                if (sqlite3_column_int(q, 3)) deleted++;
                page++;
            }
            done(q);
            entries += page;
            if (page == 0 || o.changes_page <= 0) break;
        }
        bench_phase_end(&s, entries);
        long want_del = n / 10 + (n % 10 > 5 ? 1 : 0);
        if (entries != n || (o.phases[PH_DELETE] && deleted != want_del))
            bench_check("changes", "%ld entries (expected %ld), %ld deleted (expected %ld)",
                        entries, n, deleted, o.phases[PH_DELETE] ? want_del : 0);
        (void)bytes;
        sqlite3_finalize(q);
    }

    /* 8. attachments: 1,000 x 64 KiB, content-addressed, then read back */
    if (o.phases[PH_ATTACHMENTS]) {
        unsigned char* data = malloc(BENCH_ATT_SIZE);
        char (*keys)[64] = malloc(sizeof(*keys) * BENCH_ATT_COUNT);
        unsigned char (*heads)[8] = malloc(sizeof(*heads) * BENCH_ATT_COUNT);
        if (!data || !keys || !heads) bench_die("out of memory");
        sqlite3_stmt* ins = prep("INSERT OR IGNORE INTO blobs(key, data) VALUES (?1, ?2)");
        sqlite3_stmt* sel = prep("SELECT data FROM blobs WHERE key = ?1");
        long bad = 0;
        bench_phase_begin(&s, PH_ATTACHMENTS);
        exec("BEGIN");
        for (long k = 0; k < BENCH_ATT_COUNT; k++) {
            bench_att_bytes(data, BENCH_ATT_SIZE, k);
            memcpy(heads[k], data, 8);
            sha1_key(keys[k], data, BENCH_ATT_SIZE);
            sqlite3_bind_text(ins, 1, keys[k], -1, SQLITE_STATIC);
            sqlite3_bind_blob(ins, 2, data, BENCH_ATT_SIZE, SQLITE_STATIC);
            step(ins);
            done(ins);
        }
        exec("COMMIT");
        for (long k = 0; k < BENCH_ATT_COUNT; k++) {
            sqlite3_bind_text(sel, 1, keys[k], -1, SQLITE_STATIC);
            if (step(sel) != SQLITE_ROW || sqlite3_column_bytes(sel, 0) != BENCH_ATT_SIZE ||
                memcmp(sqlite3_column_blob(sel, 0), heads[k], 8) != 0)
                bad++;
            done(sel);
        }
        bench_phase_end(&s, BENCH_ATT_COUNT);
        if (bad) bench_check("attachments", "%ld attachments missing or wrong", bad);
        sqlite3_finalize(ins);
        sqlite3_finalize(sel);
        free(data); free(keys); free(heads);
    }

    /* 9. size: all files of the database, while open and after close */
    long long open_bytes = bench_tree_bytes(o.dir);
    rc = sqlite3_close(db);
    if (rc != SQLITE_OK) fail(rc, "sqlite3_close");
    db = NULL;
    EVP_MD_CTX_free(md);
    bench_print_sizes(bench_tree_bytes(o.dir), open_bytes);
    bench_print_rss(&s);
    if (!o.keep && bench_remove_tree(o.dir) != 0) bench_die("baseline: cannot remove %s", o.dir);
    return 0;
}
