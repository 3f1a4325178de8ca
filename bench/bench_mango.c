/*
 * bench_mango.c — the Mango phase of the cblite benchmark (issue 29): on the workload's
 * documents (bench_doc_body), in the same run,
 *   cblite:  a json index on "age" built (first find), beside a C map view on age built;
 *            equality find (age == 42), range find (30 <= age < 40), both through the
 *            index, and an unindexed find (city == "Paris", an _all_docs scan) —
 *            every matching document read;
 *   SQLite:  the same documents as JSON text in one table; the same queries with
 *            json_extract, the equality and range ones through an expression index on
 *            json_extract(body, '$.age'), the scan without one.
 * Medians of --runs; prints one line per query and the ratios. Never fails on numbers.
 *
 * --phase P runs one phase alone, once (P: build, view, eq, range, scan for cblite;
 * sqlite-build, sqlite-eq, sqlite-range, sqlite-scan for raw SQLite): the documents are
 * loaded (and, for a query or the view, the index built) first — a build phase then
 * starts on the database closed and reopened (cblite_settle) — then the phase runs inside
 * bench_mango_measured(), which turns callgrind's instrumentation and collection on for
 * it alone (valgrind's client requests; no-ops outside valgrind), so that the set-up runs
 * uninstrumented and is not counted:
 *   valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no \
 *       build/bench/bench_mango --n 100000 --phase eq
 * Without valgrind's header, --toggle-collect=bench_mango_measured does the counting
 * (the set-up is then instrumented, only slower). --repeat R runs a query phase R times
 * and prints its best time (the hot figure).
 */
#define _POSIX_C_SOURCE 200809L

#include "cblite.h"
#include "sqlite3.h"
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_CALLGRIND 1
#endif
#endif

enum { Q_BUILD, Q_VIEW, Q_EQ, Q_RANGE, Q_SCAN, Q_COUNT };
static const char* const NAMES[Q_COUNT] = {"index build", "view build", "equality (indexed)", "range (indexed)",
                                           "scan (unindexed)"};
static const char* const SELECTORS[Q_COUNT] = {NULL, NULL, "{\"selector\":{\"age\":42},\"limit\":100000000}",
    "{\"selector\":{\"age\":{\"$gte\":30,\"$lt\":40}},\"limit\":100000000}",
    "{\"selector\":{\"city\":\"Paris\"},\"limit\":100000000}"};
static const char* const SQL[Q_COUNT] = {NULL, NULL,
    "SELECT id, body FROM docs WHERE json_extract(body, '$.age') = 42",
    "SELECT id, body FROM docs WHERE json_extract(body, '$.age') >= 30 AND json_extract(body, '$.age') < 40",
    "SELECT id, body FROM docs WHERE json_extract(body, '$.city') = 'Paris'"};

/* The find that builds the index (it matches nothing). */
#define SELECTORS_SETUP "{\"selector\":{\"age\":-1}}"

static void ok(cbl_status st, const cbl_error* e, const char* what) {
    if (st != CBL_OK) bench_die("%s: %d %s", what, (int)st, e->message);
}

static void map_age(void* ctx, const char* doc, cbl_emitter* em) {
    (void)ctx;
    const char* p = strstr(doc, "\"age\":");
    if (!p) return;
    char key[24];
    snprintf(key, sizeof key, "%ld", strtol(p + 6, NULL, 10));
    (void)!cbl_emitter_emit(em, key, NULL, NULL);
}

static long find_count(cbl_collection* c, const char* query) {
    cbl_error e;
    cbl_query_result* r = NULL;
    ok(cbl_collection_find(c, query, &r, &e), &e, "find");
    cbl_query_row rows[64];
    size_t n = 0;
    long total = 0;
    while (cbl_query_result_next_rows(r, rows, 64, &n, &e) == CBL_OK && n > 0) total += (long)n;
    cbl_query_result_release(r);
    return total;
}

/* The phase alone measured by callgrind (--toggle-collect=bench_mango_measured): called
 * through a volatile pointer, so that the compiler neither inlines nor clones it. */
