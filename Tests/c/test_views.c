/*
 * test_views.c — C tests of libcblite's views, queries, all-docs queries and live
 * queries (the "Views and queries" section of include/cblite.h), through the .so.
 * Prints "N passed, N failed" and exits nonzero on any failure.
 *
 *   cc -std=c99 -Wall -Wextra -Werror -g -Iinclude -o test_views Tests/c/test_views.c \
 *      -Lbuild/lib -lcblite -lpthread
 */
#define _POSIX_C_SOURCE 200809L

#include "cblite.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- Checks (the style of test_cblite.c) ----------------------------------------- */

#include "check.h"   /* CHECK, CHECK_ST, CHECK_OUT, E, g_root, g_pass/g_fail */

/* Compares a string result with the expected text, printing both on failure. */
static void check_str_(const char* got, const char* want, const char* what, const char* file, int line) {
    if (got && strcmp(got, want) == 0) { g_pass++; return; }
    g_fail++;
    fprintf(stderr, "%s:%d: FAILED: %s\n    got:  %s\n    want: %s\n", file, line, what, got ? got : "(null)", want);
}
#define CHECK_STR(got, want) check_str_((got), (want), #got, __FILE__, __LINE__)

/* ---- Helpers --------------------------------------------------------------------- */

static cbl_db* open_fresh(const char* name, cbl_collection** c) {
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s", g_root, name);
    mkdir(dir, 0700);
    cbl_db* db = NULL;
    CHECK_ST(cbl_db_open(name, dir, NULL, &db, &E), CBL_OK);
    CHECK_ST(cbl_db_default_collection(db, c, &E), CBL_OK);
    return db;
}

static void put(cbl_collection* c, const char* id, const char* body) {
    char* rev = NULL;
    CHECK_ST(cbl_doc_put(c, id, body, NULL, 0, NULL, &rev, &E), CBL_OK);
    cbl_free(rev);
}

/* Puts `count` documents in one transaction: IDs from id_format with i, bodies from
 * body_format with i % mod. */
static void put_many(cbl_db* db, cbl_collection* c, const char* id_format, int count, const char* body_format, int mod) {
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    for (int i = 0; i < count; i++) {
        char id[32], body[64];
        snprintf(id, sizeof id, id_format, i);
        snprintf(body, sizeof body, body_format, i % mod);
        put(c, id, body);
    }
    CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
}

static void update(cbl_collection* c, const char* id, const char* body) {
    char* doc = NULL;
    CHECK_ST(cbl_doc_get(c, id, 0, &doc, &E), CBL_OK);
    char rev[128] = "";
    const char* p = doc ? strstr(doc, "\"_rev\":\"") : NULL;
    if (p) { p += 8; size_t n = strcspn(p, "\""); if (n < sizeof rev) { memcpy(rev, p, n); rev[n] = 0; } }
    cbl_free(doc);
    CHECK_ST(cbl_doc_put(c, id, body, rev, 0, NULL, NULL, &E), CBL_OK);
}

/* Runs a query row by row; joins the chosen field of every row with '|' into buf. A failing
 * cbl_query_result_next ends the text with "error N", so that it cannot pass for fewer rows. */
enum field { KEY, ID, VALUE, SOURCE };
static const char* rows_of(cbl_view* v, cbl_collection* all_docs, const char* options, enum field f,
                           char* buf, size_t n) {
    buf[0] = 0;
    cbl_query_result* r = NULL;
    cbl_status st = v ? cbl_view_query(v, options, &r, &E) : cbl_collection_all_docs_query(all_docs, options, &r, &E);
    if (st != CBL_OK) { snprintf(buf, n, "error %d: %s", (int)st, E.message); return buf; }
    cbl_query_row row;
    int has = 0;
    size_t used = 0;
    int first = 1;
    cbl_status next_st;
    while ((next_st = cbl_query_result_next(r, &row, &has, &E)) == CBL_OK && has) {
        const char* s = f == KEY ? row.key_json : f == ID ? row.doc_id : f == VALUE ? row.value_json : row.source_doc_id;
        if (!s) s = row.error ? row.error : "-";
        int w = snprintf(buf + used, n - used, "%s%s", first ? "" : "|", s);
        if (w < 0 || (size_t)w >= n - used) break;
        used += (size_t)w;
        first = 0;
    }
    if (next_st != CBL_OK) snprintf(buf + used, n - used, "%serror %d", first ? "" : "|", (int)next_st);
    cbl_query_result_release(r);
    return buf;
}
static char B[8192];
#define KEYS(v, o) rows_of((v), NULL, (o), KEY, B, sizeof B)
#define IDS(v, o) rows_of((v), NULL, (o), ID, B, sizeof B)
#define VALUES(v, o) rows_of((v), NULL, (o), VALUE, B, sizeof B)
#define ALLDOCS(c, o) rows_of(NULL, (c), (o), ID, B, sizeof B)

/* Finds "name": in a flat JSON document and returns a pointer to its value. */
static const char* field(const char* json, const char* name) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", name);
    const char* p = strstr(json, pat);
    return p ? p + strlen(pat) : NULL;
}

/* Copies a JSON value (number, string without escapes, array or object of such values,
 * or literal) at p into buf. */
static const char* value_text(const char* p, char* buf, size_t n) {
    size_t len;
    if (*p == '"') { const char* e = strchr(p + 1, '"'); len = e ? (size_t)(e - p + 1) : strlen(p); }
    else if (*p == '[' || *p == '{') {
        int depth = 0, in_str = 0;
        const char* q = p;
        for (; *q; q++) {
            if (*q == '"') in_str = !in_str;
            else if (!in_str && (*q == '[' || *q == '{')) depth++;
            else if (!in_str && (*q == ']' || *q == '}') && --depth == 0) break;
        }
        len = (size_t)(q - p + (*q ? 1 : 0));
    }
    else len = strcspn(p, ",}");
    if (len >= n) len = n - 1;
    memcpy(buf, p, len);
    buf[len] = 0;
    return buf;
}

/* ---- Map and reduce callbacks ---------------------------------------------------- */

typedef struct map_ctx { int calls; } map_ctx;

/* Map functions may run on the library's threads, where check.h's counters must not be
 * touched: a failed cbl_emitter_emit is counted here and checked once, at the end of main. */
static int g_emit_failures;
static void emit_ok(cbl_emitter* emitter, const char* key, const char* value) {
    if (cbl_emitter_emit(emitter, key, value, NULL) != CBL_OK) __atomic_add_fetch(&g_emit_failures, 1, __ATOMIC_SEQ_CST);
}

/* Emits doc.k (when present) with doc.v as value (absent when missing). */
static void map_k(void* context, const char* doc, cbl_emitter* emitter) {
    map_ctx* ctx = (map_ctx*)context;
    if (ctx) __atomic_add_fetch(&ctx->calls, 1, __ATOMIC_SEQ_CST);
    const char* k = field(doc, "k");
    if (!k) return;
    char key[256], value[256];
    value_text(k, key, sizeof key);
    const char* v = field(doc, "v");
    emit_ok(emitter, key, v ? value_text(v, value, sizeof value) : NULL);
}

/* CouchDB's collation sample, in order; documents carry an index "n" into it. */
static const char* COUCH_ORDER[] = {
    "null", "false", "true", "1", "2", "3.0", "4",
    "\"a\"", "\"A\"", "\"aa\"", "\"b\"", "\"B\"", "\"ba\"", "\"bb\"",
    "[\"a\"]", "[\"b\"]", "[\"b\",\"c\"]", "[\"b\",\"c\",\"a\"]", "[\"b\",\"d\"]", "[\"b\",\"d\",\"e\"]",
    "{\"a\":1}", "{\"a\":2}", "{\"b\":1}", "{\"b\":2}", "{\"b\":2,\"a\":1}", "{\"b\":2,\"c\":2}",
};
#define COUCH_COUNT ((int)(sizeof COUCH_ORDER / sizeof COUCH_ORDER[0]))

static void map_sample(void* context, const char* doc, cbl_emitter* emitter) {
    (void)context;
    const char* n = field(doc, "n");
    if (n) emit_ok(emitter, COUCH_ORDER[atoi(n)], NULL);
}

typedef struct reduce_ctx { int calls, rereduce_calls, max_values; } reduce_ctx;

static int json_array_count(const char* a) {
    if (!a || strcmp(a, "[]") == 0) return 0;
    int n = 1, depth = 0;
    for (const char* p = a; *p; p++) {
        if (*p == '[' || *p == '{') depth++;
        else if (*p == ']' || *p == '}') depth--;
        else if (*p == ',' && depth == 1) n++;
    }
    return n;
}

/* Counts rows; adds counts when re-reducing (the seeds' example). */
static char* reduce_count(void* context, const char* keys, const char* values, int rereduce) {
    reduce_ctx* ctx = (reduce_ctx*)context;
    int n = json_array_count(values);
    if (n > ctx->max_values) ctx->max_values = n;
    char out[32];
    if (rereduce) {
        ctx->rereduce_calls++;
        if (keys != NULL) return NULL;          /* must be NULL when re-reducing */
        long total = 0;
        const char* p = values + 1;
        while (*p && *p != ']') { total += strtol(p, (char**)&p, 10); if (*p == ',') p++; }
        snprintf(out, sizeof out, "%ld", total);
    } else {
        ctx->calls++;
        if (json_array_count(keys) != n) return NULL;
        snprintf(out, sizeof out, "%d", n);
    }
    return cbl_strdup(out);
}

static char* reduce_fail(void* context, const char* keys, const char* values, int rereduce) {
    (void)context; (void)keys; (void)values; (void)rereduce;
    return NULL;
}

/* ---- Tests ----------------------------------------------------------------------- */

