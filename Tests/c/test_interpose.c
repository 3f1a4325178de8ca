/*
 * test_interpose.c — libcblite inside a host that links the system SQLite.
 *
 * libcblite carries its own SQLCipher (SQLite 3.46) with hidden symbols. A host program
 * linking Debian's libsqlite3 (3.40) must keep getting its own SQLite, and libcblite
 * must keep getting SQLCipher: neither may interpose the other's sqlite3_* symbols.
 *
 *   cc -std=c99 -Wall -Wextra -Werror -g -Iinclude -o test_interpose Tests/c/test_interpose.c \
 *      -Lbuild/lib -lcblite -lsqlite3 -lpthread
 */
#define _POSIX_C_SOURCE 200809L

#include "cblite.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int g_pass, g_fail;
static cbl_error E;

static void check_(int ok, const char* what, const char* file, int line) {
    if (ok) { g_pass++; return; }
    g_fail++;
    fprintf(stderr, "%s:%d: FAILED: %s  [last cbl_error %d: %s]\n", file, line, what, (int)E.code, E.message);
}
#define CHECK(cond) check_((cond) ? 1 : 0, #cond, __FILE__, __LINE__)

/* sqlite3_exec callback: stores the first column of the last row as an integer. */
static int int_row(void* ctx, int ncols, char** values, char** names) {
    (void)names;
    if (ncols > 0 && values[0]) *(long*)ctx = strtol(values[0], NULL, 10);
    return 0;
}

/* sqlite3_exec callback: copies the first column of the last row. */
static int text_row(void* ctx, int ncols, char** values, char** names) {
    (void)names;
    if (ncols > 0) snprintf((char*)ctx, 128, "%s", values[0] ? values[0] : "(null)");
    return 0;
}

static long count_rows(sqlite3* db, const char* sql) {
    long n = -1;
    char* msg = NULL;
    if (sqlite3_exec(db, sql, int_row, &n, &msg) != SQLITE_OK) {
        fprintf(stderr, "  sqlite3_exec(%s): %s\n", sql, msg ? msg : "?");
        sqlite3_free(msg);
        return -1;
    }
    return n;
}

