/*
 * test_javascript.c — C tests of design documents' JavaScript through libcblite.so: the
 * engine's limits (section 13 of include/cblite.h), a design document's view queried
 * by its name "DDOC/VIEW" (section 9), against the same view as a C callback, and a
 * design document's validate_doc_update refusing writes (section 5) beside a C validator,
 * and a pull that brings design documents with their revisions (section 11).
 * Prints "N passed, N failed" and exits nonzero on any failure.
 *
 *   cc -std=c99 -Wall -Wextra -Werror -g -Iinclude -o test_javascript Tests/c/test_javascript.c \
 *      -Lbuild/lib -lcblite -lpthread
 */
#define _POSIX_C_SOURCE 200809L

#include "cblite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static void test_limits(void) {
    uint32_t timeout = 0;
    uint64_t memory = 0;
    CHECK_ST(cbl_js_get_limits(&timeout, &memory, &E), CBL_OK);
    CHECK(timeout == 5000 && memory == (uint64_t)64 << 20);
    CHECK_ST(cbl_js_set_limits(250, (uint64_t)8 << 20, &E), CBL_OK);
    CHECK_ST(cbl_js_get_limits(&timeout, &memory, &E), CBL_OK);
    CHECK(timeout == 250 && memory == (uint64_t)8 << 20);
    CHECK_ST(cbl_js_set_limits(0, 1 << 20, &E), CBL_OK);          /* no time limit, the least memory */
    CHECK_ST(cbl_js_set_limits(100, (1 << 20) - 1, &E), 400);
    CHECK(strstr(E.message, "memory_bytes") != NULL);
    CHECK_ST(cbl_js_get_limits(&timeout, &memory, &E), CBL_OK);
    CHECK(timeout == 0 && memory == 1 << 20);                      /* the refused call changed nothing */
    CHECK_ST(cbl_js_get_limits(NULL, &memory, &E), 400);
    CHECK_ST(cbl_js_get_limits(&timeout, NULL, NULL), 400);
    CHECK_ST(cbl_js_set_limits(5000, (uint64_t)64 << 20, NULL), CBL_OK);
}

/* The native twin of _design/d's by_age: emit(age, name) for people. */
static void by_age(void* context, const char* doc_json, cbl_emitter* emitter) {
    (void)context;
    if (!strstr(doc_json, "\"type\":\"person\"")) return;
    const char* age = strstr(doc_json, "\"age\":");
    const char* name = strstr(doc_json, "\"name\":");
    if (!age || !name) return;
    char key[16] = "", value[64] = "";
    snprintf(key, sizeof key, "%d", atoi(age + 6));
    size_t n = strcspn(name + 8, ",}");
    if (n >= sizeof value) return;
    memcpy(value, name + 7, n + 1);
    value[n + 1] = 0;
    if (cbl_emitter_emit(emitter, key, value, NULL) != CBL_OK) abort();
}

/* A new database `name` in its own folder `sub` of the test's directory. */
static cbl_db* open_in(const char* sub, const char* name) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/%s", g_root, sub);
    mkdir(dir, 0700);
    cbl_db* db = NULL;
    CHECK_ST(cbl_db_open(name, dir, NULL, &db, &E), CBL_OK);
    return db;
}

static char* query(cbl_view* v, const char* options) {
    char* json = NULL;
    CHECK_ST(cbl_view_query_json(v, options, &json, &E), CBL_OK);
    /* Without "update_seq" (the two views' indexes were built at different points). */
    char* seq = json ? strstr(json, "\"update_seq\":") : NULL;
    if (seq) { char* end = strchr(seq, ','); memmove(seq, end + 1, strlen(end + 1) + 1); }
    return json;
}

