/*
 * test_view_fulltext.c — C tests of text keys in views (Couchbase Lite 1.x's CBLTextKey),
 * through the .so: cbl_emitter_emit_text from a map callback, queries with
 * "full_text_query" (ranking, index order, snippets, each row's match in key_json with
 * UTF-8 byte ranges), ordinary queries (key null), updates, the view's analyzer, and the
 * errors (a malformed query's position, options that do not apply, an emitter used
 * outside its callback). Prints "N passed, N failed" and exits nonzero on any failure.
 */
#define _POSIX_C_SOURCE 200809L

#include "cblite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void put(cbl_collection* c, const char* id, const char* body) {
    char* rev = NULL;
    char* old = NULL;
    const char* parent = NULL;
    if (cbl_doc_get(c, id, 0, &old, NULL) == CBL_OK) {
        parent = strstr(old, "\"_rev\":\"");
        if (parent) {
            parent += 8;
            *strchr(parent, '"') = 0;
        }
    }
    CHECK_ST(cbl_doc_put(c, id, body, parent, 0, NULL, &rev, &E), CBL_OK);
    cbl_free(rev);
    cbl_free(old);
}

static cbl_emitter* g_last_emitter;
static int g_emit_failures;

/* Emits the document's "text" (no escapes in these tests) as a text key, with its "tag"
 * (a number) as value, and "key" as an ordinary key. */
static void map_text(void* ctx, const char* doc, cbl_emitter* emitter) {
    (void)ctx;
    g_last_emitter = emitter;
    const char* t = strstr(doc, "\"text\":\"");
    if (t) {
        t += 8;
        char text[512];
        size_t n = (size_t)(strchr(t, '"') - t);
        if (n >= sizeof text) n = sizeof text - 1;
        memcpy(text, t, n);
        text[n] = 0;
        const char* tag = strstr(doc, "\"tag\":");
        char value[32] = "null";
        if (tag) snprintf(value, sizeof value, "%d", atoi(tag + 6));
        if (cbl_emitter_emit_text(emitter, text, value, NULL) != CBL_OK) g_emit_failures++;
    }
    if (strstr(doc, "\"key\":\"k\"")) {
        if (cbl_emitter_emit(emitter, "\"k\"", NULL, NULL) != CBL_OK) g_emit_failures++;
    }
}

/* The IDs a query returns, comma-separated, into buf ("ERR <code> <message>" on error);
 * with `keys`, each row's key_json appended after its ID ("id=key"). */
static const char* query_ids(cbl_view* v, const char* options, int keys, char* buf, size_t n) {
    cbl_query_result* r = NULL;
    buf[0] = 0;
    if (cbl_view_query(v, options, &r, &E) != CBL_OK) { snprintf(buf, n, "ERR %d %s", (int)E.code, E.message); return buf; }
    cbl_query_row rows[3];
    size_t count = 0;
    while (cbl_query_result_next_rows(r, rows, 3, &count, &E) == CBL_OK && count > 0) {
        for (size_t i = 0; i < count; i++) {
            if (buf[0]) strncat(buf, ",", n - strlen(buf) - 1);
            strncat(buf, rows[i].doc_id, n - strlen(buf) - 1);
            if (keys) {
                strncat(buf, "=", n - strlen(buf) - 1);
                strncat(buf, rows[i].key_json, n - strlen(buf) - 1);
            }
            CHECK(rows[i].sequence > 0);
        }
    }
    cbl_query_result_release(r);
    return buf;
}