static void test_collation(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("collation", &c);
    /* Insert in a scrambled order. */
    for (int i = 0; i < COUCH_COUNT; i++) {
        int n = (i * 7) % COUCH_COUNT;
        char id[16], body[32];
        snprintf(id, sizeof id, "d%02d", i);
        snprintf(body, sizeof body, "{\"n\":%d}", n);
        put(c, id, body);
    }
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "sample", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_sample, NULL, NULL, "1", NULL, &E), CBL_OK);
    char want[2048] = "";
    for (int i = 0; i < COUCH_COUNT; i++) {
        strcat(want, i ? "|" : "");
        strcat(want, strcmp(COUCH_ORDER[i], "3.0") == 0 ? "3" : COUCH_ORDER[i]);
    }
    CHECK_STR(KEYS(v, NULL), want);
    /* Descending is the exact reverse. */
    char rev[2048] = "";
    for (int i = COUCH_COUNT - 1; i >= 0; i--) {
        strcat(rev, i < COUCH_COUNT - 1 ? "|" : "");
        strcat(rev, strcmp(COUCH_ORDER[i], "3.0") == 0 ? "3" : COUCH_ORDER[i]);
    }
    CHECK_STR(KEYS(v, "{\"descending\":true}"), rev);
    /* Ranges use the collation: strings between "A" and "b" inclusive. */
    CHECK_STR(KEYS(v, "{\"startkey\":\"A\",\"endkey\":\"b\"}"), "\"A\"|\"aa\"|\"b\"");
    CHECK_STR(KEYS(v, "{\"startkey\":[\"b\"],\"endkey\":[\"b\",{}]}"),
              "[\"b\"]|[\"b\",\"c\"]|[\"b\",\"c\",\"a\"]|[\"b\",\"d\"]|[\"b\",\"d\",\"e\"]");
    CHECK_STR(KEYS(v, "{\"key\":null}"), "null");
    cbl_view_release(v);

    /* Unicode strings: UCA order, not bytes. */
    const char* words[] = {"\"zebra\"", "\"\\u00c4rger\"", "\"apple\"", "\"Apple\"", "\"\\u00e9t\\u00e9\"", "\"ete\"", "\"~tilde\"", "\"10\"", "\"9\""};
    for (int i = 0; i < 9; i++) {
        char id[16], body[64];
        snprintf(id, sizeof id, "w%d", i);
        snprintf(body, sizeof body, "{\"k\":%s}", words[i]);
        put(c, id, body);
    }
    CHECK_ST(cbl_collection_view(c, "words", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, NULL, "1", NULL, &E), CBL_OK);
    CHECK_STR(KEYS(v, NULL), "\"~tilde\"|\"10\"|\"9\"|\"apple\"|\"Apple\"|\"\xc3\x84rger\"|\"ete\"|\"\xc3\xa9t\xc3\xa9\"|\"zebra\"");
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

static void letters(cbl_collection* c) {
    const char* ks[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++) {
        char id[8], body[64];
        snprintf(id, sizeof id, "d%d", i + 1);
        snprintf(body, sizeof body, "{\"k\":\"%s\",\"v\":%d}", ks[i], i + 1);
        put(c, id, body);
    }
    put(c, "d6", "{\"k\":\"c\",\"v\":10}");
}

static void test_options(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("options", &c);
    letters(c);
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "byK", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, NULL, "1", NULL, &E), CBL_OK);
    CHECK_STR(IDS(v, NULL), "d1|d2|d3|d6|d4|d5");
    CHECK_STR(IDS(v, "{}"), "d1|d2|d3|d6|d4|d5");
    CHECK_STR(IDS(v, "{\"key\":\"c\"}"), "d3|d6");
    CHECK_STR(IDS(v, "{\"keys\":[\"e\",\"zz\",\"a\"]}"), "d5|d1");
    CHECK_STR(IDS(v, "{\"startkey\":\"b\",\"endkey\":\"d\"}"), "d2|d3|d6|d4");
    CHECK_STR(IDS(v, "{\"startkey\":\"b\",\"endkey\":\"d\",\"inclusive_end\":false}"), "d2|d3|d6");
    CHECK_STR(IDS(v, "{\"startkey\":\"c\",\"startkey_docid\":\"d6\"}"), "d6|d4|d5");
    CHECK_STR(IDS(v, "{\"endkey\":\"c\",\"endkey_docid\":\"d3\"}"), "d1|d2|d3");
    CHECK_STR(IDS(v, "{\"descending\":true}"), "d5|d4|d6|d3|d2|d1");
    CHECK_STR(IDS(v, "{\"descending\":true,\"startkey\":\"d\",\"endkey\":\"b\"}"), "d4|d6|d3|d2");
    CHECK_STR(IDS(v, "{\"descending\":true,\"startkey\":\"b\",\"endkey\":\"d\"}"), "");
    CHECK_STR(IDS(v, "{\"descending\":true,\"startkey\":\"d\",\"endkey\":\"b\",\"inclusive_end\":false}"), "d4|d6|d3");
    CHECK_STR(IDS(v, "{\"limit\":2}"), "d1|d2");
    CHECK_STR(IDS(v, "{\"skip\":4}"), "d4|d5");
    CHECK_STR(IDS(v, "{\"skip\":1,\"limit\":2,\"descending\":true}"), "d4|d6");
    CHECK_STR(VALUES(v, "{\"startkey\":\"c\",\"limit\":3}"), "3|10|4");
    CHECK_STR(KEYS(v, "{\"startkey\":\"B\"}"), "\"c\"|\"c\"|\"d\"|\"e\"");
    /* Prefix matching on the end key; on the start key when descending. */
    put(c, "p1", "{\"k\":\"foo\"}");
    put(c, "p2", "{\"k\":\"foolish\"}");
    put(c, "p3", "{\"k\":\"fop\"}");
    put(c, "p4", "{\"k\":\"fong\"}");
    CHECK_STR(KEYS(v, "{\"startkey\":\"foo\",\"endkey\":\"foo\",\"prefix_match_level\":1}"), "\"foo\"|\"foolish\"");
    CHECK_STR(KEYS(v, "{\"descending\":true,\"startkey\":\"foo\",\"endkey\":\"foo\",\"prefix_match_level\":1}"), "\"foolish\"|\"foo\"");
    /* include_docs, source IDs and the JSON form. */
    cbl_query_result* r = NULL;
    CHECK_ST(cbl_view_query(v, "{\"key\":\"a\",\"include_docs\":true}", &r, &E), CBL_OK);
    cbl_query_row row;
    int has = -1;
    CHECK_ST(cbl_query_result_next(r, &row, &has, &E), CBL_OK);
    CHECK(has == 1);
    if (has == 1) {
        CHECK_STR(row.key_json, "\"a\"");
        CHECK_STR(row.value_json, "1");
        CHECK_STR(row.doc_id, "d1");
        CHECK_STR(row.source_doc_id, "d1");
        CHECK(row.doc_json != NULL && strstr(row.doc_json, "\"_id\":\"d1\"") != NULL);
        CHECK(row.sequence == 1);
        CHECK(row.error == NULL);
    }
    CHECK_ST(cbl_query_result_next(r, &row, &has, &E), CBL_OK);
    CHECK(has == 0);
    int stale = -1;
    CHECK_ST(cbl_query_result_is_stale(r, &stale, &E), CBL_OK);
    CHECK(stale == 0);
    put(c, "new", "{\"k\":\"q\"}");
    CHECK_ST(cbl_query_result_is_stale(r, &stale, &E), CBL_OK);
    CHECK(stale == 1);
    cbl_query_result_release(r);
    char* json = NULL;
    CHECK_ST(cbl_view_query_json(v, "{\"key\":\"b\"}", &json, &E), CBL_OK);
    CHECK_STR(json, "{\"total_rows\":11,\"offset\":0,\"update_seq\":11,\"rows\":[{\"id\":\"d2\",\"key\":\"b\",\"value\":2,\"seq\":2}]}");
    cbl_free(json);
    /* The remaining rows of a partly read result, as JSON. */
    CHECK_ST(cbl_view_query(v, "{\"limit\":2}", &r, &E), CBL_OK);
    CHECK_ST(cbl_query_result_next(r, &row, &has, &E), CBL_OK);
    json = NULL;
    CHECK_ST(cbl_query_result_json(r, &json, &E), CBL_OK);
    CHECK(json != NULL && strstr(json, "\"id\":\"d2\"") != NULL && strstr(json, "\"id\":\"d1\"") == NULL);
    cbl_free(json);
    cbl_query_result_release(r);
    /* Option errors. */
    json = (char*)1;
    CHECK_ST(cbl_view_query_json(v, "{\"limit\":-1}", &json, &E), CBL_BAD_REQUEST);
    CHECK(json == NULL);
    CHECK_ST(cbl_view_query_json(v, "{\"bogus\":1}", &json, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_view_query_json(v, "not json", &json, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_view_query_json(v, "{\"reduce\":true}", &json, &E), CBL_BAD_REQUEST);
    r = (cbl_query_result*)1;
    CHECK_ST(cbl_view_query(v, "{\"update\":7}", &r, &E), CBL_BAD_REQUEST);
    CHECK(r == NULL);
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

static void test_reduce_and_group(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("reduce", &c);
    letters(c);
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "sum", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, "_sum", "1", NULL, &E), CBL_OK);
    CHECK_STR(VALUES(v, NULL), "25");
    CHECK_STR(KEYS(v, NULL), "null");
    CHECK_STR(VALUES(v, "{\"startkey\":\"b\",\"endkey\":\"c\"}"), "15");
    CHECK_STR(VALUES(v, "{\"reduce\":false,\"limit\":2}"), "1|2");
    CHECK_STR(VALUES(v, "{\"group\":true}"), "1|2|13|4|5");
    CHECK_STR(KEYS(v, "{\"group_level\":1,\"limit\":2,\"skip\":1}"), "\"b\"|\"c\"");
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, "_count", "1", NULL, &E), CBL_OK);
    CHECK_STR(VALUES(v, NULL), "6");
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, "_stats", "1", NULL, &E), CBL_OK);
    CHECK_STR(VALUES(v, NULL), "{\"sum\":25,\"count\":6,\"min\":1,\"max\":10,\"sumsqr\":155}");
    char* json = NULL;
    CHECK_ST(cbl_view_query_json(v, "{\"include_docs\":true}", &json, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, "_avg", "1", NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, reduce_count, "_sum", "1", NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, NULL, NULL, NULL, &E), CBL_BAD_REQUEST);
    cbl_view_release(v);

    /* Group levels over array keys. */
    put(c, "t1", "{\"k\":[\"rock\",\"radiohead\",\"ok\"],\"v\":300}");
    put(c, "t2", "{\"k\":[\"rock\",\"radiohead\",\"kid a\"],\"v\":250}");
    put(c, "t3", "{\"k\":[\"rock\",\"muse\",\"abs\"],\"v\":100}");
    put(c, "t4", "{\"k\":[\"jazz\",\"miles\",\"blue\"],\"v\":500}");
    CHECK_ST(cbl_collection_view(c, "music", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, "_sum", "1", NULL, &E), CBL_OK);
    CHECK_STR(KEYS(v, "{\"group_level\":1}"), "\"a\"|\"b\"|\"c\"|\"d\"|\"e\"|[\"jazz\"]|[\"rock\"]");
    CHECK_STR(VALUES(v, "{\"group_level\":1,\"startkey\":[]}"), "500|650");
    CHECK_STR(KEYS(v, "{\"group_level\":2}"), "[\"jazz\",\"miles\"]|[\"rock\",\"muse\"]|[\"rock\",\"radiohead\"]");
    CHECK_STR(VALUES(v, "{\"group_level\":2}"), "500|100|550");
    CHECK_STR(VALUES(v, "{\"group_level\":2,\"descending\":true}"), "550|100|500");
    cbl_view_release(v);

    /* _sum as CouchDB's: objects summed field by field; a value it cannot sum makes the
     * reduced value CouchDB's error object (the query still succeeds). */
    put(c, "o1", "{\"k\":[\"obj\",1],\"v\":{\"n\":1,\"a\":[1,2]}}");
    put(c, "o2", "{\"k\":[\"obj\",2],\"v\":{\"n\":2,\"a\":[3]}}");
    put(c, "o3", "{\"k\":[\"str\",1],\"v\":\"pea\"}");
    CHECK_ST(cbl_collection_view(c, "objects", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, "_sum", "1", NULL, &E), CBL_OK);
    CHECK_STR(VALUES(v, "{\"startkey\":[\"obj\"],\"endkey\":[\"obj\",{}]}"), "{\"a\":[4,2],\"n\":3}");
    CHECK_STR(VALUES(v, "{\"startkey\":[\"str\"],\"endkey\":[\"str\",{}]}"),
              "{\"error\":\"builtin_reduce_error\",\"reason\":\"The _sum function requires that map values be numbers, "
              "arrays of numbers, or objects. Objects cannot be mixed with other data structures. Objects can be arbitrarily "
              "nested, provided that the values for all fields are themselves numbers, arrays of numbers, or objects.\","
              "\"caused_by\":\"pea\"}");
    cbl_view_release(v);

    /* A custom reduce over enough rows to be reduced in chunks, then re-reduced. */
    put_many(db, c, "n%04d", 1200, "{\"k\":%d,\"v\":1}", 4);
    reduce_ctx rc = {0, 0, 0};
    CHECK_ST(cbl_collection_view(c, "custom", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, reduce_count, NULL, "1", &rc, &E), CBL_OK);
    CHECK_STR(VALUES(v, "{\"startkey\":0,\"endkey\":3}"), "1200");
    CHECK(rc.rereduce_calls > 0);
    CHECK(rc.calls > 1);
    CHECK(rc.max_values <= 256);
    CHECK_STR(VALUES(v, "{\"startkey\":0,\"endkey\":3,\"group\":true}"), "300|300|300|300");
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, reduce_fail, NULL, "1", NULL, &E), CBL_OK);
    CHECK_ST(cbl_view_query_json(v, NULL, &json, &E), CBL_INTERNAL_ERROR);
    CHECK(json == NULL);
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* Reads a map-only query row by row; checks document IDs are strictly ordered (ascending
 * or descending) and within [lo, hi]; returns the row count. Rows are lent until the next
 * call, so the previous ID is copied. */