int main(void) {
    char root[] = "/tmp/cblite-interpose-XXXXXX";
    if (!mkdtemp(root)) { perror("mkdtemp"); return 2; }
    char host_path[256];
    snprintf(host_path, sizeof host_path, "%s/host.sqlite3", root);
    int64_t instances = cbl_instance_count();

    /* Versions: the host sees the system SQLite, libcblite reports its own SQLCipher. */
    const char* sysver = sqlite3_libversion();
    printf("system sqlite3_libversion(): %s (header %s)\n", sysver, SQLITE_VERSION);
    CHECK(strncmp(sysver, "3.40.", 5) == 0);
    CHECK(strcmp(sysver, SQLITE_VERSION) == 0);
    CHECK(sqlite3_libversion_number() == SQLITE_VERSION_NUMBER);
    char* versions = NULL;
    CHECK(cbl_storage_versions(&versions, &E) == CBL_OK);
    printf("cbl_storage_versions(): %s\n", versions ? versions : "(null)");
    CHECK(versions && strstr(versions, "\"3.46") != NULL && strstr(versions, "sqlcipher") != NULL);
    CHECK(versions && strstr(versions, sysver) == NULL);
    cbl_free(versions);

    /* The host's own database, through the system SQLite. */
    sqlite3* host = NULL;
    CHECK(sqlite3_open(host_path, &host) == SQLITE_OK);
    CHECK(sqlite3_exec(host, "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(host, "INSERT INTO t(v) VALUES ('one')", NULL, NULL, NULL) == SQLITE_OK);
    /* the system SQLite has no codec: PRAGMA cipher_version returns nothing */
    char cipher[128] = "";
    CHECK(sqlite3_exec(host, "PRAGMA cipher_version", text_row, cipher, NULL) == SQLITE_OK);
    CHECK(cipher[0] == '\0');

    /* libcblite, interleaved with the host's SQLite calls */
    cbl_db* db = NULL;
    CHECK(cbl_db_open("interposed", root, NULL, &db, &E) == CBL_OK);
    cbl_collection* coll = NULL;
    CHECK(cbl_db_default_collection(db, &coll, &E) == CBL_OK);
    char* rev = NULL;
    CHECK(cbl_doc_put(coll, "doc1", "{\"from\":\"cblite\",\"n\":1}", NULL, 0, NULL, &rev, &E) == CBL_OK);
    CHECK(rev && strncmp(rev, "1-", 2) == 0);
    CHECK(sqlite3_exec(host, "INSERT INTO t(v) VALUES ('two')", NULL, NULL, NULL) == SQLITE_OK);
    char* rev2 = NULL;
    char body[128];
    snprintf(body, sizeof body, "{\"from\":\"cblite\",\"n\":2}");
    CHECK(cbl_doc_put(coll, "doc1", body, rev, 0, NULL, &rev2, &E) == CBL_OK);
    CHECK(count_rows(host, "SELECT count(*) FROM t") == 2);
    CHECK(cbl_db_begin(db, &E) == CBL_OK);
    for (int i = 0; i < 20; i++) {
        char id[32];
        snprintf(id, sizeof id, "bulk-%02d", i);
        CHECK(cbl_doc_put(coll, id, "{\"bulk\":true}", NULL, 0, NULL, NULL, &E) == CBL_OK);
        CHECK(sqlite3_exec(host, "INSERT INTO t(v) VALUES ('interleaved')", NULL, NULL, NULL) == SQLITE_OK);
    }
    CHECK(cbl_db_commit(db, &E) == CBL_OK);
    char* json = NULL;
    CHECK(cbl_doc_get(coll, "doc1", 0, &json, &E) == CBL_OK);
    CHECK(json && strstr(json, "\"n\":2") && rev2 && strstr(json, rev2));
    cbl_free(json);
    uint64_t n = 0;
    CHECK(cbl_db_count(db, &n, &E) == CBL_OK && n == 21);
    CHECK(count_rows(host, "SELECT count(*) FROM t") == 22);
    char* report = NULL;
    CHECK(cbl_db_integrity_check(db, &report, &E) == CBL_OK && report && strcmp(report, "[]") == 0);
    cbl_free(report);
    char ic[128] = "";
    CHECK(sqlite3_exec(host, "PRAGMA integrity_check", text_row, ic, NULL) == SQLITE_OK && strcmp(ic, "ok") == 0);
    cbl_free(rev);
    cbl_free(rev2);

    /* After closing, the cblite file is an ordinary (unencrypted) SQLite database that the
     * system SQLite opens read-only. */
    char* bundle = NULL;
    CHECK(cbl_db_path(db, &bundle, &E) == CBL_OK && bundle != NULL);
    cbl_collection_release(coll);
    CHECK(cbl_db_close(db, &E) == CBL_OK);
    char file[512];
    snprintf(file, sizeof file, "%s/db.sqlite3", bundle ? bundle : "?");
    cbl_free(bundle);
    struct stat st;
    CHECK(stat(file, &st) == 0 && st.st_size > 0);
    sqlite3* ro = NULL;
    CHECK(sqlite3_open_v2(file, &ro, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    long objects = count_rows(ro, "SELECT count(*) FROM sqlite_master");
    printf("system sqlite3 reads %s: %ld schema objects\n", file, objects);
    CHECK(objects > 0);
    CHECK(sqlite3_close(ro) == SQLITE_OK);

    /* An encrypted cblite database stays encrypted although the host links the system
     * SQLite (no codec there): the system SQLite cannot read it, libcblite with the key can. */
    const char* key = "{\"encryption_key\":{\"password\":\"interposition\"}}";
    CHECK(cbl_db_open("sealed", root, key, &db, &E) == CBL_OK);
    int encrypted = 0;
    CHECK(cbl_db_is_encrypted_v2(db, &encrypted, &E) == CBL_OK && encrypted == 1);
    CHECK(cbl_db_default_collection(db, &coll, &E) == CBL_OK);
    CHECK(cbl_doc_put(coll, "secret", "{\"plaintext\":\"must-not-leak\"}", NULL, 0, NULL, NULL, &E) == CBL_OK);
    cbl_collection_release(coll);
    CHECK(cbl_db_path(db, &bundle, &E) == CBL_OK && bundle != NULL);
    CHECK(cbl_db_close(db, &E) == CBL_OK);
    snprintf(file, sizeof file, "%s/db.sqlite3", bundle ? bundle : "?");
    cbl_free(bundle);
    CHECK(sqlite3_open_v2(file, &ro, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    int rc = sqlite3_exec(ro, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
    printf("system sqlite3 on the encrypted file: %d (%s)\n", rc, sqlite3_errstr(rc));
    CHECK(rc == SQLITE_NOTADB);
    sqlite3_close(ro);
    FILE* f = fopen(file, "rb");
    char head[16] = "";
    CHECK(f != NULL && fread(head, 1, sizeof head, f) == sizeof head);
    CHECK(memcmp(head, "SQLite format 3", 15) != 0); /* no plaintext header */
    int found = 0;
    if (f) { /* nor the document's text anywhere in the file */
        static char data[1 << 20];
        size_t len = fread(data, 1, sizeof data, f);
        const char* needle = "must-not-leak";
        for (size_t i = 0; i + strlen(needle) <= len && !found; i++)
            found = memcmp(data + i, needle, strlen(needle)) == 0;
        fclose(f);
    }
    CHECK(!found);
    CHECK(cbl_db_open("sealed", root, NULL, &db, &E) == CBL_UNAUTHORIZED && db == NULL);
    CHECK(cbl_db_open("sealed", root, key, &db, &E) == CBL_OK);
    CHECK(cbl_db_count(db, &n, &E) == CBL_OK && n == 1);
    CHECK(cbl_db_close(db, &E) == CBL_OK);

    /* The host's database still works, and so does libcblite (reopen). */
    CHECK(sqlite3_exec(host, "INSERT INTO t(v) VALUES ('after')", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(count_rows(host, "SELECT count(*) FROM t") == 23);
    CHECK(sqlite3_close(host) == SQLITE_OK);
    CHECK(cbl_db_open("interposed", root, "{\"create\":false}", &db, &E) == CBL_OK);
    CHECK(cbl_db_count(db, &n, &E) == CBL_OK && n == 21);
    CHECK(cbl_db_close(db, &E) == CBL_OK);
    CHECK(cbl_instance_count() == instances);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