static void test_design_view_by_name(void) {
    cbl_db* db = open_in("views", "js");
    cbl_collection* c = default_coll(db);
    const char* people[] = {"{\"type\":\"person\",\"age\":31,\"name\":\"ann\"}", "{\"type\":\"person\",\"age\":30,\"name\":\"bob\"}",
                            "{\"type\":\"pet\",\"age\":3,\"name\":\"rex\"}", "{\"type\":\"person\",\"age\":31,\"name\":\"cy\"}"};
    for (int i = 0; i < 4; i++) {
        char id[8];
        snprintf(id, sizeof id, "p%d", i);
        CHECK_ST(cbl_doc_put(c, id, people[i], NULL, 0, NULL, NULL, &E), CBL_OK);
    }
    CHECK_ST(cbl_doc_put(c, "_design/d", "{\"views\":{\"by_age\":{\"map\":\"function (doc) { if (doc.type == 'person') emit(doc.age, doc.name); }\","
                         "\"reduce\":\"_count\"},\"slow\":{\"map\":\"function (doc) { if (doc.name == 'bob') for (;;) {} emit(doc.name); }\"}}}",
                         NULL, 0, NULL, NULL, &E), CBL_OK);
    cbl_view *js = NULL, *native = NULL;
    CHECK_ST(cbl_collection_view(c, "d/by_age", &js, &E), CBL_OK);
    CHECK_ST(cbl_collection_view(c, "native", &native, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(native, by_age, NULL, "_count", "1", NULL, &E), CBL_OK);
    const char* options[] = {"{\"reduce\":false}", "{}", "{\"group\":true}", "{\"reduce\":false,\"descending\":true,\"limit\":2}",
                             "{\"reduce\":false,\"key\":31}", "{\"reduce\":false,\"sorted\":false}"};
    for (int i = 0; i < 6; i++) {
        char* a = query(js, options[i]);
        char* b = query(native, options[i]);
        CHECK(a && b && strcmp(a, b) == 0);
        if (a && b && strcmp(a, b) != 0) fprintf(stderr, "    %s\n    js:     %s\n    native: %s\n", options[i], a, b);
        cbl_free(a);
        cbl_free(b);
    }
    char* grouped = query(js, "{\"group\":true}");
    CHECK(grouped && strstr(grouped, "{\"key\":30,\"value\":1},{\"key\":31,\"value\":2}"));
    cbl_free(grouped);
    /* An endless loop in the map skips its document only, within the time limit. */
    CHECK_ST(cbl_js_set_limits(200, (uint64_t)16 << 20, &E), CBL_OK);
    cbl_view* slow = NULL;
    CHECK_ST(cbl_collection_view(c, "d/slow", &slow, &E), CBL_OK);
    char* rows = query(slow, "{}");
    CHECK(rows && strstr(rows, "\"total_rows\":3") && !strstr(rows, "\"bob\""));
    cbl_free(rows);
    CHECK_ST(cbl_js_set_limits(5000, (uint64_t)64 << 20, &E), CBL_OK);
    cbl_view_release(slow);
    cbl_view_release(js);
    cbl_view_release(native);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* A JavaScript reduce as CouchDB calls it: keys as [key, doc ID] pairs, and every value
 * answered out of a final rereduce (here: a reduce that reports what it saw). */
static void test_reduce_as_couchdb(void) {
    cbl_db* db = open_in("reduce", "jsreduce");
    cbl_collection* c = default_coll(db);
    CHECK_ST(cbl_doc_put(c, "a", "{\"k\":1}", NULL, 0, NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_doc_put(c, "b", "{\"k\":2}", NULL, 0, NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_doc_put(c, "c", "{\"k\":2}", NULL, 0, NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_doc_put(c, "_design/r", "{\"views\":{\"seen\":{\"map\":\"function (doc) { emit(doc.k, null); }\","
                         "\"reduce\":\"function (keys, values, rereduce) { if (rereduce) return values.join('|') + '|re';"
                         " return keys.map(function (k) { return k.join(':'); }).join(','); }\"}}}",
                         NULL, 0, NULL, NULL, &E), CBL_OK);
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "r/seen", &v, &E), CBL_OK);
    char* all = query(v, "{}");
    CHECK(all && strstr(all, "{\"key\":null,\"value\":\"1:a,2:b,2:c|re\"}"));
    char* grouped = query(v, "{\"group\":true}");
    CHECK(grouped && strstr(grouped, "{\"key\":1,\"value\":\"1:a|re\"},{\"key\":2,\"value\":\"2:b,2:c|re\"}"));
    if (!all || !grouped || !strstr(grouped, "2:b,2:c|re")) fprintf(stderr, "    %s\n    %s\n", all, grouped);
    cbl_free(all);
    cbl_free(grouped);
    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

static int refuse_native(void* context, const char* new_json, const char* current_json, char* message, size_t size) {
    (void)context;
    (void)current_json;
    if (!strstr(new_json, "\"native\"")) return 1;
    snprintf(message, size, "native says no");
    return 0;
}

static void test_validate_doc_update(void) {
    cbl_db* db = open_in("validation", "vdu");
    cbl_collection* c = default_coll(db);
    char* rev = NULL;
    CHECK_ST(cbl_doc_put(c, "keep", "{\"keep\":true}", NULL, 0, NULL, &rev, &E), CBL_OK);
    CHECK_ST(cbl_doc_put(c, "_design/v", "{\"validate_doc_update\":\"function (newDoc, oldDoc, userCtx) { "
                         "if (newDoc.forbid) throw({forbidden: 'no ' + newDoc._id}); "
                         "if (newDoc.login) throw({unauthorized: 'log in'}); "
                         "if (newDoc.who) throw({forbidden: JSON.stringify(userCtx)}); "
                         "if (newDoc._deleted && oldDoc.keep) throw({forbidden: 'keep ' + oldDoc._rev}); }\"}",
                         NULL, 0, NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_doc_put(c, "a", "{\"forbid\":1}", NULL, 0, NULL, NULL, &E), CBL_FORBIDDEN);
    CHECK(strcmp(E.message, "no a") == 0);
    CHECK_ST(cbl_doc_put(c, "a", "{\"login\":1}", NULL, 0, NULL, NULL, &E), CBL_UNAUTHORIZED);
    CHECK(strcmp(E.message, "log in") == 0);
    /* The API's writes are the documented local user. */
    CHECK_ST(cbl_doc_put(c, "a", "{\"who\":1}", NULL, 0, NULL, NULL, &E), CBL_FORBIDDEN);
    CHECK(strcmp(E.message, "{\"db\":\"vdu\",\"name\":null,\"roles\":[\"_admin\"]}") == 0);
    char expected[128];
    snprintf(expected, sizeof expected, "keep %s", rev ? rev : "?");
    CHECK_ST(cbl_doc_delete(c, "keep", NULL, NULL, &E), CBL_FORBIDDEN);
    CHECK(strcmp(E.message, expected) == 0);
    CHECK_ST(cbl_doc_put_existing(c, "pulled", "{\"forbid\":1}", "[\"1-abc\"]", &E), CBL_FORBIDDEN);
    /* The C validator runs first, the JavaScript one after it. */
    CHECK_ST(cbl_collection_set_validator(c, "native", refuse_native, NULL, &E), CBL_OK);
    CHECK_ST(cbl_doc_put(c, "b", "{\"native\":1,\"forbid\":1}", NULL, 0, NULL, NULL, &E), CBL_FORBIDDEN);
    CHECK(strcmp(E.message, "native says no") == 0);
    CHECK_ST(cbl_doc_put(c, "b", "{\"ok\":1}", NULL, 0, NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_collection_set_validator(c, "native", NULL, NULL, &E), CBL_OK);
    cbl_free(rev);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* A design document is checked as it is written (CouchDB's rule): a view whose map does not
 * compile, or a shape CouchDB refuses, is a 400 naming which, and nothing is stored. */
static void test_design_documents_checked_when_written(void) {
    cbl_db* db = open_in("ddoc-check", "check");
    cbl_collection* c = default_coll(db);
    CHECK_ST(cbl_doc_put(c, "_design/broken", "{\"views\":{\"v\":{\"map\":\"function (doc) { emit(doc.a; }\"}}}",
                         NULL, 0, NULL, NULL, &E), 400);
    CHECK(E.detail == CBL_DETAIL_COMPILATION_ERROR);
    CHECK_ST(cbl_doc_put(c, "_design/shape", "{\"views\":{\"v\":{\"reduce\":\"_count\"}}}", NULL, 0, NULL, NULL, &E), 400);
    CHECK(E.detail == CBL_DETAIL_INVALID_DESIGN_DOC);
    /* An expression that loops as it is evaluated never gives a function: 400 too. */
    CHECK_ST(cbl_js_set_limits(200, (uint64_t)16 << 20, &E), CBL_OK);
    CHECK_ST(cbl_doc_put(c, "_design/loop", "{\"views\":{\"v\":{\"map\":\"(function () { for (;;) {} })()\"}}}",
                         NULL, 0, NULL, NULL, &E), 400);
    CHECK(E.detail == CBL_DETAIL_COMPILATION_ERROR && strstr(E.message, "execution timeout"));
    CHECK_ST(cbl_js_set_limits(5000, (uint64_t)64 << 20, &E), CBL_OK);
    char* doc = NULL;
    CHECK_ST(cbl_doc_get(c, "_design/broken", 0, &doc, &E), CBL_NOT_FOUND);
    CHECK_ST(cbl_doc_put(c, "_design/sound", "{\"views\":{\"v\":{\"map\":\"function (doc) { emit(doc.a); }\",\"reduce\":\"_approx_count_distinct\"}}}",
                         NULL, 0, NULL, NULL, &E), CBL_OK);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* A pull from a database holding a design document stores it with its revision (the
 * second here), and its JavaScript view then runs on the pulled documents. */
static void test_pull_of_design_documents(void) {
    cbl_db* source = open_in("pull-source", "source");
    cbl_db* target = open_in("pull-target", "target");
    cbl_collection* sc = default_coll(source);
    cbl_collection* tc = default_coll(target);
    char *rev1 = NULL, *rev2 = NULL;
    CHECK_ST(cbl_doc_put(sc, "_design/app", "{\"views\":{\"v\":{\"map\":\"function (doc) { emit(doc.n, null); }\"}}}",
                         NULL, 0, NULL, &rev1, &E), CBL_OK);
    CHECK_ST(cbl_doc_put(sc, "_design/app", "{\"views\":{\"v\":{\"map\":\"function (doc) { if (doc.n) emit(doc.n, doc.n); }\",\"reduce\":\"_sum\"}}}",
                         rev1, 0, NULL, &rev2, &E), CBL_OK);
    CHECK_ST(cbl_doc_put(sc, "a", "{\"n\":2}", NULL, 0, NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_doc_put(sc, "b", "{\"n\":3}", NULL, 0, NULL, NULL, &E), CBL_OK);
    cbl_server* server = NULL;
    CHECK_ST(cbl_server_start("{\"port\":0}", &server, &E), CBL_OK);
    CHECK_ST(cbl_server_serve(server, "source", source, &E), CBL_OK);
    uint16_t port = 0;
    CHECK_ST(cbl_server_port(server, &port, &E), CBL_OK);
    char config[160];
    snprintf(config, sizeof config, "{\"url\":\"http://127.0.0.1:%u/source\",\"direction\":\"pull\"}", (unsigned)port);
    cbl_replicator* r = NULL;
    CHECK_ST(cbl_replicator_start(tc, config, NULL, NULL, NULL, &r, &E), CBL_OK);
    CHECK_ST(cbl_replicator_wait(r, 60000, &E), CBL_OK);
    cbl_replicator_stop(r);
    char* doc = NULL;
    CHECK_ST(cbl_doc_get(tc, "_design/app", 0, &doc, &E), CBL_OK);
    char want[100];
    snprintf(want, sizeof want, "\"_rev\":\"%s\"", rev2);
    CHECK(doc && rev2 && strstr(doc, want) && strncmp(rev2, "2-", 2) == 0);
    cbl_free(doc);
    cbl_free(rev1);
    cbl_free(rev2);
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(tc, "app/v", &v, &E), CBL_OK);
    char* rows = query(v, "{}");
    CHECK(rows && strstr(rows, "{\"key\":null,\"value\":5}"));
    if (rows && !strstr(rows, "\"value\":5")) fprintf(stderr, "    %s\n", rows);
    cbl_free(rows);
    cbl_view_release(v);
    cbl_server_stop(server, 1000);
    cbl_collection_release(sc);
    cbl_collection_release(tc);
    CHECK_ST(cbl_db_close(source, &E), CBL_OK);
    CHECK_ST(cbl_db_close(target, &E), CBL_OK);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(g_root, sizeof g_root, "/tmp/cblite-js-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 2; }
    int64_t instances = cbl_instance_count();
    test_limits();
    test_design_view_by_name();
    test_reduce_as_couchdb();
    test_validate_doc_update();
    test_design_documents_checked_when_written();
    test_pull_of_design_documents();
    return finish_tests(instances);
}