static long scan_ids(cbl_view* v, const char* options, int descending, const char* lo, const char* hi) {
    cbl_query_result* r = NULL;
    if (cbl_view_query(v, options, &r, &E) != CBL_OK) { CHECK(0); return -1; }
    cbl_query_row row;
    int has = 0, ordered = 1, bounded = 1;
    long n = 0;
    char prev[64] = "";
    cbl_status next_st;
    while ((next_st = cbl_query_result_next(r, &row, &has, &E)) == CBL_OK && has) {
        if (n > 0) {
            int c = strcmp(prev, row.doc_id);
            if (descending ? c <= 0 : c >= 0) ordered = 0;
        }
        if ((lo && strcmp(row.doc_id, lo) < 0) || (hi && strcmp(row.doc_id, hi) > 0)) bounded = 0;
        snprintf(prev, sizeof prev, "%s", row.doc_id);
        n++;
    }
    cbl_query_result_release(r);
    CHECK(next_st == CBL_OK);
    CHECK(ordered);
    CHECK(bounded);
    return n;
}

/* The number of rows of a query (-1 when it, or reading a row, fails). */
static long count_rows(cbl_view* v, const char* options) {
    cbl_query_result* r = NULL;
    if (cbl_view_query(v, options, &r, &E) != CBL_OK) return -1;
    cbl_query_row row;
    int has = 0;
    long n = 0;
    cbl_status next_st;
    while ((next_st = cbl_query_result_next(r, &row, &has, &E)) == CBL_OK && has) n++;
    cbl_query_result_release(r);
    return next_st == CBL_OK ? n : -1;
}

/* Queries longer than a page (index pages are read 2,048 rows at a time), with document
 * ID bounds in both directions, and _count grouped and over ranges. */
static void test_paging_and_counts(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("paging", &c);
    put_many(db, c, "p%05d", 6000, "{\"k\":%d}", 3);
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "mod3", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, "_count", "1", NULL, &E), CBL_OK);
    CHECK(scan_ids(v, "{\"key\":1,\"reduce\":false}", 0, NULL, NULL) == 2000);
    CHECK(scan_ids(v, "{\"key\":1,\"reduce\":false,\"descending\":true}", 1, NULL, NULL) == 2000);
    CHECK(count_rows(v, "{\"startkey\":0,\"endkey\":2,\"reduce\":false,\"limit\":5000,\"skip\":500}") == 5000);
    CHECK(count_rows(v, "{\"startkey\":0,\"endkey\":2,\"reduce\":false,\"skip\":5990}") == 10);
    CHECK(scan_ids(v, "{\"startkey\":2,\"startkey_docid\":\"p01000\",\"endkey\":2,\"endkey_docid\":\"p05000\",\"reduce\":false}",
                   0, "p01000", "p05000") == 1334);
    CHECK(scan_ids(v, "{\"startkey\":2,\"startkey_docid\":\"p05000\",\"endkey\":2,\"endkey_docid\":\"p01000\",\"reduce\":false,\"descending\":true}",
                   1, "p01000", "p05000") == 1334);
    CHECK(count_rows(v, "{\"keys\":[2,0,2],\"reduce\":false}") == 6000);
    CHECK_STR(VALUES(v, "{\"group\":true}"), "2000|2000|2000");
    CHECK_STR(KEYS(v, "{\"group\":true,\"descending\":true}"), "2|1|0");
    CHECK_STR(VALUES(v, NULL), "6000");
    CHECK_STR(VALUES(v, "{\"startkey\":1}"), "4000");
    CHECK_STR(VALUES(v, "{\"startkey\":0,\"endkey\":2,\"inclusive_end\":false}"), "4000");
    CHECK_STR(VALUES(v, "{\"startkey\":2,\"endkey\":1,\"descending\":true,\"group\":true}"), "2000|2000");
    CHECK_STR(VALUES(v, "{\"startkey\":1,\"startkey_docid\":\"p03000\",\"group\":true}"), "1000|2000");
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* Emits doc.k three times, with values 0, 1 and 2 (the emit numbers). */
static void map_thrice(void* context, const char* doc, cbl_emitter* emitter) {
    (void)context;
    const char* k = field(doc, "k");
    if (!k) return;
    char key[256];
    value_text(k, key, sizeof key);
    emit_ok(emitter, key, "0");
    emit_ok(emitter, key, "1");
    emit_ok(emitter, key, "2");
}

#define TH_DOCS 1500

/* The bounds of a "thrice" range query: key -1 for none, docid NULL for none. */
typedef struct {
    int descending, start_key, end_key, inclusive_end;
    const char *start_doc, *end_doc;
} th_bounds;

/* Row `pos` in scan order of the rows "thrice" emitted: its key, document and emit number;
 * returns whether the bounds keep it. Rows sort by (key, docid, n): key 0's 750 documents,
 * then key 1's. */
