/*
 * bench_jsview.c — the JavaScript view phase of the cblite benchmark (issue 28): on the
 * workload's documents (bench_doc_body), in the same run, the workload's view twice —
 *   native: a C map callback emitting (age, null) for documents of type person, _count;
 *   js:     the same view in a design document, run by the embedded Duktape:
 *           function (doc) { if (doc.type == "person") emit(doc.age, null); }, "_count".
 * For each: the index build (cbl_view_update), then the query (key = 42, 100 times, rows
 * read a page at a time; then _count grouped by age). The two views must answer the
 * same rows (checked). The order of the two alternates between runs, so that neither
 * always meets a warm cache. Medians of --runs; ratios js / native.
 * Targets (issue 28): the JS build within 3x of the native build; query times equal
 * (both read the same kind of index). Never fails on numbers.
 */
#define _POSIX_C_SOURCE 200809L

#include "cblite.h"
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { S_NATIVE, S_JS, S_COUNT };
enum { T_BUILD, T_KEY, T_GROUP, T_COUNT };
static const char* const SIDE[S_COUNT] = {"native", "js"};
static const char* const WHAT[T_COUNT] = {"build", "query key=42 x100", "query group=true"};

#define DDOC "{\"_id\":\"_design/bench\",\"language\":\"javascript\",\"views\":{\"by_age\":{" \
    "\"map\":\"function (doc) { if (doc.type == \\\"person\\\") emit(doc.age, null); }\",\"reduce\":\"_count\"}}}"

static void ok(cbl_status st, const cbl_error* e, const char* what) {
    if (st != CBL_OK) bench_die("%s: %d %s", what, (int)st, e->message);
}

/* The workload's map, as bench_cblite.c has it. */
static void map_by_age(void* ctx, const char* doc, cbl_emitter* em) {
    (void)ctx;
    const char* type = bench_json_find(doc, "type");
    long long age = 0;
    if (!type || strncmp(type, "\"person\"", 8) != 0) return;
    if (!bench_json_int(bench_json_find(doc, "age"), &age)) return;
    char key[32];
    snprintf(key, sizeof key, "%lld", age);
    (void)!cbl_emitter_emit(em, key, NULL, NULL);
}

/* Rows of a query read a page at a time; *sum adds up the values (the groups' counts). */
static long read_rows(cbl_view* v, const char* options, long* sum) {
    cbl_error e;
    cbl_query_result* r = NULL;
    ok(cbl_view_query(v, options, &r, &e), &e, "query");
    cbl_query_row rows[256];
    size_t n = 0;
    long total = 0;
    while (cbl_query_result_next_rows(r, rows, 256, &n, &e) == CBL_OK && n > 0) {
        total += (long)n;
        if (sum)
            for (size_t i = 0; i < n; i++) *sum += rows[i].value_json ? atol(rows[i].value_json) : 0;
    }
    cbl_query_result_release(r);
    return total;
}

/* One side's build and queries; `answer` gets its rows as JSON (group=true, then key=42)
 * for the comparison of the two sides. */
static void measure(cbl_view* v, double ms[T_COUNT], long n, char** answer) {
    cbl_error e;
    double t = bench_now_ms();
    ok(cbl_view_update(v, &e), &e, "view update");
    ms[T_BUILD] = bench_now_ms() - t;
    long rows = 0, groups, counted = 0;
    t = bench_now_ms();
    for (int k = 0; k < BENCH_VIEW_QUERIES; k++) rows += read_rows(v, "{\"key\":42,\"reduce\":false}", NULL);
    ms[T_KEY] = bench_now_ms() - t;
    t = bench_now_ms();
    groups = read_rows(v, "{\"group\":true}", &counted);
    ms[T_GROUP] = bench_now_ms() - t;
    /* Ages are i % 90 (no update phase here). */
    long per_key = n / 90 + (n % 90 > BENCH_VIEW_KEY ? 1 : 0);
    if (rows != per_key * BENCH_VIEW_QUERIES || groups != (n < 90 ? n : 90) || counted != n)
        bench_check("jsview", "%ld rows, %ld groups counting %ld documents: not the workload's", rows, groups, counted);
    char *grouped = NULL, *keyed = NULL;
    ok(cbl_view_query_json(v, "{\"group\":true}", &grouped, &e), &e, "query json");
    ok(cbl_view_query_json(v, "{\"key\":42,\"reduce\":false}", &keyed, &e), &e, "query json");
    size_t len = strlen(grouped) + strlen(keyed) + 2;
    *answer = malloc(len);
    if (!*answer) bench_die("out of memory");
    snprintf(*answer, len, "%s\n%s", grouped, keyed);
    cbl_free(grouped);
    cbl_free(keyed);
}