typedef struct { long (*run)(void*); void* arg; } measured_call;
long bench_mango_measured(measured_call* m);
long bench_mango_measured(measured_call* m) {
#ifdef BENCH_CALLGRIND
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_TOGGLE_COLLECT;
#endif
    long found = m->run(m->arg);
#ifdef BENCH_CALLGRIND
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_STOP_INSTRUMENTATION;
#endif
    return found;
}
static long (*volatile measured)(measured_call*) = bench_mango_measured;

/* Runs `run` as a measured phase: its time in *ms, what it found returned. */
static long timed(long (*run)(void*), void* arg, double* ms) {
    measured_call m = {run, arg};
    double t = bench_now_ms();
    long found = measured(&m);
    *ms = bench_now_ms() - t;
    return found;
}

/* --repeat R (with --phase): a query phase runs R times on the same database, its best
 * time kept — the hot figure, less exposed to a loaded machine than one run. */
static int query_repeat = 1;

static long timed_query(long (*run)(void*), void* arg, double* ms) {
    long found = timed(run, arg, ms);
    for (int i = 1; i < query_repeat; i++) {
        double again;
        timed(run, arg, &again);
        if (again < *ms) *ms = again;
    }
    return found;
}

typedef struct { cbl_db* db; cbl_collection* c; const char* query; } cblite_ctx;

static cblite_ctx cblite_open_filled(const char* dir, long n) {
    cbl_error e;
    cblite_ctx x = {NULL, NULL, NULL};
    bench_remove_tree(dir);
    bench_mkdirs(dir);
    ok(cbl_db_open("mango", dir, NULL, &x.db, &e), &e, "open");
    ok(cbl_db_default_collection(x.db, &x.c, &e), &e, "collection");
    ok(cbl_db_begin(x.db, &e), &e, "begin");
    for (long i = 0; i < n; i++) {
        char id[BENCH_ID_SIZE], body[BENCH_BODY_SIZE];
        bench_doc_id(id, i);
        bench_doc_body(body, i, (int)(i % 90));
        ok(cbl_doc_put(x.c, id, body, NULL, 0, NULL, NULL, &e), &e, "put");
    }
    ok(cbl_db_commit(x.db, &e), &e, "commit");
    return x;
}

static void cblite_close(cblite_ctx* x) {
    cbl_error e;
    cbl_collection_release(x->c);
    ok(cbl_db_close(x->db, &e), &e, "close");
}

/* Closes and reopens the database before a measured build, so that the build starts with
 * the write-ahead log copied into the file (the close copies it) and no copy of an earlier
 * step's writes running beside it. Without this the index build, which follows the load,
 * shared its window with the library's checkpoint thread copying the load's 20 MB log
 * (4,850 pages written and an fsync, strace at N=100,000), while the view build, which
 * follows the index build, shared its own with the copy of that build's 1,330 pages: the
 * two builds were not measured alike. Raw SQLite's build starts settled too (its
 * checkpoint runs inside the load's COMMIT). */
static void cblite_settle(const char* dir, cblite_ctx* x) {
    cbl_error e;
    cblite_close(x);
    ok(cbl_db_open("mango", dir, NULL, &x->db, &e), &e, "reopen");
    ok(cbl_db_default_collection(x->db, &x->c, &e), &e, "collection");
}

/* The json index created, then built by its first find (which matches nothing). */
static long cblite_build(void* arg) {
    cblite_ctx* x = arg;
    cbl_error e;
    char* out = NULL;
    ok(cbl_collection_create_index(x->c, "{\"index\":{\"fields\":[\"age\"]},\"ddoc\":\"age\",\"name\":\"age\"}", &out, &e), &e, "index");
    cbl_free(out);
    return find_count(x->c, SELECTORS_SETUP);
}

static long cblite_view(void* arg) {
    cbl_view* v = arg;
    cbl_error e;
    ok(cbl_view_update(v, &e), &e, "view update");
    return 0;
}

static long cblite_find(void* arg) {
    cblite_ctx* x = arg;
    return find_count(x->c, x->query);
}