static int th_row(const th_bounds* b, int pos, int* key, char doc[16], int* emit_n) {
    int j = b->descending ? TH_DOCS * 3 - 1 - pos : pos;
    int k = j / (TH_DOCS / 2 * 3), within = j % (TH_DOCS / 2 * 3);
    snprintf(doc, 16, "t%05d", (within / 3) * 2 + k);
    *key = k;
    *emit_n = within % 3;
    int c;
    if (b->start_key >= 0) {
        c = k != b->start_key ? (k < b->start_key ? -1 : 1) : (b->start_doc ? strcmp(doc, b->start_doc) : 0);
        if (b->descending ? c > 0 : c < 0) return 0;
    }
    if (b->end_key >= 0) {
        c = k != b->end_key ? (k < b->end_key ? -1 : 1) : (b->end_doc ? strcmp(doc, b->end_doc) : 0);
        if (b->descending ? (c < 0 || (c == 0 && !b->inclusive_end)) : (c > 0 || (c == 0 && !b->inclusive_end))) return 0;
    }
    return 1;
}

/* A range query of the "thrice" view checked row by row against the rows worked out from
 * what it emitted (documents t00000.. with k = i % 2, TH_DOCS of them). Bounds: key -1 for
 * none, docid NULL for none. */
static void check_thrice(cbl_view* v, int descending, int start_key, const char* start_doc, int end_key,
                         const char* end_doc, int inclusive_end, int skip, int limit, long min_rows) {
    char options[512];
    int len = snprintf(options, sizeof options, "{\"reduce\":false,\"descending\":%s,\"inclusive_end\":%s,\"skip\":%d",
                       descending ? "true" : "false", inclusive_end ? "true" : "false", skip);
    if (limit >= 0) len += snprintf(options + len, sizeof options - (size_t)len, ",\"limit\":%d", limit);
    if (start_key >= 0) len += snprintf(options + len, sizeof options - (size_t)len, ",\"startkey\":%d", start_key);
    if (start_doc) len += snprintf(options + len, sizeof options - (size_t)len, ",\"startkey_docid\":\"%s\"", start_doc);
    if (end_key >= 0) len += snprintf(options + len, sizeof options - (size_t)len, ",\"endkey\":%d", end_key);
    if (end_doc) len += snprintf(options + len, sizeof options - (size_t)len, ",\"endkey_docid\":\"%s\"", end_doc);
    snprintf(options + len, sizeof options - (size_t)len, "}");
    cbl_query_result* r = NULL;
    CHECK_ST(cbl_view_query(v, options, &r, &E), CBL_OK);
    if (!r) return;
    const int total = TH_DOCS * 3;
    const th_bounds bounds = {descending, start_key, end_key, inclusive_end, start_doc, end_doc};
    long want = 0, got = 0, skipped = 0, mismatches = 0;
    int pos = 0;                  /* index into the reference rows, in scan order */
    cbl_query_row rows[100];
    size_t n = 0;
    for (;;) {
        CHECK_ST(cbl_query_result_next_rows(r, rows, 100, &n, &E), CBL_OK);
        for (size_t i = 0; i < n; i++, got++) {
            /* The next reference row in range, after skip, as the limit allows. */
            int key = -1, emit_n = -1;
            char doc[16] = "";
            while (pos < total) {
                int k, e;
                char d[16];
                if (!th_row(&bounds, pos++, &k, d, &e)) continue;
                if (skipped < skip) { skipped++; continue; }
                if (limit >= 0 && want >= limit) break;
                key = k; emit_n = e; snprintf(doc, sizeof doc, "%s", d);
                want++;
                break;
            }
            if (key < 0 || !rows[i].key_json || atoi(rows[i].key_json) != key || !rows[i].doc_id ||
                strcmp(rows[i].doc_id, doc) != 0 || !rows[i].value_json || atoi(rows[i].value_json) != emit_n) {
                if (mismatches++ == 0)
                    fprintf(stderr, "    %s: row %ld is %s %s %s, expected %d %s %d\n", options, got, rows[i].key_json,
                            rows[i].doc_id, rows[i].value_json, key, doc, emit_n);
            }
        }
        if (n == 0) break;
    }
    cbl_query_result_release(r);
    CHECK(mismatches == 0);
    CHECK(got >= min_rows);
    /* No row of the reference left over. */
    long more = 0;
    while (pos < total && (limit < 0 || want + more < limit)) {
        int k, e;
        char d[16];
        if (!th_row(&bounds, pos++, &k, d, &e)) continue;
        if (skipped < skip) { skipped++; continue; }
        more++;
    }
    if (more) fprintf(stderr, "    %s: %ld rows missing after %ld\n", options, more, got);
    CHECK(more == 0);
}

/* Index pages (2,048 rows) after the first continue from the last row of the one before,
 * which here is inside a document's rows of one key (each document emits its key three
 * times); document-ID bounds in both directions, skip and limit across the boundaries. */
static void test_page_boundaries(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("boundaries", &c);
    put_many(db, c, "t%05d", TH_DOCS, "{\"k\":%d}", 2);
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "thrice", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_thrice, NULL, NULL, "1", NULL, &E), CBL_OK);
    check_thrice(v, 0, -1, NULL, -1, NULL, 1, 0, -1, 4500);
    check_thrice(v, 1, -1, NULL, -1, NULL, 1, 0, -1, 4500);
    check_thrice(v, 0, 0, NULL, 0, NULL, 1, 0, -1, 2250);               /* one key */
    check_thrice(v, 1, 1, NULL, 1, NULL, 1, 0, -1, 2250);
    check_thrice(v, 0, 0, NULL, 1, NULL, 0, 0, -1, 2250);               /* the end key excluded */
    check_thrice(v, 0, 0, "t00100", 1, "t01201", 1, 0, -1, 3000);
    check_thrice(v, 0, 0, "t00100", 1, "t01201", 0, 0, -1, 3000);
    check_thrice(v, 1, 1, "t01201", 0, "t00100", 1, 0, -1, 3000);
    check_thrice(v, 1, 1, "t01201", 0, "t00100", 0, 0, -1, 3000);
    check_thrice(v, 0, 1, "t00003", -1, NULL, 1, 0, -1, 2000);
    check_thrice(v, 1, -1, NULL, 1, "t00999", 1, 0, -1, 753);
    check_thrice(v, 0, -1, NULL, -1, NULL, 1, 2040, 20, 20);            /* skip and limit across a boundary */
    check_thrice(v, 1, -1, NULL, -1, NULL, 1, 2047, 3000, 2453);
    check_thrice(v, 0, 1, "t00501", 1, "t00401", 1, 0, -1, 0);          /* empty */
    CHECK(count_rows(v, "{\"keys\":[1,0,1],\"reduce\":false}") == 6750);
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* Emits doc.k with {"_id": doc.to} as value when the document has "to", else with none. */
static void map_redirect(void* context, const char* doc, cbl_emitter* emitter) {
    (void)context;
    const char* k = field(doc, "k");
    if (!k) return;
    char key[32], value[400];
    snprintf(key, sizeof key, "%d", atoi(k));
    const char* to = field(doc, "to");
    if (to) {
        char target[300];
        value_text(to, target, sizeof target);
        snprintf(value, sizeof value, "{\"_id\":%s}", target);
    }
    emit_ok(emitter, key, to ? value : NULL);
}

/* Every other row redirects to a long document ID, which the result stores while lending
 * the row (its memory grows many times a page): the plain rows between them, and every
 * row of a page of 500, stay right. */
static void test_redirects_among_plain_rows(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("redirects", &c);
    char longid[201];
    memset(longid, 'x', 200);
    longid[200] = 0;
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    for (int i = 0; i < 3000; i++) {
        char id[16], body[300];
        snprintf(id, sizeof id, "r%05d", i);
        if (i % 2 == 0) snprintf(body, sizeof body, "{\"k\":%d,\"to\":\"%s-%d\"}", i, longid, i);
        else snprintf(body, sizeof body, "{\"k\":%d}", i);
        put(c, id, body);
    }
    CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "redirects", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_redirect, NULL, NULL, "1", NULL, &E), CBL_OK);
    cbl_query_result* r = NULL;
    CHECK_ST(cbl_view_query(v, NULL, &r, &E), CBL_OK);
    static cbl_query_row rows[500];
    size_t n = 0;
    int at = 0, bad = 0;
    while (r && cbl_query_result_next_rows(r, rows, 500, &n, &E) == CBL_OK && n > 0) {
        for (size_t i = 0; i < n; i++, at++) {
            char source[16], target[220];
            snprintf(source, sizeof source, "r%05d", at);
            snprintf(target, sizeof target, "%s-%d", longid, at);
            const char* want = at % 2 == 0 ? target : source;
            if (!rows[i].key_json || atoi(rows[i].key_json) != at || !rows[i].doc_id || strcmp(rows[i].doc_id, want) != 0 ||
                !rows[i].source_doc_id || strcmp(rows[i].source_doc_id, source) != 0 || (rows[i].value_json == NULL) != (at % 2 == 1)) {
                if (bad++ == 0) fprintf(stderr, "    row %d: %s %s %s\n", at, rows[i].key_json, rows[i].doc_id, rows[i].source_doc_id);
            }
        }
    }
    cbl_query_result_release(r);
    CHECK(at == 3000);
    CHECK(bad == 0);
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* Emits doc.k + 100: another process's map of the same view, in another version. */
static void map_k_plus_100(void* context, const char* doc, cbl_emitter* emitter) {
    (void)context;
    const char* k = field(doc, "k");
    if (!k) return;
    char key[32];
    snprintf(key, sizeof key, "%d", atoi(k) + 100);
    emit_ok(emitter, key, NULL);
}

/* The other process of test_other_process_commits (this program run again): "put ID K"
 * puts {"k":K}; "delete VERSION" deletes the view's index; "rebuild VERSION" queries the
 * view with map_k_plus_100 (its index is rebuilt with that map). */
