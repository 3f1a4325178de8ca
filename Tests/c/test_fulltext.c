/*
 * test_fulltext.c — C tests of libcblite's full-text search (the "Full-text search" part
 * of include/cblite.h), through the .so: indexes created ("exists" the second time),
 * listed and deleted, searches read row by row (score, snippets, documents), ranking,
 * paging by bookmark, a selector, incremental updates, positioned query errors, handles.
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

/* The IDs a search returns, comma-separated, into buf ("ERR <code> <message>" on error);
 * checks each row's shape and that scores do not increase. */
static const char* search_ids(cbl_collection* c, const char* request, char* buf, size_t n) {
    cbl_query_result* r = NULL;
    buf[0] = 0;
    if (cbl_collection_search(c, "notes", request, &r, &E) != CBL_OK) { snprintf(buf, n, "ERR %d %s", (int)E.code, E.message); return buf; }
    cbl_query_row rows[2];
    size_t count = 0;
    double last = 1e300;
    while (cbl_query_result_next_rows(r, rows, 2, &count, &E) == CBL_OK && count > 0) {
        for (size_t i = 0; i < count; i++) {
            if (buf[0]) strncat(buf, ",", n - strlen(buf) - 1);
            strncat(buf, rows[i].doc_id, n - strlen(buf) - 1);
            double score = atof(rows[i].key_json);
            CHECK(score > 0 && score <= last);
            last = score;
            CHECK(rows[i].value_json != NULL && rows[i].value_json[0] == '{' && rows[i].sequence > 0);
            CHECK(strcmp(rows[i].doc_id, rows[i].source_doc_id) == 0);
        }
    }
    cbl_query_result_release(r);
    return buf;
}