static char B[8192];

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(g_root, sizeof g_root, "/tmp/cblite-viewfts-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 2; }
    int64_t instances = cbl_instance_count();

    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    cbl_view* v = NULL;
    CHECK_ST(cbl_db_open("v", g_root, NULL, &db, &E), CBL_OK);
    CHECK_ST(cbl_db_default_collection(db, &c, &E), CBL_OK);
    put(c, "a", "{\"text\":\"coffee coffee coffee beans\",\"tag\":1}");
    put(c, "b", "{\"text\":\"coffee and tea with milk\",\"tag\":2,\"key\":\"k\"}");
    put(c, "c", "{\"text\":\"Un caf\\u00e9 cr\\u00e8me, then coffee\",\"tag\":3}");
    put(c, "d", "{\"text\":\"The cats were typing\",\"tag\":4}");
    CHECK_ST(cbl_collection_view(c, "texts", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_text, NULL, NULL, "1", NULL, &E), CBL_OK);

    /* Ranked, index order, descending, limit/skip. */
    CHECK(strcmp(query_ids(v, "{\"full_text_query\":\"coffee\"}", 0, B, sizeof B), "a,b,c") == 0);
    CHECK(strcmp(query_ids(v, "{\"full_text_query\":\"coffee\",\"full_text_ranking\":false,\"descending\":true}", 0, B, sizeof B), "c,b,a") == 0);
    CHECK(strcmp(query_ids(v, "{\"full_text_query\":\"coffee\",\"skip\":1,\"limit\":1}", 0, B, sizeof B), "b") == 0);
    /* Stemming and stop words (the default analyzer, as 1.x). */
    CHECK(strcmp(query_ids(v, "{\"full_text_query\":\"the cat\"}", 0, B, sizeof B), "d") == 0);

    /* A row's match in key_json: the text, score, UTF-8 byte ranges, term numbers. */
    cbl_query_result* r = NULL;
    cbl_query_row row;
    int has = 0, seen = 0;
    CHECK_ST(cbl_view_query(v, "{\"full_text_query\":\"cafe OR coffee\",\"full_text_snippets\":{\"open\":\"[\",\"close\":\"]\"}}", &r, &E), CBL_OK);
    while (cbl_query_result_next(r, &row, &has, &E) == CBL_OK && has) {
        if (strcmp(row.doc_id, "c") != 0) continue;
        seen++;
        CHECK(strstr(row.key_json, "\"text\":\"Un caf\xc3\xa9 cr\xc3\xa8me, then coffee\"") != NULL);
        CHECK(strstr(row.key_json, "\"matches\":[{\"term\":0,\"range\":[3,5]},{\"term\":1,\"range\":[22,6]}]") != NULL);
        CHECK(strstr(row.key_json, "\"snippet\":\"Un [caf\xc3\xa9] cr\xc3\xa8me, then [coffee]\"") != NULL);
        CHECK(strstr(row.key_json, "\"score\":") != NULL);
        CHECK(strcmp(row.value_json, "3") == 0 && strcmp(row.source_doc_id, "c") == 0);
    }
    cbl_query_result_release(r);
    CHECK(seen == 1);
    /* The JSON form has the same rows; snippets are null unless asked for. */
    CHECK_OUT(cbl_view_query_json(v, "{\"full_text_query\":\"milk\"}", &J, &E), CBL_OK,
              strstr(J, "\"id\":\"b\"") && strstr(J, "\"snippet\":null") && strstr(J, "\"value\":2"));

    /* Ordinary queries: text keys' rows have the key null. */
    CHECK(strcmp(query_ids(v, "{\"key\":\"k\"}", 1, B, sizeof B), "b=\"k\"") == 0);
    CHECK(strcmp(query_ids(v, "{\"limit\":2}", 1, B, sizeof B), "a=null,b=null") == 0);

    /* Updates and deletions leave no stale matches. */
    put(c, "a", "{\"text\":\"still water\",\"tag\":1}");
    CHECK(strcmp(query_ids(v, "{\"full_text_query\":\"coffee\",\"full_text_ranking\":false}", 0, B, sizeof B), "b,c") == 0);
    char* rev = NULL;
    CHECK_ST(cbl_doc_delete(c, "b", NULL, &rev, &E), CBL_OK);
    cbl_free(rev);
    CHECK_ST(cbl_doc_purge(c, "c", &E), CBL_OK);
    CHECK(strcmp(query_ids(v, "{\"full_text_query\":\"coffee\"}", 0, B, sizeof B), "") == 0);
    CHECK(strcmp(query_ids(v, "{\"full_text_query\":\"water\"}", 0, B, sizeof B), "a") == 0);

    /* Another analyzer rebuilds the index: without stemming "cat" does not find "cats". */
    CHECK_ST(cbl_view_set_text_analyzer(v, "\"standard\"", &E), CBL_OK);
    CHECK(strcmp(query_ids(v, "{\"full_text_query\":\"cat\"}", 0, B, sizeof B), "") == 0);
    CHECK(strcmp(query_ids(v, "{\"full_text_query\":\"cats\"}", 0, B, sizeof B), "d") == 0);
    CHECK_ST(cbl_view_set_text_analyzer(v, "{\"stemming\":true,\"stop_words\":[\"were\"]}", &E), CBL_OK);
    CHECK(strcmp(query_ids(v, "{\"full_text_query\":\"cat\"}", 0, B, sizeof B), "d") == 0);
    CHECK_ST(cbl_view_set_text_analyzer(v, "\"klingon\"", &E), 400);
    CHECK_ST(cbl_view_set_text_analyzer(v, NULL, &E), 400);
    CHECK_ST(cbl_view_set_text_analyzer(NULL, "\"english\"", &E), 400);

    /* Errors: a malformed query's position; options that do not apply with one. */
    CHECK_ST(cbl_view_query(v, "{\"full_text_query\":\"coffee AND\"}", &r, &E), 400);
    CHECK(r == NULL && strstr(E.message, "AND needs a term after it at position 7") != NULL);
    CHECK_ST(cbl_view_query(v, "{\"full_text_query\":\"coffee\",\"keys\":[1]}", &r, &E), 400);
    CHECK_ST(cbl_view_query(v, "{\"full_text_query\":\"coffee\",\"group\":true}", &r, &E), 400);
    CHECK_ST(cbl_view_query(v, "{\"full_text_query\":7}", &r, &E), 400);
    CHECK_ST(cbl_view_query(v, "{\"full_text_query\":\"x\",\"full_text_snippets\":{\"tokens\":0}}", &r, &E), 400);
    /* The emitter outside its map callback; a NULL text fails the update with 400. */
    CHECK(g_emit_failures == 0);
    CHECK_ST(cbl_emitter_emit_text(g_last_emitter, "late", NULL, &E), 400);
    CHECK_ST(cbl_emitter_emit_text(NULL, "x", NULL, &E), 400);

    cbl_view_release(v);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    return finish_tests(instances);
}