static int view_child(const char* dir, const char* op, const char* arg, const char* arg2) {
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    if (cbl_db_open("other", dir, NULL, &db, NULL) != CBL_OK || cbl_db_default_collection(db, &c, NULL) != CBL_OK) return 3;
    int rc = 0;
    if (strcmp(op, "put") == 0) {
        char body[32];
        snprintf(body, sizeof body, "{\"k\":%s}", arg2);
        if (cbl_doc_put(c, arg, body, NULL, 0, NULL, NULL, NULL) != CBL_OK) rc = 4;
    } else {
        cbl_view* v = NULL;
        if (cbl_collection_view(c, "byK", &v, NULL) != CBL_OK ||
            cbl_view_set_map_reduce(v, map_k_plus_100, NULL, NULL, arg, NULL, NULL) != CBL_OK) return 5;
        char* json = NULL;
        if (strcmp(op, "delete") == 0) rc = cbl_view_delete(v, NULL) == CBL_OK ? 0 : 6;
        else rc = cbl_view_query_json(v, NULL, &json, NULL) == CBL_OK && strstr(json, "\"key\":100") ? 0 : 7;
        cbl_free(json);
        cbl_view_release(v);
    }
    cbl_collection_release(c);
    return cbl_db_close(db, NULL) == CBL_OK ? rc : 8;
}

static int run_view_child(const char* dir, const char* op, const char* arg, const char* arg2) {
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test_views", "--view-child", dir, op, arg, arg2, (char*)NULL);
        _exit(2);
    }
    int status = -1;
    if (pid > 0) waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A query that finds its index current may skip the registry read next time (while its
 * connection's data_version holds), but never past a commit: another process's document,
 * its deletion of the index and its rebuild with another map reach the next query. */
static void test_other_process_commits(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("other", &c);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/other", g_root);
    put(c, "d0", "{\"k\":0}");
    put(c, "d1", "{\"k\":1}");
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "byK", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, NULL, "1", NULL, &E), CBL_OK);
    CHECK_STR(KEYS(v, NULL), "0|1");
    CHECK_STR(KEYS(v, NULL), "0|1");
    CHECK(run_view_child(dir, "put", "d2", "2") == 0);
    CHECK_STR(KEYS(v, NULL), "0|1|2");
    CHECK(run_view_child(dir, "delete", "1", "-") == 0);
    CHECK_STR(KEYS(v, NULL), "0|1|2");
    CHECK(run_view_child(dir, "rebuild", "2", "-") == 0);
    CHECK_STR(KEYS(v, NULL), "0|1|2");
    put(c, "d3", "{\"k\":3}");
    CHECK_STR(KEYS(v, NULL), "0|1|2|3");
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

static void test_incremental(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("incremental", &c);
    map_ctx mc = {0};
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "byK", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, NULL, "1", &mc, &E), CBL_OK);
    for (int i = 0; i < 5; i++) {
        char id[8], body[32];
        snprintf(id, sizeof id, "d%d", i);
        snprintf(body, sizeof body, "{\"k\":%d}", i);
        put(c, id, body);
    }
    CHECK_STR(KEYS(v, NULL), "0|1|2|3|4");
    CHECK(mc.calls == 5);
    CHECK_STR(KEYS(v, NULL), "0|1|2|3|4");
    CHECK(mc.calls == 5);                             /* nothing changed: no map calls */
    update(c, "d1", "{\"k\":10}");
    CHECK_ST(cbl_doc_delete(c, "d2", NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_doc_purge(c, "d3", &E), CBL_OK);
    CHECK_STR(KEYS(v, "{\"update\":false}"), "0|1|2|4");   /* the purge already left */
    CHECK_STR(KEYS(v, NULL), "0|4|10");
    CHECK(mc.calls == 6);
    /* Conflicts: the winner is indexed. */
    CHECK_ST(cbl_doc_put_existing(c, "cx", "{\"k\":\"base\"}", "[\"1-a\"]", &E), CBL_OK);
    CHECK_ST(cbl_doc_put_existing(c, "cx", "{\"k\":\"low\"}", "[\"2-b\",\"1-a\"]", &E), CBL_OK);
    CHECK_ST(cbl_doc_put_existing(c, "cx", "{\"k\":\"high\"}", "[\"2-c\",\"1-a\"]", &E), CBL_OK);
    CHECK_STR(KEYS(v, "{\"startkey\":\"\"}"), "\"high\"");
    CHECK_ST(cbl_doc_delete(c, "cx", "2-c", NULL, &E), CBL_OK);
    CHECK_STR(KEYS(v, "{\"startkey\":\"\"}"), "\"low\"");
    /* update "after": stale rows now, the index catches up in the background. */
    put(c, "late", "{\"k\":5}");
    CHECK_STR(KEYS(v, "{\"update\":\"after\",\"endkey\":100}"), "0|4|10");
    int caught_up = 0;
    for (int i = 0; i < 1000 && !caught_up; i++) {   /* waits for the background update */
        caught_up = strcmp(KEYS(v, "{\"update\":false,\"endkey\":100}"), "0|4|5|10") == 0;
        if (!caught_up) { struct timespec ts = {0, 10 * 1000 * 1000}; nanosleep(&ts, NULL); }
    }
    CHECK(caught_up);
    /* A new version rebuilds the index from scratch. */
    int before = mc.calls;
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, NULL, "2", &mc, &E), CBL_OK);
    CHECK_STR(KEYS(v, "{\"endkey\":100}"), "0|4|5|10");
    CHECK(mc.calls - before == 5);                    /* every live document mapped again */
    char* info = NULL;
    CHECK_ST(cbl_view_info(v, &info, &E), CBL_OK);
    CHECK(info != NULL && strstr(info, "\"name\":\"byK\"") && strstr(info, "\"total_rows\":5") && strstr(info, "\"stale\":false"));
    cbl_free(info);
    CHECK_ST(cbl_view_update(v, &E), CBL_OK);
    char* names = NULL;
    CHECK_ST(cbl_collection_view_names(c, &names, &E), CBL_OK);
    CHECK_STR(names, "[\"byK\"]");
    cbl_free(names);
    CHECK_ST(cbl_view_delete(v, &E), CBL_OK);
    CHECK_ST(cbl_view_delete(v, &E), CBL_NOT_FOUND);
    CHECK_ST(cbl_collection_view_names(c, &names, &E), CBL_OK);
    CHECK_STR(names, "[]");
    cbl_free(names);
    CHECK_STR(KEYS(v, "{\"update\":false}"), "");
    /* No map function: 406 unless reading the index as it is. */
    CHECK_ST(cbl_view_set_map_reduce(v, NULL, NULL, NULL, "2", NULL, &E), CBL_OK);
    char* json = NULL;
    CHECK_ST(cbl_view_query_json(v, NULL, &json, &E), CBL_NOT_ACCEPTABLE);
    CHECK_ST(cbl_view_update(v, &E), CBL_NOT_ACCEPTABLE);
    CHECK_ST(cbl_view_query_json(v, "{\"update\":false}", &json, &E), CBL_OK);
    CHECK(json != NULL && strstr(json, "\"rows\":[]") != NULL && strstr(json, "\"total_rows\":0") != NULL);
    cbl_free(json);
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* An index of number keys needs no collator and records none: reopened, it is read as it
 * is (no map call). Its first string keys record ICU's collator with them and collate by
 * ICU among the numbers ("a" < "b" < "C"; code points would put "C" first), without a
 * rebuild (map calls for the new documents only); reopened again, still no rebuild. */
static void test_number_index_then_strings(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("numbers-then-strings", &c);
    map_ctx mc = {0};
    cbl_view* v = NULL;
    put_many(db, c, "d%d", 3, "{\"k\":%d}", 3);
    CHECK_ST(cbl_collection_view(c, "byK", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, NULL, "1", &mc, &E), CBL_OK);
    CHECK_STR(KEYS(v, NULL), "0|1|2");
    CHECK(mc.calls == 3);
    for (int round = 0; round < 2; round++) {
        cbl_view_release(v);
        cbl_collection_release(c);
        CHECK_ST(cbl_db_close(db, &E), CBL_OK);
        db = open_fresh("numbers-then-strings", &c);
        CHECK_ST(cbl_collection_view(c, "byK", &v, &E), CBL_OK);
        CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, NULL, "1", &mc, &E), CBL_OK);
        if (round == 0) {
            CHECK_STR(KEYS(v, NULL), "0|1|2");
            CHECK(mc.calls == 3);                         /* read as it was: not rebuilt */
            put(c, "sb", "{\"k\":\"b\"}");
            put(c, "sC", "{\"k\":\"C\"}");
            put(c, "sa", "{\"k\":\"a\"}");
            CHECK_STR(KEYS(v, NULL), "0|1|2|\"a\"|\"b\"|\"C\"");
            CHECK(mc.calls == 6);                         /* the new documents only */
        } else {
            CHECK_STR(KEYS(v, NULL), "0|1|2|\"a\"|\"b\"|\"C\"");
            CHECK(mc.calls == 6);
        }
    }
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* Emits doc.k, twice when the document has "twice". */
static void map_k_twice(void* context, const char* doc, cbl_emitter* emitter) {
    map_k(context, doc, emitter);
    if (field(doc, "twice")) map_k(context, doc, emitter);
}

/* Key texts come back as the compact JSON of what was emitted, whether the index stores
 * them or makes them from the key (integers, null, booleans, arrays of them); equal keys
 * are ordered by document ID, a document may emit a key twice, and updates and deletes
 * take their old rows out. */