static cbl_view* cblite_age_view(cblite_ctx* x) {
    cbl_error e;
    cbl_view* v = NULL;
    ok(cbl_collection_view(x->c, "byAge", &v, &e), &e, "view");
    ok(cbl_view_set_map_reduce(v, map_age, NULL, NULL, "1", NULL, &e), &e, "map");
    return v;
}

/* Every phase in order (only < 0), or phase `only` alone after its set-up. */
static void cblite_run(const char* dir, long n, int only, double ms[Q_COUNT], long found[Q_COUNT]) {
    cblite_ctx x = cblite_open_filled(dir, n);
    if (only < 0 || only == Q_BUILD) {
        cblite_settle(dir, &x);
        found[Q_BUILD] = timed(cblite_build, &x, &ms[Q_BUILD]);
    } else {
        cblite_build(&x);                                          /* set-up of the queries */
    }
    if (only < 0 || only == Q_VIEW) {
        cblite_settle(dir, &x);
        cbl_view* v = cblite_age_view(&x);
        found[Q_VIEW] = timed(cblite_view, v, &ms[Q_VIEW]);
        cbl_view_release(v);
    }
    /* The queries start settled too, after one find of their shape (the set-up's, which
     * matches nothing), as the build left them before: on a log being copied by the
     * checkpoint thread their counts moved with how far it had got (a range find by
     * ~2 M instructions in walFindFrame, run to run). */
    if (only < 0 || only >= Q_EQ) {
        cblite_settle(dir, &x);
        find_count(x.c, SELECTORS_SETUP);
    }
    for (int q = Q_EQ; q < Q_COUNT; q++) {
        if (only >= 0 && only != q) continue;
        x.query = SELECTORS[q];
        found[q] = timed_query(cblite_find, &x, &ms[q]);
    }
    cblite_close(&x);
}

static void sq(sqlite3* db, const char* sql) {
    char* err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) bench_die("sqlite: %s: %s", sql, err);
}

static long sql_count(sqlite3* db, const char* sql) {
    sqlite3_stmt* st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) bench_die("sqlite: %s", sqlite3_errmsg(db));
    long total = 0;
    size_t bytes = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        bytes += (size_t)sqlite3_column_bytes(st, 1);      /* each document read, as find reads it */
        total++;
    }
    sqlite3_finalize(st);
    return bytes ? total : total;
}

typedef struct { sqlite3* db; const char* sql; } sqlite_ctx;

static long sqlite_build(void* arg) {
    sq(((sqlite_ctx*)arg)->db, "CREATE INDEX docs_age ON docs(json_extract(body, '$.age'))");
    return 0;
}

static long sqlite_query(void* arg) {
    sqlite_ctx* x = arg;
    return sql_count(x->db, x->sql);
}

