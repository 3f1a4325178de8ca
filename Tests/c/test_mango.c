/*
 * test_mango.c — C tests of libcblite's Mango queries and json indexes (the "Mango
 * queries" part of include/cblite.h), through the .so: find read row by row, indexes
 * created, listed and deleted, explain, the find info (bookmark, warning, statistics),
 * CouchDB's error texts, a query seeing its own writes, live finds, and handles.
 * Prints "N passed, N failed" and exits nonzero on any failure.
 */
#define _POSIX_C_SOURCE 200809L

#include "cblite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

static void put(cbl_collection* c, const char* id, const char* body) {
    char* rev = NULL;
    CHECK_ST(cbl_doc_put(c, id, body, NULL, 0, NULL, &rev, &E), CBL_OK);
    cbl_free(rev);
}

/* The IDs a find returns, comma-separated, into buf ("" when none; "ERR" on error). */
static const char* find_ids(cbl_collection* c, const char* query, char* buf, size_t n) {
    cbl_query_result* r = NULL;
    buf[0] = 0;
    if (cbl_collection_find(c, query, &r, &E) != CBL_OK) { snprintf(buf, n, "ERR %d %s", (int)E.code, E.message); return buf; }
    cbl_query_row rows[3];
    size_t count = 0;
    while (cbl_query_result_next_rows(r, rows, 3, &count, &E) == CBL_OK && count > 0) {
        for (size_t i = 0; i < count; i++) {
            if (buf[0]) strncat(buf, ",", n - strlen(buf) - 1);
            strncat(buf, rows[i].doc_id, n - strlen(buf) - 1);
            CHECK(rows[i].doc_json != NULL && rows[i].value_json == NULL && rows[i].key_json != NULL);
        }
    }
    cbl_query_result_release(r);
    return buf;
}

static char B[4096];

/* A live find's deliveries: how many, and the IDs of the last one. */
typedef struct { int calls; char ids[256]; } live_seen;