static void test_key_texts_and_equal_keys(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("keytexts", &c);
    const char* texts[] = {"1e2", "\"s\"", "1.5", "-0", "[1,[2,null]]", "12345678901234567", "true", "1.0"};
    for (int i = 0; i < 8; i++) {
        char id[8], body[64];
        snprintf(id, sizeof id, "t%d", i);
        snprintf(body, sizeof body, "{\"k\":%s}", texts[i]);
        put(c, id, body);
    }
    put(c, "m3", "{\"k\":7}");
    put(c, "m1", "{\"k\":7}");
    put(c, "m2", "{\"k\":7}");
    put(c, "m0", "{\"k\":7,\"twice\":1}");
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "texts", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k_twice, NULL, "_count", "1", NULL, &E), CBL_OK);
    CHECK_STR(KEYS(v, "{\"reduce\":false}"), "true|0|1|1.5|7|7|7|7|7|100|12345678901234567|\"s\"|[1,[2,null]]");
    CHECK_STR(KEYS(v, "{\"reduce\":false,\"descending\":true,\"limit\":3}"), "[1,[2,null]]|\"s\"|12345678901234567");
    CHECK_STR(KEYS(v, "{\"group\":true}"), "true|0|1|1.5|7|100|12345678901234567|\"s\"|[1,[2,null]]");
    CHECK_STR(VALUES(v, "{\"key\":7,\"group\":true}"), "5");
    CHECK_STR(IDS(v, "{\"key\":7,\"reduce\":false}"), "m0|m0|m1|m2|m3");
    CHECK_STR(IDS(v, "{\"keys\":[7,1],\"reduce\":false}"), "m0|m0|m1|m2|m3|t7");
    update(c, "m1", "{\"k\":8}");
    CHECK_ST(cbl_doc_delete(c, "m0", NULL, NULL, &E), CBL_OK);
    CHECK_STR(IDS(v, "{\"key\":7,\"reduce\":false}"), "m2|m3");
    CHECK_STR(KEYS(v, "{\"startkey\":7,\"endkey\":8,\"reduce\":false}"), "7|7|8");
    CHECK_ST(cbl_doc_purge(c, "m2", &E), CBL_OK);
    CHECK_STR(IDS(v, "{\"startkey\":7,\"endkey\":8,\"reduce\":false}"), "m3|m1");
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* Keeps a copy of every document a map call sees (one update's calls run one at a time). */
typedef struct seen_docs { int n; char* doc[8]; } seen_docs;
static void map_keep_doc(void* context, const char* doc, cbl_emitter* emitter) {
    seen_docs* seen = (seen_docs*)context;
    if (seen->n < 8) seen->doc[seen->n++] = strdup(doc);
    emit_ok(emitter, "1", NULL);
}

/* The map callback gets each document as cbl_doc_get renders it: IDs that need escaping
 * and plain ones, bodies with and without members; never a deleted document. And equal
 * keys of documents updated in a shuffled order (sequences no longer in ID order) come
 * back in document-ID order from a build. */
static void test_map_sees_documents_as_read(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("mapdocs", &c);
    const char* ids[] = {"plain", "quo\"te", "back\\slash", "unicod\xc3\xa9"};
    for (int i = 0; i < 4; i++) put(c, ids[i], i == 0 ? "{}" : "{\"j\":1,\"s\":\"x\\\"y\"}");
    put(c, "gone", "{\"k\":2}");
    CHECK_ST(cbl_doc_delete(c, "gone", NULL, NULL, &E), CBL_OK);
    seen_docs seen = {0};
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "docs", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_keep_doc, NULL, NULL, "1", &seen, &E), CBL_OK);
    CHECK_ST(cbl_view_update(v, &E), CBL_OK);
    CHECK(seen.n == 4);
    for (int i = 0; i < 4; i++) {
        char* doc = NULL;
        CHECK_ST(cbl_doc_get(c, ids[i], 0, &doc, &E), CBL_OK);
        int found = 0;
        for (int j = 0; j < seen.n; j++) found += doc && strcmp(seen.doc[j], doc) == 0;
        CHECK(found == 1);
        cbl_free(doc);
    }
    for (int j = 0; j < seen.n; j++) free(seen.doc[j]);
    cbl_view_release(v);

    put_many(db, c, "s%03d", 300, "{\"k\":%d}", 3);
    uint64_t state = 42;
    int order[300];
    for (int i = 0; i < 300; i++) order[i] = i;
    for (int i = 299; i > 0; i--) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        int j = (int)((state >> 33) % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < 300; i++) {
        char id[8], body[32];
        snprintf(id, sizeof id, "s%03d", order[i]);
        snprintf(body, sizeof body, "{\"k\":%d}", order[i] % 3);
        update(c, id, body);
    }
    CHECK_ST(cbl_collection_view(c, "byK", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, NULL, "1", NULL, &E), CBL_OK);
    CHECK(scan_ids(v, "{\"key\":1,\"reduce\":false}", 0, NULL, NULL) == 100);
    CHECK(scan_ids(v, "{\"key\":2,\"reduce\":false,\"descending\":true}", 1, NULL, NULL) == 100);
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

static void map_bad_emit(void* context, const char* doc, cbl_emitter* emitter) {
    (void)doc;
    cbl_status* st = (cbl_status*)context;
    *st = cbl_emitter_emit(emitter, "{not json", NULL, NULL);
}

static cbl_emitter* g_saved_emitter;
static void map_save_emitter(void* context, const char* doc, cbl_emitter* emitter) {
    (void)context; (void)doc;
    g_saved_emitter = emitter;
    emit_ok(emitter, "[1, 2 , {\"z\":1,\"a\":2}]", "\"x\"");
}