static char B[4096];

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(g_root, sizeof g_root, "/tmp/cblite-fulltext-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 2; }
    int64_t instances = cbl_instance_count();

    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    CHECK_ST(cbl_db_open("f", g_root, NULL, &db, &E), CBL_OK);
    CHECK_ST(cbl_db_default_collection(db, &c, &E), CBL_OK);
    put(c, "a", "{\"title\":\"Coffee\",\"body\":\"coffee beans, coffee grinders and more coffee\",\"year\":2020}");
    put(c, "b", "{\"title\":\"Breakfast\",\"body\":\"toast with coffee and milk\",\"year\":2021}");
    put(c, "c", "{\"title\":\"Tea\",\"body\":\"green tea, no milk\",\"year\":2022}");
    put(c, "d", "{\"title\":\"Caf\\u00e9s of Paris\",\"body\":\"a long walk from caf\\u00e9 to caf\\u00e9, with a coffee at the end of the day\",\"year\":2023}");

    /* Created, then "exists"; listed. */
    const char* def = "{\"name\":\"notes\",\"ddoc\":\"text\",\"fields\":[\"title\",\"body\"],\"analyzer\":{\"stemming\":true}}";
    CHECK_OUT(cbl_collection_create_text_index(c, def, &J, &E), CBL_OK,
              strstr(J, "\"result\":\"created\"") && strstr(J, "\"id\":\"_design/text\"") && strstr(J, "\"name\":\"notes\""));
    CHECK_OUT(cbl_collection_create_text_index(c, def, &J, &E), CBL_OK, strstr(J, "\"result\":\"exists\""));
    CHECK_OUT(cbl_collection_text_indexes(c, &J, &E), CBL_OK,
              strstr(J, "\"type\":\"text\"") && strstr(J, "{\"title\":\"string\"}") && strstr(J, "\"stemming\":true"));
    CHECK_OUT(cbl_doc_get(c, "_design/text", 0, &J, &E), CBL_OK, strstr(J, "\"language\":\"query\"") && strstr(J, "\"indexes\""));

    /* Ranking, operators, fields, folding and stemming. */
    CHECK(strcmp(search_ids(c, "{\"query\":\"coffee\"}", B, sizeof B), "a,b,d") == 0);
    CHECK(strcmp(search_ids(c, "{\"query\":\"milk NOT tea\"}", B, sizeof B), "b") == 0);
    CHECK(strcmp(search_ids(c, "{\"query\":\"\\\"green tea\\\" OR toast\"}", B, sizeof B), "b,c") == 0
          || strcmp(B, "c,b") == 0);
    CHECK(strcmp(search_ids(c, "{\"query\":\"coffee NEAR/2 milk\"}", B, sizeof B), "b") == 0);
    CHECK(strcmp(search_ids(c, "{\"query\":\"title:cafe\"}", B, sizeof B), "d") == 0);
    CHECK(strcmp(search_ids(c, "{\"query\":\"grinder\"}", B, sizeof B), "a") == 0);
    CHECK(strcmp(search_ids(c, "{\"query\":\"coff*\",\"fields\":[\"title\"]}", B, sizeof B), "a") == 0);
    CHECK(strcmp(search_ids(c, "{\"query\":\"coffee\",\"selector\":{\"year\":{\"$gte\":2021}}}", B, sizeof B), "b,d") == 0);

    /* One row in full: score, snippets of the matched fields, the document. */
    cbl_query_result* r = NULL;
    CHECK_ST(cbl_collection_search(c, "notes", "{\"query\":\"milk\",\"include_docs\":true,\"snippets\":{\"open\":\"[\",\"close\":\"]\"}}", &r, &E), CBL_OK);
    cbl_query_row row;
    int has = 0;
    CHECK_ST(cbl_query_result_next(r, &row, &has, &E), CBL_OK);
    CHECK(has && strcmp(row.doc_id, "c") == 0);                 /* the shorter text first */
    CHECK(strcmp(row.value_json, "{\"body\":\"green tea, no [milk]\"}") == 0);
    CHECK(row.doc_json != NULL && strstr(row.doc_json, "\"_id\":\"c\"") && strstr(row.doc_json, "\"_rev\":\"1-"));
    CHECK_ST(cbl_query_result_next(r, &row, &has, &E), CBL_OK);
    CHECK(has && strcmp(row.doc_id, "b") == 0);
    CHECK_ST(cbl_query_result_next(r, &row, &has, &E), CBL_OK);
    CHECK(!has);
    CHECK_OUT(cbl_query_result_search_info(r, &J, &E), CBL_OK, strstr(J, "\"bookmark\":\"") && strstr(J, "\"total_rows\":2"));
    CHECK_OUT(cbl_query_result_find_info(r, &J, &E), 400, 1);
    cbl_query_result_release(r);

    /* Paging with the bookmark gives the same hits as one page. */
    char all[256], paged[256] = "", req[512];
    snprintf(all, sizeof all, "%s", search_ids(c, "{\"query\":\"coffee OR milk OR tea\"}", B, sizeof B));
    char* bookmark = NULL;
    for (int page = 0; page < 10; page++) {
        if (bookmark) snprintf(req, sizeof req, "{\"query\":\"coffee OR milk OR tea\",\"limit\":1,\"bookmark\":\"%s\"}", bookmark);
        else snprintf(req, sizeof req, "{\"query\":\"coffee OR milk OR tea\",\"limit\":1}");
        cbl_free(bookmark);
        bookmark = NULL;
        CHECK_ST(cbl_collection_search(c, "notes", req, &r, &E), CBL_OK);
        CHECK_ST(cbl_query_result_next(r, &row, &has, &E), CBL_OK);
        if (has) {
            if (paged[0]) strcat(paged, ",");
            strcat(paged, row.doc_id);
        }
        char* info = NULL;
        CHECK_ST(cbl_query_result_search_info(r, &info, &E), CBL_OK);
        char* b = info ? strstr(info, "\"bookmark\":\"") : NULL;
        if (b) {
            b += strlen("\"bookmark\":\"");
            char* end = strchr(b, '"');
            *end = 0;
            bookmark = cbl_strdup(b);
        }
        cbl_free(info);
        cbl_query_result_release(r);
        if (!has) break;
    }
    cbl_free(bookmark);
    CHECK(strcmp(all, paged) == 0 && strcmp(all, "ERR") != 0);

    /* A search sees the writes before it; deleted documents leave at once. */
    put(c, "e", "{\"title\":\"Iced coffee\",\"body\":\"cold\"}");
    CHECK(strstr(search_ids(c, "{\"query\":\"iced\"}", B, sizeof B), "e") != NULL);
    char* rev = NULL;
    CHECK_ST(cbl_doc_delete(c, "e", NULL, &rev, &E), CBL_OK);
    cbl_free(rev);
    CHECK(strcmp(search_ids(c, "{\"query\":\"iced\"}", B, sizeof B), "") == 0);

    /* Errors: the query's position; unknown index and fields; bad requests. */
    CHECK_ST(cbl_collection_search(c, "notes", "{\"query\":\"coffee AND\"}", &r, &E), 400);
    CHECK(r == NULL && strstr(E.message, "AND needs a term after it at position 7") != NULL);
    CHECK_ST(cbl_collection_search(c, "notes", "{\"query\":\"author:x\"}", &r, &E), 400);
    CHECK(strstr(E.message, "unknown field 'author'") != NULL);
    CHECK_ST(cbl_collection_search(c, "nope", "{\"query\":\"coffee\"}", &r, &E), 404);
    CHECK_ST(cbl_collection_search(c, "notes", "{\"q\":\"coffee\"}", &r, &E), 400);
    CHECK_ST(cbl_collection_search(c, "notes", NULL, &r, &E), 400);
    CHECK_OUT(cbl_collection_create_text_index(c, "{\"name\":\"x\",\"fields\":[]}", &J, &E), 400, 1);
    CHECK_OUT(cbl_query_result_search_info(NULL, &J, &E), 400, 1);

    /* Deleted: the design document goes with it; then 404. */
    CHECK_ST(cbl_collection_delete_text_index(c, NULL, "notes", &E), CBL_OK);
    CHECK_OUT(cbl_doc_get(c, "_design/text", 0, &J, &E), 404, 1);
    CHECK_ST(cbl_collection_delete_text_index(c, "text", "notes", &E), 404);
    CHECK_OUT(cbl_collection_text_indexes(c, &J, &E), CBL_OK, strcmp(J, "[]") == 0);

    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    return finish_tests(instances);
}