static void on_live_find(void* ctx, cbl_query_result* r) {
    live_seen* seen = ctx;
    seen->calls++;
    seen->ids[0] = 0;
    cbl_query_row row;
    int has = 0;
    cbl_error e;
    while (cbl_query_result_next(r, &row, &has, &e) == CBL_OK && has) {
        if (seen->ids[0]) strncat(seen->ids, ",", sizeof seen->ids - strlen(seen->ids) - 1);
        strncat(seen->ids, row.doc_id, sizeof seen->ids - strlen(seen->ids) - 1);
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(g_root, sizeof g_root, "/tmp/cblite-mango-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 2; }
    int64_t instances = cbl_instance_count();

    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    CHECK_ST(cbl_db_open("m", g_root, NULL, &db, &E), CBL_OK);
    CHECK_ST(cbl_db_default_collection(db, &c, &E), CBL_OK);
    put(c, "a", "{\"name\":\"Alice\",\"age\":31,\"tags\":[\"x\"]}");
    put(c, "b", "{\"name\":\"bob\",\"age\":25,\"tags\":[]}");
    put(c, "c", "{\"name\":\"Carol\",\"age\":42}");
    put(c, "d", "{\"kind\":\"thing\"}");

    /* Without an index: _all_docs order, the warning in the info. */
    CHECK(strcmp(find_ids(c, "{\"selector\":{\"age\":{\"$gt\":26}}}", B, sizeof B), "a,c") == 0);
    CHECK(strcmp(find_ids(c, "{\"selector\":{\"tags\":{\"$size\":0}}}", B, sizeof B), "b") == 0);
    CHECK(strcmp(find_ids(c, "{\"selector\":{\"name\":{\"$regex\":\"^[ab]\"}}}", B, sizeof B), "b") == 0);
    cbl_query_result* r = NULL;
    CHECK_ST(cbl_collection_find(c, "{\"selector\":{\"age\":{\"$exists\":true}},\"limit\":2,\"execution_stats\":true}", &r, &E), CBL_OK);
    cbl_query_row row;
    int has = 0;
    CHECK_ST(cbl_query_result_next(r, &row, &has, &E), CBL_OK);
    CHECK(has && strcmp(row.doc_id, "a") == 0 && strstr(row.doc_json, "\"Alice\"") != NULL);
    CHECK_ST(cbl_query_result_next(r, &row, &has, &E), CBL_OK);
    CHECK_ST(cbl_query_result_next(r, &row, &has, &E), CBL_OK);
    CHECK(!has);
    CHECK_OUT(cbl_query_result_find_info(r, &J, &E), CBL_OK,
              strstr(J, "\"bookmark\":\"") && strstr(J, "No matching index found") && strstr(J, "\"results_returned\":2"));
    cbl_query_result_release(r);

    /* Indexes: created (then "exists"), chosen, in the collation's order, incremental. */
    CHECK_OUT(cbl_collection_create_index(c, "{\"index\":{\"fields\":[\"age\"]},\"ddoc\":\"by-age\",\"name\":\"age\"}", &J, &E),
              CBL_OK, strstr(J, "\"result\":\"created\"") && strstr(J, "\"id\":\"_design/by-age\""));
    CHECK_OUT(cbl_collection_create_index(c, "{\"index\":{\"fields\":[\"age\"]},\"ddoc\":\"by-age\",\"name\":\"age\"}", &J, &E),
              CBL_OK, strstr(J, "\"result\":\"exists\""));
    CHECK(strcmp(find_ids(c, "{\"selector\":{\"age\":{\"$gt\":0}}}", B, sizeof B), "b,a,c") == 0);
    CHECK(strcmp(find_ids(c, "{\"selector\":{\"age\":{\"$gt\":0}},\"sort\":[{\"age\":\"desc\"}]}", B, sizeof B), "c,a,b") == 0);
    put(c, "e", "{\"age\":30}");
    CHECK(strcmp(find_ids(c, "{\"selector\":{\"age\":{\"$gt\":26}}}", B, sizeof B), "e,a,c") == 0);
    CHECK_OUT(cbl_collection_explain(c, "{\"selector\":{\"age\":{\"$gt\":26}}}", &J, &E), CBL_OK,
              strstr(J, "\"name\":\"age\"") && strstr(J, "\"start_key\":[26]"));
    CHECK_OUT(cbl_collection_indexes(c, &J, &E), CBL_OK,
              strstr(J, "\"total_rows\":2") && strstr(J, "\"_all_docs\"") && strstr(J, "\"_design/by-age\""));

    /* Errors carry CouchDB's names and texts. */
    CHECK_ST(cbl_collection_find(c, "{\"selector\":{\"age\":{\"$foo\":1}}}", &r, &E), 400);
    CHECK(r == NULL && strcmp(E.message, "invalid_operator: Invalid operator: $foo") == 0);
    CHECK_ST(cbl_collection_find(c, "{\"selector\":{\"age\":{\"$gt\":0}},\"sort\":[\"name\"]}", &r, &E), 400);
    CHECK(strstr(E.message, "no_usable_index") != NULL);
    CHECK_ST(cbl_collection_find(c, NULL, &r, &E), 400);
    CHECK_OUT(cbl_collection_create_index(c, "{\"index\":{}}", &J, &E), 400, 1);
    CHECK(strcmp(E.message, "missing_required_key: Missing required key: fields") == 0);

    /* A live find: its documents first, then again only when they change. */
    live_seen seen = {0, ""};
    cbl_live_query* lf = NULL;
    CHECK_ST(cbl_collection_live_find(c, "{\"selector\":{\"age\":{\"$gt\":40}}}", on_live_find, &seen, &lf, &E), CBL_OK);
    CHECK_ST(cbl_live_query_wait_idle(lf, &E), CBL_OK);
    CHECK(seen.calls == 1 && strcmp(seen.ids, "c") == 0);
    put(c, "f", "{\"age\":50}");
    put(c, "g", "{\"age\":1}");                      /* found nowhere: no delivery */
    CHECK_ST(cbl_live_query_wait_idle(lf, &E), CBL_OK);
    CHECK(seen.calls == 2 && strcmp(seen.ids, "c,f") == 0);
    CHECK_ST(cbl_live_query_set_options(lf, "{\"selector\":{\"age\":{\"$lt\":2}}}", &E), CBL_OK);
    CHECK_ST(cbl_live_query_wait_idle(lf, &E), CBL_OK);
    CHECK(seen.calls == 3 && strcmp(seen.ids, "g") == 0);
    CHECK_ST(cbl_live_query_set_options(lf, "{\"selector\":{\"age\":{\"$foo\":1}}}", &E), 400);
    cbl_live_query_stop(lf);
    CHECK_ST(cbl_collection_live_find(c, "{\"selector\":{\"age\":{\"$foo\":1}}}", on_live_find, &seen, &lf, &E), 400);
    CHECK(lf == NULL && strstr(E.message, "invalid_operator") != NULL);
    CHECK_ST(cbl_collection_live_find(c, "{\"selector\":{}}", NULL, NULL, &lf, &E), 400);

    /* Deleting: the design document goes with its last index; then 404. */
    CHECK_ST(cbl_collection_delete_index(c, "by-age", "age", &E), CBL_OK);
    CHECK_OUT(cbl_doc_get(c, "_design/by-age", 0, &J, &E), 404, 1);
    CHECK_ST(cbl_collection_delete_index(c, "by-age", "age", &E), 404);
    CHECK_OUT(cbl_query_result_find_info(NULL, &J, &E), 400, 1);

    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    return finish_tests(instances);
}
