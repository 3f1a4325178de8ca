/*
 * test_diagnosis.c — telling a damaged database from an encrypted one, never resetting an
 * empty or missing database file, read-only opening, and salvage from a damaged page,
 * through libcblite.so as a C program sees it.
 */
#define _POSIX_C_SOURCE 200809L
#include "check.h"

#include <sys/stat.h>

static char g_dir[300];

static long file_size(const char* path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void db_file(const char* name, char* out, size_t size) {
    snprintf(out, size, "%s/%s.cblite2/db.sqlite3", g_dir, name);
}

/* A database of `n` documents "d<i>" with a 300-byte pad each, closed. */
static void make_db(const char* name, const char* options, int n) {
    cbl_db* db = NULL;
    CHECK_ST(cbl_db_open(name, g_dir, options, &db, &E), CBL_OK);
    cbl_collection* c = default_coll(db);
    char id[32], body[400], pad[301];
    memset(pad, 'x', 300);
    pad[300] = 0;
    for (int i = 1; i <= n; i++) {
        snprintf(id, sizeof id, "d%d", i);
        snprintf(body, sizeof body, "{\"n\":%d,\"pad\":\"%s\"}", i, pad);
        char* rev = NULL;
        CHECK_ST(cbl_doc_put(c, id, body, NULL, 0, NULL, &rev, &E), CBL_OK);
        cbl_free(rev);
    }
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

static void overwrite(const char* path, long offset, const char* bytes, size_t len) {
    FILE* f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (!f) return;
    fseek(f, offset, SEEK_SET);
    CHECK(fwrite(bytes, 1, len, f) == len);
    fclose(f);
}

static void test_damaged_is_not_encrypted(void) {
    char path[400];
    make_db("garbled", NULL, 3);
    db_file("garbled", path, sizeof path);
    overwrite(path, 0, "garbage garbage garbage!", 24);
    cbl_db* db = NULL;
    CHECK_ST(cbl_db_open("garbled", g_dir, "{\"create\":false}", &db, &E), CBL_INTERNAL_ERROR);
    CHECK(db == NULL);
    CHECK((E.detail & 0xFF) == CBL_DETAIL_NOT_A_DATABASE);
    CHECK(strstr(E.message, "not a database") != NULL);
    CHECK(strstr(E.message, "encrypt") == NULL);
    CHECK(strstr(E.message, "SELECT") == NULL); /* the SQL stays in the log */

    make_db("secret", "{\"encryption_key\":{\"password\":\"pw\"}}", 3);
    CHECK_ST(cbl_db_open("secret", g_dir, NULL, &db, &E), CBL_UNAUTHORIZED);
    CHECK(strstr(E.message, "encrypted") != NULL);
    CHECK_ST(cbl_db_open("secret", g_dir, "{\"encryption_key\":{\"password\":\"no\"}}", &db, &E), CBL_UNAUTHORIZED);
    CHECK(strstr(E.message, "wrong encryption key") != NULL);
    /* A key for a plain database says so. */
    make_db("plain", NULL, 1);
    CHECK_ST(cbl_db_open("plain", g_dir, "{\"encryption_key\":{\"password\":\"pw\"}}", &db, &E), CBL_UNAUTHORIZED);
    CHECK(strstr(E.message, "not encrypted") != NULL);
}

static void test_empty_or_missing_file_is_an_error(void) {
    char path[400], cmd[800];
    make_db("emptied", NULL, 2);
    db_file("emptied", path, sizeof path);
    FILE* f = fopen(path, "wb");   /* truncate to 0 bytes */
    CHECK(f != NULL);
    if (f) fclose(f);
    cbl_db* db = NULL;
    CHECK_ST(cbl_db_open("emptied", g_dir, NULL, &db, &E), CBL_INTERNAL_ERROR);  /* create=true too */
    CHECK((E.detail & 0xFF) == CBL_DETAIL_NOT_A_DATABASE);
    CHECK(strstr(E.message, "empty") != NULL);
    CHECK(file_size(path) == 0);   /* not silently made a new database */

    make_db("vanished", NULL, 2);
    db_file("vanished", path, sizeof path);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/vanished.cblite2/attachments' && rm -f '%s'", g_dir, path);
    CHECK(system(cmd) == 0);
    CHECK_ST(cbl_db_open("vanished", g_dir, NULL, &db, &E), CBL_INTERNAL_ERROR);
    CHECK(strstr(E.message, "missing") != NULL);
    CHECK(file_size(path) == -1);
}

static void test_read_only(void) {
    make_db("ro", NULL, 2);
    cbl_db* db = NULL;
    CHECK_ST(cbl_db_open("ro", g_dir, "{\"read_only\":true}", &db, &E), CBL_OK);
    cbl_collection* c = default_coll(db);
    char* json = NULL;
    CHECK_ST(cbl_doc_get(c, "d1", 0, &json, &E), CBL_OK);
    cbl_free(json);
    char* rev = NULL;
    CHECK_ST(cbl_doc_put(c, "new", "{}", NULL, 0, NULL, &rev, &E), CBL_FORBIDDEN);
    CHECK(rev == NULL);
    CHECK(strstr(E.message, "read-only") != NULL);
    /* One database, one setting per process: a read-write handle beside it is 406. */
    cbl_db* rw = NULL;
    CHECK_ST(cbl_db_open("ro", g_dir, NULL, &rw, &E), CBL_NOT_ACCEPTABLE);
    CHECK(rw == NULL);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    /* read_only never creates. */
    CHECK_ST(cbl_db_open("absent", g_dir, "{\"read_only\":true}", &db, &E), CBL_NOT_FOUND);
    CHECK_ST(cbl_db_open("ro", g_dir, "{\"read_only\":1}", &db, &E), CBL_BAD_REQUEST);
}

static int g_revisions;
static void count_revision(void* context, const char* json) {
    (void)context;
    if (json && strstr(json, "\"_revisions\"")) g_revisions++;
}

static void test_salvage(void) {
    char path[400];
    make_db("hurt", NULL, 30);
    db_file("hurt", path, sizeof path);
    /* Overwrite the table page that holds d17. */
    FILE* f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    long size = file_size(path);
    char* data = malloc((size_t)size);
    CHECK(fread(data, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    long at = -1;
    for (long i = 0; i + 7 < size; i++) if (memcmp(data + i, "\"n\":17,", 7) == 0) { at = i; break; }
    free(data);
    CHECK(at > 0);
    char junk[4096];
    memset(junk, 0xA5, sizeof junk);
    overwrite(path, at - at % 4096, junk, sizeof junk);

    cbl_db* db = NULL;
    CHECK_ST(cbl_db_open("hurt", g_dir, "{\"read_only\":true}", &db, &E), CBL_OK);
    cbl_collection* c = default_coll(db);
    char* out = NULL;
    CHECK_ST(cbl_collection_changes(c, 0, NULL, &out, &E), CBL_INTERNAL_ERROR);  /* the scan stops */
    CHECK((E.detail & 0xFF) == CBL_DETAIL_CORRUPT);
    g_revisions = 0;
    CHECK_OUT(cbl_collection_salvage(c, count_revision, NULL, &J, &E), CBL_OK,
              strstr(J, "\"id\":\"d17\"") != NULL && strstr(J, "\"lost\":[") != NULL);
    CHECK(g_revisions >= 20 && g_revisions < 30);
    CHECK_ST(cbl_collection_salvage(c, count_revision, NULL, NULL, &E), CBL_OK);   /* report optional */
    CHECK_OUT(cbl_collection_salvage(c, NULL, NULL, &J, &E), CBL_BAD_REQUEST, 1);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(g_root, sizeof g_root, "/tmp/cblite-diag-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 2; }
    snprintf(g_dir, sizeof g_dir, "%s/dbs", g_root);
    int64_t instances = cbl_instance_count();

    test_damaged_is_not_encrypted();
    test_empty_or_missing_file_is_an_error();
    test_read_only();
    test_salvage();

    return finish_tests(instances);
}