static void run(const char* dir, long n, int js_first, double ms[S_COUNT][T_COUNT]) {
    cbl_error e;
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    bench_remove_tree(dir);
    bench_mkdirs(dir);
    ok(cbl_db_open("jsview", dir, NULL, &db, &e), &e, "open");
    ok(cbl_db_default_collection(db, &c, &e), &e, "collection");
    for (long i = 0; i < n; i++) {
        if (i % BENCH_BATCH == 0) ok(cbl_db_begin(db, &e), &e, "begin");
        char id[BENCH_ID_SIZE], body[BENCH_BODY_SIZE];
        bench_doc_id(id, i);
        bench_doc_body(body, i, (int)(i % 90));
        ok(cbl_doc_put(c, id, body, NULL, 0, NULL, NULL, &e), &e, "put");
        if (i % BENCH_BATCH == BENCH_BATCH - 1 || i == n - 1) ok(cbl_db_commit(db, &e), &e, "commit");
    }
    ok(cbl_doc_put(c, "_design/bench", DDOC, NULL, 0, NULL, NULL, &e), &e, "design document");
    cbl_view *views[S_COUNT] = {NULL, NULL};
    ok(cbl_collection_view(c, "byAge", &views[S_NATIVE], &e), &e, "view");
    ok(cbl_view_set_map_reduce(views[S_NATIVE], map_by_age, NULL, "_count", "1", NULL, &e), &e, "map");
    ok(cbl_collection_view(c, "bench/by_age", &views[S_JS], &e), &e, "design view");
    char* answers[S_COUNT] = {NULL, NULL};
    for (int k = 0; k < S_COUNT; k++) {
        int s = js_first ? S_COUNT - 1 - k : k;
        measure(views[s], ms[s], n, &answers[s]);
    }
    if (strcmp(answers[S_NATIVE], answers[S_JS]) != 0)
        bench_check("jsview", "the JavaScript view's rows differ from the native view's");
    for (int s = 0; s < S_COUNT; s++) {
        free(answers[s]);
        cbl_view_release(views[s]);
    }
    cbl_collection_release(c);
    ok(cbl_db_close(db, &e), &e, "close");
}

int main(int argc, char** argv) {
    long n = 100000;
    int runs = 3;
    const char* dir = "build/bench/jsview-data";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n")) n = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
    }
    if (runs < 1 || runs > 50 || n < 1) bench_die("usage: bench_jsview [--n N] [--runs R] [--dir DIR]");
    static double ms[50][S_COUNT][T_COUNT];
    for (int r = 0; r < runs; r++) run(dir, n, r % 2, ms[r]);
    printf("jsview: %ld documents, medians of %d runs (ms)\n", n, runs);
    printf("  %-20s %10s %10s %8s\n", "", SIDE[S_NATIVE], SIDE[S_JS], "js/native");
    for (int t = 0; t < T_COUNT; t++) {
        double a[50], b[50];
        for (int r = 0; r < runs; r++) { a[r] = ms[r][S_NATIVE][t]; b[r] = ms[r][S_JS][t]; }
        double ma = bench_median(a, runs), mb = bench_median(b, runs);
        printf("  %-20s %10.1f %10.1f %7.2fx\n", WHAT[t], ma, mb, ma > 0 ? mb / ma : 0.0);
    }
    bench_remove_tree(dir);
    return 0;
}