static void test_errors_and_handles(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("errors", &c);
    put(c, "a", "{\"k\":1}");
    cbl_view* v = (cbl_view*)1;
    CHECK_ST(cbl_collection_view(c, "", &v, &E), CBL_BAD_REQUEST);
    CHECK(v == NULL);
    CHECK_ST(cbl_collection_view(c, NULL, &v, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_collection_view(NULL, "x", &v, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_collection_view(c, "x", NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_collection_view(c, "bad", &v, &E), CBL_OK);
    cbl_status emit_status = 0;
    CHECK_ST(cbl_view_set_map_reduce(v, map_bad_emit, NULL, NULL, "1", &emit_status, &E), CBL_OK);
    char* json = NULL;
    CHECK_ST(cbl_view_query_json(v, NULL, &json, &E), CBL_BAD_REQUEST);   /* the emit error fails the update */
    CHECK(emit_status == CBL_BAD_REQUEST);
    /* An emitter is only valid during its callback; keys keep their member order. */
    CHECK_ST(cbl_view_set_map_reduce(v, map_save_emitter, NULL, NULL, "2", NULL, &E), CBL_OK);
    CHECK_STR(KEYS(v, NULL), "[1,2,{\"z\":1,\"a\":2}]");
    CHECK_ST(cbl_emitter_emit(g_saved_emitter, "1", NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_emitter_emit(NULL, "1", NULL, &E), CBL_BAD_REQUEST);
    cbl_view_release(v);
    /* Released handles fail cleanly. */
    CHECK_ST(cbl_view_update(v, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_view_query_json(v, NULL, &json, &E), CBL_BAD_REQUEST);
    cbl_view_release(v);                                   /* twice: ignored */
    cbl_query_result* r = NULL;
    CHECK_ST(cbl_collection_all_docs_query(c, NULL, &r, &E), CBL_OK);
    cbl_query_result_release(r);
    cbl_query_row row;
    int has = 7;
    CHECK_ST(cbl_query_result_next(r, &row, &has, &E), CBL_BAD_REQUEST);
    CHECK(has == 0);
    cbl_query_result_release(r);
    cbl_query_result_release(NULL);
    int stale = 5;
    CHECK_ST(cbl_query_result_is_stale(NULL, &stale, &E), CBL_BAD_REQUEST);
    CHECK(stale == 0);
    cbl_live_query_stop(NULL);
    CHECK_ST(cbl_live_query_set_options(NULL, "{}", &E), CBL_BAD_REQUEST);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

static void test_all_docs(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("alldocs", &c);
    put(c, "b", "{}");
    put(c, "a", "{}");
    put(c, "c", "{}");
    put(c, "d", "{}");
    CHECK_ST(cbl_doc_delete(c, "c", NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_doc_put_existing(c, "e", "{\"n\":1}", "[\"1-x\"]", &E), CBL_OK);
    CHECK_ST(cbl_doc_put_existing(c, "e", "{\"n\":2}", "[\"2-y\",\"1-x\"]", &E), CBL_OK);
    CHECK_ST(cbl_doc_put_existing(c, "e", "{\"n\":3}", "[\"2-z\",\"1-x\"]", &E), CBL_OK);
    CHECK_STR(ALLDOCS(c, NULL), "a|b|d|e");
    CHECK_STR(ALLDOCS(c, "{\"all_docs_mode\":\"include_deleted\"}"), "a|b|c|d|e");
    CHECK_STR(ALLDOCS(c, "{\"all_docs_mode\":\"only_conflicts\"}"), "e");
    CHECK_STR(ALLDOCS(c, "{\"descending\":true,\"limit\":2}"), "e|d");
    CHECK_STR(ALLDOCS(c, "{\"startkey\":\"b\",\"endkey\":\"e\",\"inclusive_end\":false}"), "b|d");
    CHECK_STR(ALLDOCS(c, "{\"keys\":[\"d\",\"nope\",\"c\"]}"), "d|not_found|c");
    CHECK_STR(ALLDOCS(c, "{\"all_docs_mode\":\"by_sequence\",\"startkey\":2,\"endkey\":5}"), "a|d|c");
    CHECK_STR(rows_of(NULL, c, "{\"all_docs_mode\":\"by_sequence\",\"startkey\":2,\"endkey\":5}", KEY, B, sizeof B), "2|4|5");
    char* json = NULL;
    CHECK_ST(cbl_collection_all_docs(c, "{\"all_docs_mode\":\"show_conflicts\",\"startkey\":\"e\"}", &json, &E), CBL_OK);
    /* offset: the rows before the start key (a, b, d), as CouchDB counts it */
    CHECK_STR(json, "{\"total_rows\":4,\"offset\":3,\"update_seq\":8,\"rows\":[{\"id\":\"e\",\"key\":\"e\",\"value\":{\"rev\":\"2-z\",\"_conflicts\":[\"2-y\"]},\"seq\":8}]}");
    cbl_free(json);
    CHECK_ST(cbl_collection_all_docs(c, "{\"descending\":true,\"startkey\":\"b\",\"skip\":1}", &json, &E), CBL_OK);
    CHECK(json != NULL && strstr(json, "\"offset\":3,") != NULL);       /* e, d before b; skip 1 */
    cbl_free(json);
    /* keys with descending come reversed, then skip and limit */
    CHECK_STR(ALLDOCS(c, "{\"keys\":[\"d\",\"nope\",\"a\",\"b\"],\"descending\":true,\"skip\":1,\"limit\":2}"), "a|not_found");
    /* conflicts with include_docs: the document carries its _conflicts */
    CHECK_ST(cbl_collection_all_docs(c, "{\"key\":\"e\",\"include_docs\":true,\"conflicts\":true}", &json, &E), CBL_OK);
    CHECK(json != NULL && strstr(json, "\"doc\":{\"_id\":\"e\",\"_rev\":\"2-z\",\"_conflicts\":[\"2-y\"]") != NULL);
    cbl_free(json);
    CHECK_ST(cbl_collection_all_docs(c, "{\"key\":\"a\",\"include_docs\":true}", &json, &E), CBL_OK);
    CHECK(json != NULL && strstr(json, "\"doc\":{\"_id\":\"a\"") != NULL);
    cbl_free(json);
    json = (char*)1;
    CHECK_ST(cbl_collection_all_docs(c, "{\"all_docs_mode\":\"weird\"}", &json, &E), CBL_BAD_REQUEST);
    CHECK(json == NULL);
    CHECK_ST(cbl_collection_all_docs(c, "{\"startkey\":5}", &json, &E), CBL_BAD_REQUEST);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* ---- Pages of rows (cbl_query_result_next_rows) ----------------------------------- */

/* The rows of a query read one by one, copied: what every page must reproduce. */
typedef struct ref_rows { int n; char** key; char** id; char** value; char** doc; } ref_rows;

static char* dup_or_null(const char* s) { return s ? strdup(s) : NULL; }

static ref_rows reference_rows(cbl_view* v, cbl_collection* all_docs, const char* options) {
    ref_rows ref = {0, NULL, NULL, NULL, NULL};
    cbl_query_result* r = NULL;
    cbl_status st = v ? cbl_view_query(v, options, &r, &E) : cbl_collection_all_docs_query(all_docs, options, &r, &E);
    CHECK(st == CBL_OK);
    if (st != CBL_OK) return ref;
    cbl_query_row row;
    int has = 0, cap = 0;
    while (cbl_query_result_next(r, &row, &has, &E) == CBL_OK && has) {
        if (ref.n == cap) {
            cap = cap ? cap * 2 : 64;
            ref.key = realloc(ref.key, cap * sizeof(char*));
            ref.id = realloc(ref.id, cap * sizeof(char*));
            ref.value = realloc(ref.value, cap * sizeof(char*));
            ref.doc = realloc(ref.doc, cap * sizeof(char*));
        }
        ref.key[ref.n] = strdup(row.key_json);
        ref.id[ref.n] = dup_or_null(row.doc_id);
        ref.value[ref.n] = dup_or_null(row.value_json);
        ref.doc[ref.n] = dup_or_null(row.doc_json);
        ref.n++;
    }
    cbl_query_result_release(r);
    return ref;
}

static void free_ref(ref_rows* ref) {
    for (int i = 0; i < ref->n; i++) { free(ref->key[i]); free(ref->id[i]); free(ref->value[i]); free(ref->doc[i]); }
    free(ref->key); free(ref->id); free(ref->value); free(ref->doc);
}

static int same_text(const char* a, const char* b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

/* Checks rows[0..n-1] against the reference from row `at` on, after the call that
 * filled them returned: every row of a page must still be intact, not only the last. */
static int page_matches(const cbl_query_row* rows, size_t n, const ref_rows* ref, int at) {
    for (size_t i = 0; i < n; i++) {
        int j = at + (int)i;
        if (j >= ref->n) return 0;
        if (!same_text(rows[i].key_json, ref->key[j]) || !same_text(rows[i].doc_id, ref->id[j]) ||
            !same_text(rows[i].value_json, ref->value[j]) || !same_text(rows[i].doc_json, ref->doc[j])) {
            fprintf(stderr, "    row %d of the result (%zu of a page of %zu) differs: key %s id %s\n", j, i, n,
                    rows[i].key_json ? rows[i].key_json : "(null)", rows[i].doc_id ? rows[i].doc_id : "(null)");
            return 0;
        }
    }
    return 1;
}

/* Reads a whole query in pages of `capacity` rows and compares them with the rows read
 * one by one. Only the last page may be short; the end gives 0 rows, twice. */
static void check_pages(cbl_view* v, cbl_collection* all_docs, const char* options, size_t capacity, int min_rows) {
    ref_rows ref = reference_rows(v, all_docs, options);
    CHECK(ref.n >= min_rows);
    cbl_query_result* r = NULL;
    cbl_status st = v ? cbl_view_query(v, options, &r, &E) : cbl_collection_all_docs_query(all_docs, options, &r, &E);
    CHECK(st == CBL_OK);
    cbl_query_row* rows = calloc(capacity, sizeof *rows);
    int at = 0, ok = 1, short_pages = 0;
    size_t n = 0;
    while ((st = cbl_query_result_next_rows(r, rows, capacity, &n, &E)) == CBL_OK && n > 0) {
        if (!page_matches(rows, n, &ref, at)) ok = 0;
        if (n < capacity) short_pages++;
        at += (int)n;
    }
    CHECK(st == CBL_OK);
    if (!ok || at != ref.n || short_pages > 1)
        fprintf(stderr, "    (query %s, pages of %zu: %d of %d rows, %d short pages)\n", options, capacity, at, ref.n, short_pages);
    CHECK(ok);
    CHECK(at == ref.n);
    CHECK(short_pages <= 1);
    n = 99;
    CHECK_ST(cbl_query_result_next_rows(r, rows, capacity, &n, &E), CBL_OK);
    CHECK(n == 0);
    free(rows);
    cbl_query_result_release(r);
    free_ref(&ref);
}

/* cbl_query_result_next and _next_rows taking turns on one result: each continues where
 * the other stopped (every row checked right after the call that read it). */
static void check_mixed(cbl_view* v, const char* options) {
    ref_rows ref = reference_rows(v, NULL, options);
    cbl_query_result* r = NULL;
    CHECK_ST(cbl_view_query(v, options, &r, &E), CBL_OK);
    cbl_query_row rows[300], row;
    size_t n = 0;
    int has = 0, at = 0, ok = 1, turn = 0;
    for (;;) {
        if (turn % 3 == 0) {
            if (cbl_query_result_next(r, &row, &has, &E) != CBL_OK || !has) break;
            if (!page_matches(&row, 1, &ref, at)) ok = 0;
            at++;
        } else {
            size_t cap = turn % 3 == 1 ? 5 : 300;
            if (cbl_query_result_next_rows(r, rows, cap, &n, &E) != CBL_OK || n == 0) break;
            if (!page_matches(rows, n, &ref, at)) ok = 0;
            at += (int)n;
        }
        turn++;
    }
    CHECK(ok);
    CHECK(at == ref.n);
    CHECK(turn > 6);
    cbl_query_result_release(r);
    free_ref(&ref);
}

static void test_pages_of_rows(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("pages", &c);
    put_many(db, c, "p%05d", 5000, "{\"k\":%d}", 3);
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "mod3", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, "_count", "1", NULL, &E), CBL_OK);
    /* Map rows: one key (1,667 rows, one index page) and the whole index (5,000 rows, three
     * index pages of 2,048: pages of 7 and 4,096 rows span them). */
    size_t caps[] = {1, 7, 4096, 100000};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        check_pages(v, NULL, "{\"key\":1,\"reduce\":false}", caps[i], 1667);
        check_pages(v, NULL, "{\"reduce\":false}", caps[i], 5000);
    }
    check_pages(v, NULL, "{\"reduce\":false,\"descending\":true,\"skip\":10,\"limit\":3000}", 7, 3000);
    check_pages(v, NULL, "{\"keys\":[2,0],\"reduce\":false}", 1000, 3333);
    /* include_docs: every row's document of a page stays valid. */
    check_pages(v, NULL, "{\"startkey\":0,\"endkey\":0,\"reduce\":false,\"include_docs\":true,\"limit\":300}", 64, 300);
    /* Reduced and grouped rows (_count by SQL; a reduce callback through the engine). */
    check_pages(v, NULL, NULL, 4, 1);
    check_pages(v, NULL, "{\"group\":true}", 2, 3);
    reduce_ctx rctx = {0, 0, 0};
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, reduce_count, NULL, "1", &rctx, &E), CBL_OK);
    check_pages(v, NULL, "{\"group\":true}", 2, 3);
    CHECK_STR(VALUES(v, "{\"group\":true}"), "1667|1667|1666");
    /* All-docs results (pages of 256 documents inside), with and without documents. */
    check_pages(NULL, c, NULL, 7, 5000);
    check_pages(NULL, c, "{\"limit\":700,\"include_docs\":true}", 300, 700);
    check_pages(NULL, c, "{\"keys\":[\"p00003\",\"nope\",\"p00001\"]}", 2, 3);
    check_mixed(v, "{\"reduce\":false}");

    /* Bad arguments: 400, *out_count 0, nothing written. */
    cbl_query_result* r = NULL;
    CHECK_ST(cbl_view_query(v, "{\"reduce\":false}", &r, &E), CBL_OK);
    cbl_query_row rows[8];
    memset(rows, 0xAB, sizeof rows);
    size_t n = 99;
    CHECK_ST(cbl_query_result_next_rows(r, NULL, 8, &n, &E), CBL_BAD_REQUEST);
    CHECK(n == 0);
    n = 99;
    CHECK_ST(cbl_query_result_next_rows(r, rows, 0, &n, &E), CBL_BAD_REQUEST);
    CHECK(n == 0);
    CHECK_ST(cbl_query_result_next_rows(r, rows, 8, NULL, &E), CBL_BAD_REQUEST);
    n = 99;
    CHECK_ST(cbl_query_result_next_rows(r, rows, SIZE_MAX, &n, &E), CBL_BAD_REQUEST);
    CHECK(n == 0);
    CHECK_ST(cbl_query_result_next_rows(r, rows, SIZE_MAX / sizeof(cbl_query_row) + 1, &n, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_query_result_next_rows(NULL, rows, 8, &n, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_query_result_next_rows((cbl_query_result*)v, rows, 8, &n, &E), CBL_BAD_REQUEST);   /* another type */
    char junk[64] = {0};
    CHECK_ST(cbl_query_result_next_rows((cbl_query_result*)junk, rows, 8, &n, &E), CBL_BAD_REQUEST);
    unsigned char untouched[sizeof rows];
    memset(untouched, 0xAB, sizeof untouched);
    CHECK(memcmp(rows, untouched, sizeof rows) == 0);
    /* The bad calls read nothing: the first page is still the first rows. */
    CHECK_ST(cbl_query_result_next_rows(r, rows, 8, &n, &E), CBL_OK);
    CHECK(n == 8 && rows[0].doc_id && strcmp(rows[0].doc_id, "p00000") == 0 && rows[7].doc_id && strcmp(rows[7].doc_id, "p00021") == 0);
    /* The rows of the previous call are not needed to read on; a released result is 400. */
    cbl_query_result_release(r);
    n = 99;
    CHECK_ST(cbl_query_result_next_rows(r, rows, 8, &n, &E), CBL_BAD_REQUEST);
    CHECK(n == 0);
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* Live-query callback: records the number of rows and the keys of the last result. */
typedef struct live_ctx {
    pthread_mutex_t lock;
    int calls;
    char last[1024];
    cbl_live_query* self;
    int stop_at;
} live_ctx;

static void live_cb(void* context, cbl_query_result* result) {
    live_ctx* ctx = (live_ctx*)context;
    char buf[1024] = "";
    cbl_query_row row;
    int has = 0, first = 1;
    size_t used = 0;
    while (cbl_query_result_next(result, &row, &has, NULL) == CBL_OK && has) {
        int w = snprintf(buf + used, sizeof buf - used, "%s%s", first ? "" : "|", row.key_json);
        if (w < 0 || (size_t)w >= sizeof buf - used) break;
        used += (size_t)w;
        first = 0;
    }
    pthread_mutex_lock(&ctx->lock);
    ctx->calls++;
    snprintf(ctx->last, sizeof ctx->last, "%s", buf);
    int stop = ctx->stop_at && ctx->calls >= ctx->stop_at;
    pthread_mutex_unlock(&ctx->lock);
    if (stop) cbl_live_query_stop(ctx->self);           /* stopping itself from its callback */
}

static void test_live_queries(void) {
    cbl_collection* c;
    cbl_db* db = open_fresh("live", &c);
    for (int i = 0; i < 5; i++) {
        char id[8], body[32];
        snprintf(id, sizeof id, "d%d", i);
        snprintf(body, sizeof body, "{\"k\":%d}", i);
        put(c, id, body);
    }
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "byK", &v, &E), CBL_OK);
    live_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    pthread_mutex_init(&ctx.lock, NULL);
    cbl_live_query* lq = (cbl_live_query*)1;
    CHECK_ST(cbl_live_query_start(v, NULL, live_cb, &ctx, &lq, &E), CBL_NOT_ACCEPTABLE);   /* no map yet */
    CHECK(lq == NULL);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, NULL, "1", NULL, &E), CBL_OK);
    CHECK_ST(cbl_live_query_start(v, "{\"startkey\":1,\"endkey\":3}", NULL, &ctx, &lq, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_live_query_start(v, "{\"startkey\":1,\"endkey\":3}", live_cb, &ctx, &lq, &E), CBL_OK);
    cbl_view_release(v);                                   /* the live query keeps it */
    CHECK_ST(cbl_live_query_wait_idle(lq, &E), CBL_OK);
    CHECK(ctx.calls == 1);
    CHECK_STR(ctx.last, "1|2|3");
    /* Irrelevant: out of range, in another collection, or emitting nothing. */
    put(c, "far", "{\"k\":99}");
    put(c, "nokey", "{\"x\":1}");
    cbl_collection* other = NULL;
    CHECK_ST(cbl_db_create_collection(db, NULL, "other", &other, &E), CBL_OK);
    put(other, "o", "{\"k\":2}");
    CHECK_ST(cbl_live_query_wait_idle(lq, &E), CBL_OK);
    CHECK(ctx.calls == 1);
    /* Relevant: insert, update out of the range, delete, purge. */
    put(c, "mid", "{\"k\":2.5}");
    CHECK_ST(cbl_live_query_wait_idle(lq, &E), CBL_OK);
    CHECK(ctx.calls == 2);
    CHECK_STR(ctx.last, "1|2|2.5|3");
    update(c, "d3", "{\"k\":30}");
    CHECK_ST(cbl_live_query_wait_idle(lq, &E), CBL_OK);
    CHECK_STR(ctx.last, "1|2|2.5");
    CHECK_ST(cbl_doc_delete(c, "d1", NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_live_query_wait_idle(lq, &E), CBL_OK);
    CHECK_STR(ctx.last, "2|2.5");
    CHECK_ST(cbl_doc_purge(c, "mid", &E), CBL_OK);
    CHECK_ST(cbl_live_query_wait_idle(lq, &E), CBL_OK);
    CHECK_STR(ctx.last, "2");
    CHECK(ctx.calls == 5);
    /* New options: re-runs and delivers. */
    CHECK_ST(cbl_live_query_set_options(lq, "{\"descending\":true,\"limit\":2}", &E), CBL_OK);
    CHECK_ST(cbl_live_query_wait_idle(lq, &E), CBL_OK);
    CHECK(ctx.calls == 6);
    CHECK_STR(ctx.last, "99|30");
    CHECK_ST(cbl_live_query_set_options(lq, "{\"limit\":-5}", &E), CBL_BAD_REQUEST);
    cbl_live_query_stop(lq);
    put(c, "after", "{\"k\":1000}");             /* would change its rows (descending, limit 2) */
    CHECK_ST(cbl_db_wait_notifications(db, 5000, &E), CBL_OK);
    sleep_ms(300);                                 /* time a live query would take to deliver */
    CHECK(ctx.calls == 6);
    CHECK_ST(cbl_live_query_wait_idle(lq, &E), CBL_BAD_REQUEST);   /* released */

    /* A callback may stop its own live query. */
    CHECK_ST(cbl_collection_view(c, "byK", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_k, NULL, NULL, "1", NULL, &E), CBL_OK);
    live_ctx ctx2;
    memset(&ctx2, 0, sizeof ctx2);
    pthread_mutex_init(&ctx2.lock, NULL);
    ctx2.stop_at = 2;
    CHECK_ST(cbl_live_query_start(v, "{\"key\":7}", live_cb, &ctx2, &ctx2.self, &E), CBL_OK);
    CHECK_ST(cbl_live_query_wait_idle(ctx2.self, &E), CBL_OK);
    put(c, "seven", "{\"k\":7}");
    for (int i = 0; i < 1000; i++) {                       /* until the second callback stopped it */
        pthread_mutex_lock(&ctx2.lock);
        int n = ctx2.calls;
        pthread_mutex_unlock(&ctx2.lock);
        if (n >= 2) break;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(ctx2.calls == 2);
    CHECK_STR(ctx2.last, "7");
    put(c, "seven2", "{\"k\":7}");                 /* would change its rows */
    CHECK_ST(cbl_db_wait_notifications(db, 5000, &E), CBL_OK);
    sleep_ms(300);
    CHECK(ctx2.calls == 2);
    cbl_view_release(v);
    cbl_collection_release(other);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    pthread_mutex_destroy(&ctx.lock);
    pthread_mutex_destroy(&ctx2.lock);
}

int main(int argc, char** argv) {
    if (argc == 6 && strcmp(argv[1], "--view-child") == 0) return view_child(argv[2], argv[3], argv[4], argv[5]);
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(g_root, sizeof g_root, "/tmp/cblite-views-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 2; }
    int64_t instances = cbl_instance_count();

    test_collation();
    test_options();
    test_reduce_and_group();
    test_paging_and_counts();
    test_page_boundaries();
    test_other_process_commits();
    test_redirects_among_plain_rows();
    test_incremental();
    test_number_index_then_strings();
    test_key_texts_and_equal_keys();
    test_map_sees_documents_as_read();
    test_errors_and_handles();
    test_all_docs();
    test_pages_of_rows();
    test_live_queries();

    CHECK(__atomic_load_n(&g_emit_failures, __ATOMIC_SEQ_CST) == 0);
    return finish_tests(instances);
}
