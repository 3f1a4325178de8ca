/*
 * install_app.c — built against an installed libcblite exactly as a user would:
 *
 *   cc app.c $(pkg-config --cflags --libs cblite)
 *
 * Opens a database in a temporary directory, saves and reads back a document, prints its
 * revision, closes. Exit status 0 on success.
 */
#define _POSIX_C_SOURCE 200809L

#include <cblite.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char* what, const cbl_error* err) {
    fprintf(stderr, "install_app: %s failed: %d %s\n", what, (int)err->code, err->message);
    return 1;
}

int main(void) {
    char dir[] = "/tmp/cblite-install-app-XXXXXX";
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    cbl_error err;
    cbl_db* db = NULL;
    cbl_collection* coll = NULL;
    char *rev = NULL, *json = NULL;
    int rc = 1;

    if (cbl_db_open("app", dir, NULL, &db, &err) != CBL_OK) { rc = fail("cbl_db_open", &err); goto out; }
    if (cbl_db_default_collection(db, &coll, &err) != CBL_OK) { rc = fail("cbl_db_default_collection", &err); goto out; }
    if (cbl_doc_put(coll, "hello", "{\"greeting\":\"hello, world\"}", NULL, 0, NULL, &rev, &err) != CBL_OK) {
        rc = fail("cbl_doc_put", &err);
        goto out;
    }
    if (cbl_doc_get(coll, "hello", 0, &json, &err) != CBL_OK) { rc = fail("cbl_doc_get", &err); goto out; }
    if (strstr(json, "hello, world") == NULL || strstr(json, rev) == NULL) {
        fprintf(stderr, "install_app: unexpected document %s\n", json);
        goto out;
    }
    printf("install_app: libcblite %s, saved \"hello\" as revision %s\n", cbl_version(), rev);
    rc = 0;
out:
    cbl_free(rev);
    cbl_free(json);
    cbl_collection_release(coll);
    if (db && cbl_db_close(db, &err) != CBL_OK) rc = fail("cbl_db_close", &err);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) rc = 1;
    return rc;
}