/* Every phase in order (only < 0), or phase `only` alone after its set-up. */
static void sqlite_run(const char* dir, long n, int only, double ms[Q_COUNT], long found[Q_COUNT]) {
    char path[600];
    bench_remove_tree(dir);
    bench_mkdirs(dir);
    snprintf(path, sizeof path, "%s/raw.sqlite", dir);
    sqlite_ctx x = {NULL, NULL};
    if (sqlite3_open(path, &x.db) != SQLITE_OK) bench_die("sqlite open");
    sq(x.db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
             "CREATE TABLE docs(id TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID; BEGIN");
    sqlite3_stmt* ins = NULL;
    sqlite3_prepare_v2(x.db, "INSERT INTO docs VALUES (?, ?)", -1, &ins, NULL);
    for (long i = 0; i < n; i++) {
        char id[BENCH_ID_SIZE], body[BENCH_BODY_SIZE];
        bench_doc_id(id, i);
        int len = bench_doc_body(body, i, (int)(i % 90));
        sqlite3_bind_text(ins, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 2, body, len, SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE) bench_die("sqlite insert");
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    sq(x.db, "COMMIT");
    if (only < 0 || only == Q_BUILD) timed(sqlite_build, &x, &ms[Q_BUILD]);
    else sqlite_build(&x);                                         /* set-up of the queries */
    ms[Q_VIEW] = 0;
    found[Q_BUILD] = found[Q_VIEW] = 0;
    sq(x.db, "PRAGMA wal_checkpoint(TRUNCATE)");                   /* settled, as cblite's */
    for (int q = Q_EQ; q < Q_COUNT; q++) {
        if (only >= 0 && only != q) continue;
        x.sql = SQL[q];
        found[q] = timed_query(sqlite_query, &x, &ms[q]);
    }
    sqlite3_close(x.db);
}

/* --phase NAME: the phase and side it names (*sqlite set for raw SQLite's); -1 unknown. */
static int phase_named(const char* name, int* sqlite) {
    static const char* const SHORT[Q_COUNT] = {"build", "view", "eq", "range", "scan"};
    *sqlite = strncmp(name, "sqlite-", 7) == 0;
    if (*sqlite) name += 7;
    for (int q = 0; q < Q_COUNT; q++)
        if (!strcmp(name, SHORT[q]) && !(*sqlite && q == Q_VIEW)) return q;
    return -1;
}

int main(int argc, char** argv) {
    long n = 100000;
    int runs = 3;
    const char* dir = "build/bench/mango-data";
    const char* phase = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n")) n = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "--phase")) phase = argv[i + 1];
        else if (!strcmp(argv[i], "--repeat")) query_repeat = atoi(argv[i + 1]);
    }
    int on_sqlite = 0, only = phase ? phase_named(phase, &on_sqlite) : -1;
    if (runs < 1 || runs > 50 || n < 1 || (phase && only < 0) || query_repeat < 1 || (query_repeat > 1 && !phase))
        bench_die("usage: bench_mango [--n N] [--runs R] [--dir DIR] "
                  "[--phase build|view|eq|range|scan|sqlite-build|sqlite-eq|sqlite-range|sqlite-scan [--repeat R]]");
    double cb[50][Q_COUNT], sl[50][Q_COUNT];
    long fc[Q_COUNT], fs[Q_COUNT];
    char d1[512], d2[512];
    snprintf(d1, sizeof d1, "%s/cblite", dir);
    snprintf(d2, sizeof d2, "%s/sqlite", dir);
    if (phase) {                                  /* one phase, once: for callgrind */
        double ms[Q_COUNT] = {0};
        long found[Q_COUNT] = {0};
        if (on_sqlite) sqlite_run(d2, n, only, ms, found);
        else cblite_run(d1, n, only, ms, found);
        printf("mango: %ld documents, %s alone: %.1f ms%s, %ld documents found\n", n, phase, ms[only],
               query_repeat > 1 && only >= Q_EQ ? " (best of --repeat)" : "", found[only]);
        bench_remove_tree(dir);
        return 0;
    }
    for (int r = 0; r < runs; r++) {
        cblite_run(d1, n, -1, cb[r], fc);
        sqlite_run(d2, n, -1, sl[r], fs);
    }
    printf("mango: %ld documents, medians of %d runs (ms)\n", n, runs);
    printf("  %-20s %10s %10s %8s %9s\n", "query", "cblite", "sqlite", "ratio", "docs");
    for (int q = 0; q < Q_COUNT; q++) {
        double a[50], b[50];
        for (int r = 0; r < runs; r++) { a[r] = cb[r][q]; b[r] = sl[r][q]; }
        double ma = bench_median(a, runs), mb = bench_median(b, runs);
        if (q >= Q_EQ && fc[q] != fs[q]) bench_check("mango", "%s: cblite found %ld, sqlite %ld", NAMES[q], fc[q], fs[q]);
        if (q == Q_VIEW) printf("  %-20s %10.1f %10s %8s %9s\n", NAMES[q], ma, "-", "-", "-");
        else printf("  %-20s %10.1f %10.1f %7.2fx %9ld\n", NAMES[q], ma, mb, mb > 0 ? ma / mb : 0.0, fc[q]);
    }
    bench_remove_tree(dir);
    return 0;
}
