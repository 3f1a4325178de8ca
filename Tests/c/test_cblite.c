/*
 * test_cblite.c — the C test program of libcblite.
 *
 * Calls every function declared in include/cblite.h at least once and checks real
 * behaviour against the header's contract. Prints "N passed, N failed" and exits
 * nonzero on any failure.
 *
 *   cc -std=c99 -Wall -Wextra -Werror -g -Iinclude -o test_cblite Tests/c/test_cblite.c \
 *      -Lbuild/lib -lcblite -lpthread
 */
#define _POSIX_C_SOURCE 200809L

#include "cblite.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- Checks ---------------------------------------------------------------------- */

#include "check.h"   /* CHECK, CHECK_ST, CHECK_OUT, E, g_root, g_pass/g_fail */
/* Reads a document (cbl_doc_get) into D, checks it exists and `cond`, frees it. */
#define CHECK_DOC(coll, id, flags, cond) \
    do { char* D = get(coll, id, flags); check_(D != NULL && (cond), #cond, __FILE__, __LINE__); \
         cbl_free(D); } while (0)
/* A call returning a number through `&U` (uint64_t): checks CBL_OK and the value. */
#define CHECK_NUM(expr, value) \
    do { uint64_t U = 987654321; CHECK_ST(expr, CBL_OK); \
         check_(U == (uint64_t)(value), #expr " gives " #value, __FILE__, __LINE__); } while (0)

/* ---- Helpers. JSON is inspected with strstr-style scans (whitespace after ':' is
 *      tolerated): good enough for the library's compact output. ---------------------- */

static const char* skip_ws(const char* q) { while (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r') q++; return q; }

/* Pointer to the value of the first "key": in json, or NULL. */
static const char* jval(const char* json, const char* key) {
    char pat[300];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    for (const char* p = json ? strstr(json, pat) : NULL; p; p = strstr(p + 1, pat)) {
        const char* q = skip_ws(p + strlen(pat));
        if (*q == ':') return skip_ws(q + 1);
    }
    return NULL;
}

/* 1 when some "key": has a value starting with `lit` (e.g. "true", "\"x\""). */
static int jhas(const char* json, const char* key, const char* lit) {
    for (const char* v = jval(json, key); v; v = jval(v, key))
        if (strncmp(v, lit, strlen(lit)) == 0) return 1;
    return 0;
}

/* Copies the string value of "key" into buf; returns buf, or NULL when absent. */
static char* jstr(const char* json, const char* key, char* buf, size_t n) {
    const char* v = jval(json, key);
    if (!v || *v != '"') return NULL;
    size_t i = 0;
    for (v++; *v && *v != '"' && i + 1 < n; v++) buf[i++] = *v;
    buf[i] = '\0';
    return buf;
}

static long long jint(const char* json, const char* key) {
    const char* v = jval(json, key);
    return v ? strtoll(v, NULL, 10) : -1;
}

/* Number of occurrences of `sub` in `s`. */
static int count_of(const char* s, const char* sub) {
    int n = 0;
    for (const char* p = s ? strstr(s, sub) : NULL; p; p = strstr(p + strlen(sub), sub)) n++;
    return n;
}

/* Number of string elements of the flat JSON array of strings `p` points at. */
static int jarray_len(const char* p) {
    if (!p || *p != '[') return -1;
    int q = 0;
    for (; *p && *p != ']'; p++) if (*p == '"') q++;
    return q / 2;
}

/* The i-th (0-based) string element of a flat JSON array of strings. */
static char* jarray_at(const char* json, int i, char* buf, size_t n) {
    const char* p = json;
    for (int k = 0; p && (p = strchr(p, '"')) != NULL; k++) {
        const char* e = strchr(p + 1, '"');
        if (!e) return NULL;
        if (k == i) {
            snprintf(buf, n, "%.*s", (int)(e - p - 1), p + 1);
            return buf;
        }
        p = e + 1;
    }
    return NULL;
}

static int generation(const char* rev) { return rev ? atoi(rev) : -1; }

/* cbl_db_exists_v2 / cbl_db_is_encrypted_v2 as a value: the flag, or -1 on failure. */
static int db_exists(const char* name, const char* dir) {
    int flag = 77;
    return cbl_db_exists_v2(name, dir, &flag, NULL) == CBL_OK ? flag : -1;
}

static int db_is_encrypted(cbl_db* db) {
    int flag = 77;
    return cbl_db_is_encrypted_v2(db, &flag, NULL) == CBL_OK ? flag : -1;
}

/* rmdir fails (EBUSY) while g_fail_rmdir is set: the library's calls reach this
 * definition (the executable's symbols come first), so a test can make the removal of a
 * database's folder fail. */
static volatile int g_fail_rmdir;
int rmdir(const char* path) {
    if (g_fail_rmdir) { errno = EBUSY; return -1; }
    return unlinkat(AT_FDCWD, path, AT_REMOVEDIR);
}

static int dir_exists(const char* path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Makes (and returns) a fresh subdirectory of the run's root. */
static const char* subdir(const char* name, char* buf, size_t n) {
    snprintf(buf, n, "%s/%s", g_root, name);
    mkdir(buf, 0700);
    return buf;
}


/* A fresh directory `sub` under the run's root, a database `name` in it, its default collection. */
static cbl_db* setup(const char* sub, const char* name, char* dir, size_t n, cbl_collection** c) {
    subdir(sub, dir, n);
    cbl_db* db = open_db(name, dir);
    *c = default_coll(db);
    return db;
}

/* Releases a collection handle and closes its database, checking the close. */
#define RELEASE_AND_CLOSE(c, db) do { cbl_collection_release(c); CHECK_ST(cbl_db_close(db, &E), CBL_OK); } while (0)

/* Puts a document; its new revision ID goes to `rev` (optional; "" on failure). */
static cbl_status put(cbl_collection* c, const char* id, const char* body, const char* parent,
                      char* rev, size_t n) {
    char* out_rev = NULL;
    cbl_status st = cbl_doc_put(c, id, body, parent, 0, NULL, &out_rev, &E);
    if (rev) snprintf(rev, n, "%s", out_rev ? out_rev : "");
    cbl_free(out_rev);
    return st;
}

/* cbl_doc_get into a fresh string (caller frees); NULL when it fails. */
static char* get(cbl_collection* c, const char* id, uint32_t flags) {
    char* json = NULL;
    if (cbl_doc_get(c, id, flags, &json, &E) != CBL_OK) return NULL;  /* json is NULL then too */
    return json;
}

/* The current revision of a document ("" when absent). */
static char* current_rev(cbl_collection* c, const char* id, char* buf, size_t n) {
    char* doc = get(c, id, CBL_GET_DELETED);
    if (!doc || !jstr(doc, "_rev", buf, n)) buf[0] = '\0';
    cbl_free(doc);
    return buf;
}

/* ---- Library --------------------------------------------------------------------- */

static void test_library(void) {
    const char* v = cbl_version();
    CHECK(v != NULL && strlen(v) >= 5 && strchr(v, '.') != NULL && strcmp(v, cbl_version()) == 0);
    /* The header's version is the library's, as text and as a number. */
    CHECK(strcmp(v, CBLITE_VERSION) == 0);
    CHECK(cbl_version_number() == CBLITE_VERSION_NUMBER);
    {
        int major = 0, minor = 0, patch = 0;
        CHECK(sscanf(v, "%d.%d.%d", &major, &minor, &patch) == 3);
        CHECK(cbl_version_number() == major * 10000 + minor * 100 + patch);
    }
    CHECK_OUT(cbl_storage_versions(&J, &E), CBL_OK,
              strstr(J, "\"sqlcipher\"") != NULL && jval(J, "sqlite") && strncmp(jval(J, "sqlite"), "\"3.", 3) == 0);
    CHECK_ST(cbl_storage_versions(NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_storage_versions(NULL, NULL), CBL_BAD_REQUEST);
    cbl_free(NULL); /* a no-op */

    const char* src = "h\xc3\xa9llo";
    char* dup = cbl_strdup(src);
    CHECK(dup != NULL && dup != src && strcmp(dup, src) == 0);
    cbl_free(dup);
    CHECK(cbl_strdup(NULL) == NULL);

    CHECK(strcmp(cbl_status_name(CBL_NOT_FOUND), "not found") == 0);
    CHECK(cbl_status_name(CBL_OK) != NULL && cbl_status_name(CBL_OK)[0] != '\0');
    CHECK(strcmp(cbl_status_name(CBL_CONFLICT), cbl_status_name(CBL_NOT_FOUND)) != 0);
    CHECK(cbl_status_name(12345) != NULL);
    CHECK(strcmp(cbl_status_name(CBL_INSUFFICIENT_STORAGE), "insufficient storage") == 0);
    /* Default directory: $CBLITE_DIR, else $XDG_DATA_HOME/cblite, else ~/.local/share/cblite */
    char dbuf[512], xbuf[512], want[600];
    subdir("envdir", dbuf, sizeof dbuf);
    subdir("xdg", xbuf, sizeof xbuf);
    char* save_cd = getenv("CBLITE_DIR") ? strdup(getenv("CBLITE_DIR")) : NULL;
    char* save_xdg = getenv("XDG_DATA_HOME") ? strdup(getenv("XDG_DATA_HOME")) : NULL;
    setenv("CBLITE_DIR", dbuf, 1);
    CHECK_OUT(cbl_default_directory(&J, &E), CBL_OK, strcmp(J, dbuf) == 0);
    /* dir NULL: the default directory */
    cbl_db* db = open_db("indefault", NULL);
    snprintf(want, sizeof want, "%s/indefault.cblite2", dbuf);
    CHECK(dir_exists(want) && db_exists("indefault", dbuf) == 1 && db_exists("indefault", NULL) == 1);
    CHECK_OUT(cbl_db_list(NULL, &J, &E), CBL_OK, strcmp(J, "[\"indefault\"]") == 0);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);

    unsetenv("CBLITE_DIR");
    setenv("XDG_DATA_HOME", xbuf, 1);
    snprintf(want, sizeof want, "%s/cblite", xbuf);
    CHECK_OUT(cbl_default_directory(&J, &E), CBL_OK, strcmp(J, want) == 0);
    CHECK_ST(cbl_default_directory(NULL, &E), CBL_BAD_REQUEST);

    if (save_cd) setenv("CBLITE_DIR", save_cd, 1); else unsetenv("CBLITE_DIR");
    if (save_xdg) setenv("XDG_DATA_HOME", save_xdg, 1); else unsetenv("XDG_DATA_HOME");
    free(save_cd);
    free(save_xdg);
}

/* ---- Logging --------------------------------------------------------------------- */

typedef struct log_ctx { pthread_mutex_t mu; int calls, bad_args, saw_opened; } log_ctx;

static void log_cb(void* context, cbl_log_domain domain, cbl_log_level level, const char* message) {
    log_ctx* lc = (log_ctx*)context;
    pthread_mutex_lock(&lc->mu);
    lc->calls++;
    if ((int)domain < 0 || domain >= CBL_LOG_DOMAIN_COUNT || (int)level < 0 || level >= CBL_LOG_NONE ||
        message == NULL || level < cbl_log_get_level(domain))
        lc->bad_args++;
    else if (domain == CBL_LOG_DATABASE && strstr(message, "opened"))
        lc->saw_opened++;
    pthread_mutex_unlock(&lc->mu);
}

static void test_logging(void) {
    for (int d = 0; d < CBL_LOG_DOMAIN_COUNT; d++)
        CHECK(cbl_log_get_level((cbl_log_domain)d) == CBL_LOG_WARNING);
    CHECK_ST(cbl_log_set_level(CBL_LOG_CHANGES, CBL_LOG_DEBUG, &E), CBL_OK);
    CHECK(cbl_log_get_level(CBL_LOG_CHANGES) == CBL_LOG_DEBUG && cbl_log_get_level(CBL_LOG_STORAGE) == CBL_LOG_WARNING);
    CHECK_ST(cbl_log_set_level(CBL_LOG_CHANGES, CBL_LOG_NONE, &E), CBL_OK);
    CHECK(cbl_log_get_level(CBL_LOG_CHANGES) == CBL_LOG_NONE);
    CHECK_ST(cbl_log_set_level(CBL_LOG_CHANGES, CBL_LOG_WARNING, NULL), CBL_OK);
    CHECK(cbl_log_get_level(CBL_LOG_CHANGES) == CBL_LOG_WARNING);
    CHECK_ST(cbl_log_set_level((cbl_log_domain)99, CBL_LOG_INFO, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_log_set_level(CBL_LOG_DOMAIN_COUNT, CBL_LOG_INFO, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_log_set_level(CBL_LOG_DATABASE, (cbl_log_level)42, &E), CBL_BAD_REQUEST);
    CHECK(cbl_log_get_level(CBL_LOG_DATABASE) == CBL_LOG_WARNING);
    CHECK(cbl_log_get_level((cbl_log_domain)99) == CBL_LOG_NONE);
    /* A callback receives messages at or above the level; removed, it receives none
     * (the message then goes to stderr: one "opened" line is expected in the output). */
    log_ctx lc;
    memset(&lc, 0, sizeof lc);
    pthread_mutex_init(&lc.mu, NULL);
    cbl_log_set_callback(log_cb, &lc);
    CHECK_ST(cbl_log_set_level(CBL_LOG_DATABASE, CBL_LOG_INFO, &E), CBL_OK);
    char dir[512];
    subdir("logging", dir, sizeof dir);
    cbl_db* db = open_db("logged", dir);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    pthread_mutex_lock(&lc.mu);
    int calls = lc.calls;
    CHECK(lc.calls > 0 && lc.saw_opened > 0 && lc.bad_args == 0);
    pthread_mutex_unlock(&lc.mu);
    cbl_log_set_callback(NULL, NULL);
    db = open_db("logged", dir);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    CHECK(lc.calls == calls);
    CHECK_ST(cbl_log_set_level(CBL_LOG_DATABASE, CBL_LOG_WARNING, &E), CBL_OK);
    pthread_mutex_destroy(&lc.mu);
}

/* ---- Databases ------------------------------------------------------------------- */

/* cbl_db_open must fail with `want` and set *out_db to NULL. */
static void open_fails(const char* name, const char* dir, const char* options, cbl_status want, int line) {
    cbl_db* db = (cbl_db*)POISON_PTR;
    poison();
    cbl_status st = cbl_db_open(name, dir, options, &db, &E);
    check_st_(st, want, "cbl_db_open(..., &E) (see line)", __FILE__, line);
    check_(db == NULL, "out_db set to NULL on failure", __FILE__, line);
    if (st == CBL_OK && db != (cbl_db*)POISON_PTR) CHECK_ST(cbl_db_close(db, NULL), CBL_OK);
}
#define OPEN_FAILS(name, dir, options, want) open_fails(name, dir, options, want, __LINE__)

static void test_databases(void) {
    char dir[512], dir2[512], p[1024];
    subdir("dbs", dir, sizeof dir);
    subdir("dbs2", dir2, sizeof dir2);
    /* create=false on an absent database: 404, out_db NULL */
    OPEN_FAILS("absent", dir, "{\"create\":false}", CBL_NOT_FOUND);
    CHECK(db_exists("absent", dir) == 0);
    /* create, then open-existing-only works */
    cbl_db* db = open_db("main", dir);
    snprintf(p, sizeof p, "%s/main.cblite2", dir);
    CHECK(dir_exists(p) && db_exists("main", dir) == 1);
    cbl_db* db2 = NULL;
    CHECK_ST(cbl_db_open("main", dir, "{\"create\":false,\"busy_timeout_ms\":2000}", &db2, &E), CBL_OK);
    CHECK(db2 != NULL && db2 != db);
    /* bad options and arguments */
    OPEN_FAILS("main", dir, "{\"create\":", CBL_BAD_REQUEST);
    OPEN_FAILS("main", dir, "[1,2]", CBL_BAD_REQUEST);
    OPEN_FAILS(NULL, dir, NULL, CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_open("main", dir, NULL, NULL, &E), CBL_BAD_REQUEST);
    /* name rules */
    char longname[241];
    memset(longname, 'a', 240);
    longname[240] = '\0';
    const char* bad_names[] = {"Bad", "1abc", "", "a b", "caf\xc3\xa9", "a\\b", "-x", "a.b", longname};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        OPEN_FAILS(bad_names[i], dir, NULL, CBL_BAD_REQUEST);
        CHECK(db_exists(bad_names[i], dir) == -1);
    }
    longname[239] = '\0'; /* 239 bytes: allowed */
    cbl_db* ok = open_db(longname, dir2);
    CHECK_ST(cbl_db_close(ok, &E), CBL_OK);
    ok = open_db("z0_$()+-", dir2);
    CHECK_ST(cbl_db_close(ok, &E), CBL_OK);
    /* '/' stays inside dir (as ':' on disk) */
    cbl_db* slash = open_db("a/b", dir);
    snprintf(p, sizeof p, "%s/a:b.cblite2", dir);
    CHECK(dir_exists(p));
    snprintf(p, sizeof p, "%s/a", dir);
    CHECK(!dir_exists(p));
    CHECK_OUT(cbl_db_name(slash, &J, &E), CBL_OK, strcmp(J, "a/b") == 0);
    CHECK_OUT(cbl_db_path(slash, &J, &E), CBL_OK,
              strncmp(J, dir, strlen(dir)) == 0 && strstr(J, "a:b.cblite2") != NULL);
    CHECK(db_exists("a/b", dir) == 1);
    CHECK_ST(cbl_db_close(slash, &E), CBL_OK);
    /* list: sorted JSON array of names */
    CHECK_OUT(cbl_db_list(dir, &J, &E), CBL_OK, strcmp(J, "[\"a/b\",\"main\"]") == 0);
    CHECK_ST(cbl_db_list(NULL, NULL, &E), CBL_BAD_REQUEST);
    /* name / path / count / last_sequence */
    CHECK_OUT(cbl_db_name(db, &J, &E), CBL_OK, strcmp(J, "main") == 0);
    snprintf(p, sizeof p, "%s/main.cblite2", dir);
    CHECK_OUT(cbl_db_path(db, &J, &E), CBL_OK, strncmp(J, p, strlen(p)) == 0 && strlen(J) <= strlen(p) + 1);
    CHECK_NUM(cbl_db_count(db, &U, &E), 0);
    CHECK_NUM(cbl_db_last_sequence(db, &U, &E), 0);
    cbl_collection* c = default_coll(db);
    CHECK_ST(put(c, "d1", "{\"a\":1}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(put(c, "d2", "{\"a\":2}", NULL, NULL, 0), CBL_OK);
    CHECK_NUM(cbl_db_count(db2, &U, &E), 2); /* seen through the other handle */
    CHECK_NUM(cbl_db_last_sequence(db, &U, &E), 2);
    CHECK_ST(cbl_doc_delete(c, "d2", NULL, NULL, &E), CBL_OK);
    CHECK_NUM(cbl_db_count(db, &U, &E), 1);
    CHECK_NUM(cbl_db_last_sequence(db, &U, &E), 3);
    CHECK_ST(cbl_db_count(db, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_last_sequence(db, NULL, &E), CBL_BAD_REQUEST);
    /* max rev tree depth */
    uint32_t depth = 0;
    CHECK_ST(cbl_db_max_rev_tree_depth(db, &depth, &E), CBL_OK);
    CHECK(depth == 20);
    CHECK_ST(cbl_db_set_max_rev_tree_depth(db, 0, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_max_rev_tree_depth(db, 100001, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_max_rev_tree_depth(db, 7, &E), CBL_OK);
    CHECK_ST(cbl_db_max_rev_tree_depth(db2, &depth, &E), CBL_OK);
    CHECK(depth == 7);
    /* _security: none until set, then as given (unknown members kept), for every handle */
    CHECK_OUT(cbl_db_security(db, &J, &E), CBL_OK, strcmp(J, "null") == 0);
    CHECK_ST(cbl_db_set_security(db, "{\"members\":\"bob\"}", &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_security(db, "{\"admins\":{\"roles\":[1]}}", &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_security(db, "[]", &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_security(db, NULL, &E), CBL_BAD_REQUEST);
    CHECK_OUT(cbl_db_security(db, &J, &E), CBL_OK, strcmp(J, "null") == 0);
    const char* security = "{\"members\":{\"names\":[\"bob\"],\"roles\":[]},\"admins\":{\"roles\":[\"boss\"]},\"x\":1}";
    CHECK_ST(cbl_db_set_security(db, security, &E), CBL_OK);
    CHECK_OUT(cbl_db_security(db2, &J, &E), CBL_OK, strcmp(J, security) == 0);
    CHECK_OUT(cbl_db_security(NULL, &J, &E), CBL_BAD_REQUEST, 1);
    /* maintenance */
    CHECK_ST(cbl_db_compact(db, &E), CBL_OK);
    CHECK_ST(cbl_db_optimize(db, &E), CBL_OK);
    CHECK_OUT(cbl_db_integrity_check(db, &J, &E), CBL_OK, strcmp(J, "[]") == 0);
    CHECK_ST(cbl_db_integrity_check(db, NULL, &E), CBL_OK);
    RELEASE_AND_CLOSE(c, db2);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    /* the depth is stored in the database: still 7 after reopening */
    db = open_db("main", dir);
    CHECK_ST(cbl_db_max_rev_tree_depth(db, &depth, &E), CBL_OK);
    CHECK(depth == 7);
    /* copy: install a prebuilt database from another database's bundle path */
    char* path = NULL;
    CHECK_ST(cbl_db_path(db, &path, &E), CBL_OK);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    CHECK_ST(cbl_db_copy(path, "copied", dir2, &E), CBL_OK);
    CHECK(db_exists("copied", dir2) == 1);
    CHECK_ST(cbl_db_copy(path, "copied", dir2, &E), CBL_PRECONDITION_FAILED);
    CHECK_ST(cbl_db_copy(path, "Bad", dir2, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_copy(NULL, "x", dir2, &E), CBL_BAD_REQUEST);
    cbl_free(path);
    snprintf(p, sizeof p, "%s/nothere.cblite2", dir);
    CHECK_ST(cbl_db_copy(p, "fromnothing", dir2, &E), CBL_NOT_FOUND);
    CHECK(db_exists("fromnothing", dir2) == 0);
    cbl_db* copy = NULL;
    CHECK_ST(cbl_db_open("copied", dir2, "{\"create\":false}", &copy, &E), CBL_OK);
    c = default_coll(copy);
    CHECK_DOC(c, "d1", 0, jhas(D, "a", "1"));
    CHECK_OUT(cbl_db_name(copy, &J, &E), CBL_OK, strcmp(J, "copied") == 0);
    cbl_collection_release(c);
    /* delete_named: 503 while open in this process, 404 when absent */
    CHECK_ST(cbl_db_delete_named("copied", dir2, &E), CBL_BUSY);
    CHECK(db_exists("copied", dir2) == 1);
    CHECK_ST(cbl_db_close(copy, &E), CBL_OK);
    CHECK_ST(cbl_db_delete_named("copied", dir2, &E), CBL_OK);
    snprintf(p, sizeof p, "%s/copied.cblite2", dir2);
    CHECK(db_exists("copied", dir2) == 0 && !dir_exists(p));
    CHECK_ST(cbl_db_delete_named("copied", dir2, &E), CBL_NOT_FOUND);
    CHECK_ST(cbl_db_delete_named("Bad", dir2, &E), CBL_BAD_REQUEST);
    /* cbl_db_delete: 503 while another handle has it open, then deletes the files */
    db = open_db("todelete", dir2);
    db2 = open_db("todelete", dir2);
    CHECK_ST(cbl_db_delete(db, &E), CBL_BUSY);
    CHECK_NUM(cbl_db_count(db, &U, &E), 0);                 /* 503: the handle stays open */
    CHECK(db_exists("todelete", dir2) == 1);
    CHECK_ST(cbl_db_close(db2, &E), CBL_OK);
    CHECK_ST(cbl_db_delete(db, &E), CBL_OK);
    CHECK(db_exists("todelete", dir2) == 0);
    /* a file that cannot be removed: 500, and the handle is closed and released all the
     * same; cbl_db_delete_named removes the rest */
    db = open_db("halfdeleted", dir2);
    int64_t handles = cbl_instance_count();
    g_fail_rmdir = 1;
    CHECK_ST(cbl_db_delete(db, &E), CBL_INTERNAL_ERROR);
    g_fail_rmdir = 0;
    CHECK(cbl_instance_count() == handles - 1);
    uint64_t count = 0;
    CHECK_ST(cbl_db_count(db, &count, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_close(db, &E), CBL_BAD_REQUEST);
    snprintf(p, sizeof p, "%s/halfdeleted.cblite2", dir2);
    CHECK(dir_exists(p));
    CHECK_ST(cbl_db_delete_named("halfdeleted", dir2, &E), CBL_OK);
    CHECK(!dir_exists(p));
    CHECK_OUT(cbl_db_list(dir2, &J, &E), CBL_OK, strstr(J, "\"todelete\"") == NULL && strstr(J, "\"z0_$()+-\""));
}

/* ---- Listener recorder (used by several areas) ----------------------------------- */

typedef struct recorder {
    pthread_mutex_t mu;
    int calls, changes;     /* callback invocations; changes received in total */
    int external, deleted;  /* changes flagged external / deleted */
    int out_of_order;       /* a sequence not above the previous one in a batch */
    char last_id[128], last_rev[128];
    uint64_t last_seq;
    char ids[4096];         /* ",id1,id2,...," of every change */
} recorder;

static void rec_init(recorder* r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
}
static void rec_reset(recorder* r) {
    pthread_mutex_lock(&r->mu);
    r->calls = r->changes = r->external = r->deleted = r->out_of_order = 0;
    r->last_id[0] = r->last_rev[0] = r->ids[0] = '\0';
    r->last_seq = 0;
    pthread_mutex_unlock(&r->mu);
}
static int rec_get(recorder* r, const int* field) {
    pthread_mutex_lock(&r->mu);
    int n = *field;
    pthread_mutex_unlock(&r->mu);
    return n;
}
#define rec_changes(r) rec_get((r), &(r)->changes)
#define rec_calls(r) rec_get((r), &(r)->calls)
static int rec_saw(recorder* r, const char* id) {
    char pat[140];
    snprintf(pat, sizeof pat, ",%s,", id);
    pthread_mutex_lock(&r->mu);
    int saw = strstr(r->ids, pat) != NULL;
    pthread_mutex_unlock(&r->mu);
    return saw;
}
static void rec_cb(void* context, const cbl_change* changes, size_t count) {
    recorder* r = (recorder*)context;
    pthread_mutex_lock(&r->mu);
    r->calls++;
    for (size_t i = 0; i < count; i++) {
        const cbl_change* ch = &changes[i];
        r->changes++;
        r->external += ch->external ? 1 : 0;
        r->deleted += ch->deleted ? 1 : 0;
        if (i > 0 && ch->sequence <= changes[i - 1].sequence) r->out_of_order++;
        snprintf(r->last_id, sizeof r->last_id, "%s", ch->doc_id ? ch->doc_id : "(null)");
        snprintf(r->last_rev, sizeof r->last_rev, "%s", ch->rev_id ? ch->rev_id : "(null)");
        r->last_seq = ch->sequence;
        size_t l = strlen(r->ids);
        snprintf(r->ids + l, sizeof r->ids - l, "%s%s,", l ? "" : ",", r->last_id);
    }
    pthread_mutex_unlock(&r->mu);
}
/* Waits for delivery, then returns the number of changes the recorder received. */
static int delivered(cbl_db* db, recorder* r) {
    cbl_error e;
    if (cbl_db_wait_notifications(db, 5000, &e) != CBL_OK) return -1;
    return rec_changes(r);
}

/* ---- Transactions ---------------------------------------------------------------- */

typedef struct txn_ctx { cbl_collection* coll; const char* id; int commit; cbl_status put_status; } txn_ctx;

static int txn_body(void* context) {
    txn_ctx* t = (txn_ctx*)context;
    t->put_status = put(t->coll, t->id, "{\"in\":\"txn\"}", NULL, NULL, 0);
    return t->commit;
}

typedef struct thread_status { cbl_db* db; cbl_status st; } thread_status;

static void* commit_from_other_thread(void* arg) {
    thread_status* ts = (thread_status*)arg;
    ts->st = cbl_db_commit(ts->db, NULL);
    return NULL;
}

/* Writes through another handle from another thread: waits for the lock, then 503. */
typedef struct blocked_writer { cbl_collection* coll; cbl_status st; } blocked_writer;
static void* write_from_other_thread(void* arg) {
    blocked_writer* b = (blocked_writer*)arg;
    b->st = cbl_doc_put(b->coll, "blocked", "{}", NULL, 0, NULL, NULL, NULL);
    return NULL;
}

static void test_transactions(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("txn", "txn", dir, sizeof dir, &c);
    recorder rec;
    rec_init(&rec);
    cbl_listener_token* tok = NULL;
    CHECK_ST(cbl_db_add_change_listener(db, rec_cb, &rec, &tok, &E), CBL_OK);
    /* begin / commit */
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    CHECK_ST(put(c, "t1", "{\"v\":1}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(put(c, "t2", "{\"v\":2}", NULL, NULL, 0), CBL_OK);
    CHECK_DOC(c, "t1", 0, 1); /* visible inside the transaction */
    CHECK(rec_changes(&rec) == 0); /* not before commit */
    CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
    CHECK(delivered(db, &rec) == 2 && rec.out_of_order == 0);
    CHECK_NUM(cbl_db_count(db, &U, &E), 2);
    /* nested begins fold into the outermost: the inner commit writes nothing, abort ends all */
    rec_reset(&rec);
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    CHECK_ST(put(c, "nested-aborted", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_db_commit(db, &E), CBL_OK);   /* inner */
    CHECK_ST(cbl_db_abort(db, &E), CBL_OK);    /* rolls back the inner commit's work too */
    CHECK_ST(cbl_db_commit(db, &E), CBL_NOT_ACCEPTABLE); /* the whole nesting ended */
    CHECK_OUT(cbl_doc_get(c, "nested-aborted", CBL_GET_DELETED, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_NUM(cbl_db_last_sequence(db, &U, &E), 2);
    CHECK(delivered(db, &rec) == 0); /* no notification for an aborted transaction */

    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    CHECK_ST(put(c, "nested-ok", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
    CHECK(delivered(db, &rec) == 0); /* inner commit: nothing delivered yet */
    CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
    CHECK(delivered(db, &rec) == 1 && rec_saw(&rec, "nested-ok"));
    CHECK_DOC(c, "nested-ok", 0, 1);
    /* abort leaves no trace */
    rec_reset(&rec);
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    CHECK_ST(put(c, "ghost", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_doc_delete(c, "t1", NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_db_abort(db, &E), CBL_OK);
    CHECK(get(c, "ghost", CBL_GET_DELETED) == NULL);
    CHECK_DOC(c, "t1", 0, jhas(D, "v", "1"));
    CHECK_NUM(cbl_db_count(db, &U, &E), 3);
    CHECK_NUM(cbl_db_last_sequence(db, &U, &E), 3);
    CHECK(delivered(db, &rec) == 0);
    /* in_transaction: commit and abort */
    txn_ctx t = {c, "via-body", 1, -1};
    CHECK_ST(cbl_db_in_transaction(db, txn_body, &t, &E), CBL_OK);
    CHECK(t.put_status == CBL_OK);
    CHECK_DOC(c, "via-body", 0, jhas(D, "in", "\"txn\""));
    txn_ctx t2 = {c, "via-body-aborted", 0, -1};
    CHECK_ST(cbl_db_in_transaction(db, txn_body, &t2, &E), CBL_CONFLICT);
    CHECK(t2.put_status == CBL_OK && get(c, "via-body-aborted", CBL_GET_DELETED) == NULL);
    CHECK(delivered(db, &rec) == 1 && rec_saw(&rec, "via-body"));
    CHECK_ST(cbl_db_in_transaction(db, NULL, NULL, &E), CBL_BAD_REQUEST);
    /* another thread's write waits for the transaction at most busy_timeout_ms, then 503 */
    cbl_db* impatient = NULL;
    CHECK_ST(cbl_db_open("txn", dir, "{\"busy_timeout_ms\":300}", &impatient, &E), CBL_OK);
    blocked_writer bw = {default_coll(impatient), -1};
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    pthread_t wt;
    time_t t0 = time(NULL);
    CHECK(pthread_create(&wt, NULL, write_from_other_thread, &bw) == 0);
    pthread_join(wt, NULL);
    CHECK(bw.st == CBL_BUSY);
    CHECK(time(NULL) - t0 < 5); /* this handle's busy_timeout_ms (300), not the default 10 s */
    CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
    CHECK(write_from_other_thread(&bw) == NULL && bw.st == CBL_OK); /* free again */
    RELEASE_AND_CLOSE(bw.coll, impatient);
    /* commit / abort without begin */
    CHECK_ST(cbl_db_commit(db, &E), CBL_NOT_ACCEPTABLE);
    CHECK_ST(cbl_db_abort(db, &E), CBL_NOT_ACCEPTABLE);
    /* close / delete / compact with an open transaction: 406, then commit and close work */
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    CHECK_ST(put(c, "thread-owned", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_db_compact(db, &E), CBL_NOT_ACCEPTABLE);
    CHECK_ST(cbl_db_close(db, &E), CBL_NOT_ACCEPTABLE);
    CHECK_ST(cbl_db_delete(db, &E), CBL_NOT_ACCEPTABLE);
    CHECK_NUM(cbl_db_count(db, &U, &E), 6); /* the handle stayed open */
    /* commit from another thread than the one that began: 406, and the transaction
     * (with the handle's refusal to close) stays in place */
    thread_status ts = {db, -1};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, commit_from_other_thread, &ts) == 0);
    pthread_join(th, NULL);
    CHECK(ts.st == CBL_NOT_ACCEPTABLE);
    poison();
    cbl_status cst = cbl_db_close(db, &E);
    CHECK(cst == CBL_NOT_ACCEPTABLE); /* still inside the transaction */
    cbl_listener_token_remove(tok);
    if (cst == CBL_OK) {
        fprintf(stderr, "  (handle closed with its transaction open; rest of test_transactions skipped)\n");
    } else {
        CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
        CHECK_DOC(c, "thread-owned", 0, 1);
        CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    }
    cbl_collection_release(c);
    pthread_mutex_destroy(&rec.mu);
}

/* ---- Collections ----------------------------------------------------------------- */

/* cbl_db_collection / cbl_db_create_collection must fail with `want`, *out set to NULL. */
static void coll_fails(cbl_db* db, const char* scope, const char* name, int create, cbl_status want, int line) {
    cbl_collection* c = (cbl_collection*)POISON_PTR;
    poison();
    cbl_status st = create ? cbl_db_create_collection(db, scope, name, &c, &E) : cbl_db_collection(db, scope, name, &c, &E);
    check_st_(st, want, create ? "cbl_db_create_collection(..., &E)" : "cbl_db_collection(..., &E)", __FILE__, line);
    check_(c == NULL, "collection out-parameter set to NULL on failure", __FILE__, line);
}
#define COLL_FAILS(db, scope, name, create, want) coll_fails(db, scope, name, create, want, __LINE__)

static void test_collections(void) {
    char dir[512];
    subdir("colls", dir, sizeof dir);
    cbl_db* db = open_db("colls", dir);

    cbl_collection* def = default_coll(db);
    CHECK_OUT(cbl_collection_name(def, &J, &E), CBL_OK, strcmp(J, CBL_DEFAULT_COLLECTION) == 0);
    CHECK_OUT(cbl_collection_scope(def, &J, &E), CBL_OK, strcmp(J, CBL_DEFAULT_SCOPE) == 0);
    cbl_collection* def2 = NULL;
    CHECK_ST(cbl_db_collection(db, NULL, "_default", &def2, &E), CBL_OK);
    CHECK_ST(put(def2, "in-default", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_NUM(cbl_collection_count(def, &U, &E), 1);
    cbl_collection_release(def2);
    /* missing collection: 404; invalid names: 400 */
    COLL_FAILS(db, "s1", "c1", 0, CBL_NOT_FOUND);
    char longn[260];
    memset(longn, 'x', 252);
    longn[252] = '\0';
    const char* bad[] = {"_x", "%x", "", "a b", "a.b", "caf\xc3\xa9", longn, NULL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        COLL_FAILS(db, "s1", bad[i], 1, CBL_BAD_REQUEST);
        COLL_FAILS(db, "s1", bad[i], 0, CBL_BAD_REQUEST);
        if (bad[i]) COLL_FAILS(db, bad[i], "c1", 1, CBL_BAD_REQUEST);
    }
    /* create (and its scope), then open */
    cbl_collection *c = NULL, *c2 = NULL, *again = NULL, *lc = NULL;
    CHECK_ST(cbl_db_create_collection(db, "s1", "c1", &c, &E), CBL_OK);
    longn[251] = '\0'; /* 251 bytes: allowed */
    CHECK_ST(cbl_db_create_collection(db, NULL, longn, &lc, &E), CBL_OK);
    cbl_collection_release(lc);
    CHECK_ST(cbl_db_create_collection(db, "s1", "c-2%x", &c2, &E), CBL_OK);
    CHECK_ST(cbl_db_create_collection(db, "s1", "c1", &again, &E), CBL_OK); /* existing: opens */
    CHECK_ST(put(again, "only-in-c1", "{\"x\":1}", NULL, NULL, 0), CBL_OK);
    cbl_collection_release(again);
    CHECK_ST(cbl_db_collection(db, "s1", "c1", &again, &E), CBL_OK);
    CHECK_OUT(cbl_collection_name(again, &J, &E), CBL_OK, strcmp(J, "c1") == 0);
    CHECK_OUT(cbl_collection_scope(again, &J, &E), CBL_OK, strcmp(J, "s1") == 0);
    cbl_collection_release(again);
    /* documents are per collection */
    CHECK_NUM(cbl_collection_count(c, &U, &E), 1);
    CHECK_NUM(cbl_collection_last_sequence(c, &U, &E), 1);
    CHECK_OUT(cbl_doc_get(def, "only-in-c1", 0, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_get(c, "in-default", 0, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_NUM(cbl_db_count(db, &U, &E), 1); /* db_count is the default collection's */
    /* scope and collection names (sorted) */
    CHECK_OUT(cbl_db_scope_names(db, &J, &E), CBL_OK, strcmp(J, "[\"_default\",\"s1\"]") == 0);
    CHECK_OUT(cbl_db_collection_names(db, "s1", &J, &E), CBL_OK, strcmp(J, "[\"c-2%x\",\"c1\"]") == 0);
    CHECK_OUT(cbl_db_collection_names(db, NULL, &J, &E), CBL_OK, strstr(J, "\"_default\"") && strstr(J, longn));
    CHECK_OUT(cbl_db_collection_names(db, "nosuchscope", &J, &E), CBL_NOT_FOUND, 1);
    CHECK_ST(cbl_db_scope_names(db, NULL, &E), CBL_BAD_REQUEST);
    /* delete: default 403, missing 404, others gone and their handles 404 */
    CHECK_ST(cbl_db_delete_collection(db, NULL, "_default", &E), CBL_FORBIDDEN);
    CHECK_ST(cbl_db_delete_collection(db, "_default", "_default", &E), CBL_FORBIDDEN);
    CHECK_ST(cbl_db_delete_collection(db, "s1", "nope", &E), CBL_NOT_FOUND);
    CHECK_ST(cbl_db_delete_collection(db, "s1", "_bad", &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_delete_collection(db, "s1", "c1", &E), CBL_OK);
    COLL_FAILS(db, "s1", "c1", 0, CBL_NOT_FOUND);
    CHECK_ST(cbl_collection_count(c, &(uint64_t){0}, &E), CBL_NOT_FOUND);
    CHECK_OUT(cbl_doc_get(c, "only-in-c1", 0, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_ST(put(c, "after-delete", "{}", NULL, NULL, 0), CBL_NOT_FOUND);
    CHECK_ST(cbl_db_delete_collection(db, "s1", "c1", &E), CBL_NOT_FOUND);
    CHECK_OUT(cbl_db_collection_names(db, "s1", &J, &E), CBL_OK, strcmp(J, "[\"c-2%x\"]") == 0);
    /* a scope without collections disappears from the scope names */
    CHECK_ST(cbl_db_delete_collection(db, "s1", "c-2%x", &E), CBL_OK);
    CHECK_OUT(cbl_db_scope_names(db, &J, &E), CBL_OK, strcmp(J, "[\"_default\"]") == 0);
    /* re-created, the collection is empty */
    cbl_collection* fresh = NULL;
    CHECK_ST(cbl_db_create_collection(db, "s1", "c1", &fresh, &E), CBL_OK);
    CHECK_NUM(cbl_collection_count(fresh, &U, &E), 0);
    CHECK_ST(put(fresh, "new", "{}", NULL, NULL, 0), CBL_OK);
    cbl_collection_release(fresh);
    /* collections and their documents persist across reopening */
    cbl_collection_release(c);
    cbl_collection_release(c2);
    RELEASE_AND_CLOSE(def, db);
    db = open_db("colls", dir);
    CHECK_ST(cbl_db_collection(db, "s1", "c1", &c, &E), CBL_OK);
    CHECK_DOC(c, "new", 0, 1);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- Documents: basics ----------------------------------------------------------- */

/* cbl_doc_put must fail with `want`, setting both out-parameters to NULL. */
static void put_fails(cbl_collection* c, const char* id, const char* body, const char* parent,
                      uint32_t flags, cbl_status want, int line) {
    char* out_id = POISON_PTR;
    char* out_rev = POISON_PTR;
    poison();
    cbl_status st = cbl_doc_put(c, id, body, parent, flags, &out_id, &out_rev, &E);
    char what[200];
    snprintf(what, sizeof what, "cbl_doc_put(id=%.40s, body=%.60s, &E)", id ? id : "NULL", body ? body : "NULL");
    check_st_(st, want, what, __FILE__, line);
    check_(out_id == NULL && out_rev == NULL, "out_doc_id and out_rev_id set to NULL on failure", __FILE__, line);
    if (st == CBL_OK) { cbl_free(out_id); cbl_free(out_rev); }
}
#define PUT_FAILS(c, id, body, parent, flags, want) put_fails(c, id, body, parent, flags, want, __LINE__)

static void test_documents_basic(void) {
    char dir[512], rev1[128], rev2[128], rev3[128], buf[200];
    cbl_collection* c; cbl_db* db = setup("docs", "docs", dir, sizeof dir, &c);
    /* generated ID: a new UUID each time */
    char *id = NULL, *rev = NULL, *id2 = NULL;
    CHECK_ST(cbl_doc_put(c, NULL, "{\"kind\":\"generated\"}", NULL, 0, &id, &rev, &E), CBL_OK);
    CHECK(id && strlen(id) >= 8 && id[0] != '_' && rev && strncmp(rev, "1-", 2) == 0 && strlen(rev) > 3);
    CHECK_DOC(c, id ? id : "?", 0, jhas(D, "kind", "\"generated\"") && jstr(D, "_id", buf, sizeof buf) &&
              strcmp(buf, id) == 0 && jstr(D, "_rev", buf, sizeof buf) && strcmp(buf, rev) == 0);
    CHECK_ST(cbl_doc_put(c, NULL, "{\"kind\":\"generated\"}", NULL, 0, &id2, NULL, &E), CBL_OK);
    CHECK(id && id2 && strcmp(id, id2) != 0);
    cbl_free(id);
    cbl_free(id2);
    cbl_free(rev);
    /* ID taken from the body's "_id"; a contradicting "_id" is 400; an equal one fine */
    id = NULL;
    CHECK_ST(cbl_doc_put(c, NULL, "{\"_id\":\"from-body\",\"x\":1}", NULL, 0, &id, NULL, &E), CBL_OK);
    CHECK(id && strcmp(id, "from-body") == 0);
    cbl_free(id);
    PUT_FAILS(c, "other", "{\"_id\":\"from-body2\"}", NULL, 0, CBL_BAD_REQUEST);
    CHECK_ST(cbl_doc_put(c, "same-id", "{\"_id\":\"same-id\"}", NULL, 0, NULL, NULL, &E), CBL_OK);
    /* given ID; 409 when it exists; 409 on a stale parent; 404 on an unknown parent */
    CHECK_ST(put(c, "doc", "{\"n\":1,\"s\":\"caf\xc3\xa9\",\"arr\":[1,2,{\"k\":null}]}", NULL, rev1, sizeof rev1), CBL_OK);
    CHECK(strncmp(rev1, "1-", 2) == 0);
    PUT_FAILS(c, "doc", "{\"n\":9}", NULL, 0, CBL_CONFLICT);
    CHECK_ST(put(c, "doc", "{\"n\":2}", rev1, rev2, sizeof rev2), CBL_OK);
    CHECK(generation(rev2) == 2);
    PUT_FAILS(c, "doc", "{\"n\":3}", rev1, 0, CBL_CONFLICT);
    snprintf(buf, sizeof buf, "{\"n\":3,\"_rev\":\"%s\"}", rev1);
    PUT_FAILS(c, "doc", buf, NULL, 0, CBL_CONFLICT); /* "_rev" in the body: stale */
    PUT_FAILS(c, "doc", "{\"n\":3}", "1-00ff", CBL_PUT_ALLOW_CONFLICT, CBL_NOT_FOUND);
    PUT_FAILS(c, "never-created", "{}", "1-abcd", 0, CBL_NOT_FOUND);
    /* "_rev" in the body names the parent */
    snprintf(buf, sizeof buf, "{\"n\":3,\"_rev\":\"%s\"}", rev2);
    CHECK_ST(put(c, "doc", buf, NULL, rev3, sizeof rev3), CBL_OK);
    CHECK(generation(rev3) == 3);
    CHECK_DOC(c, "doc", 0, jhas(D, "n", "3") && jhas(D, "_id", "\"doc\"") && strstr(D, rev3));
    /* get_revision; UTF-8 and nested values round-trip */
    CHECK_OUT(cbl_doc_get_revision(c, "doc", rev1, 0, &J, &E), CBL_OK,
              strstr(J, "caf\xc3\xa9") && jhas(J, "k", "null") && jhas(J, "n", "1") && jstr(J, "_rev", buf, sizeof buf) && strcmp(buf, rev1) == 0);
    CHECK_OUT(cbl_doc_get_revision(c, "doc", "1-ffffffff", 0, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_get_revision(c, "nodoc", rev1, 0, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_get_revision(c, "doc", "garbage", 0, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_OUT(cbl_doc_get(c, "missing", 0, &J, &E), CBL_NOT_FOUND, 1);
    /* the exact text of a read: metadata first, then the body's members; an ID that needs
     * escaping is escaped; an empty body gives only the metadata */
    {
        char want[256];
        CHECK_ST(put(c, "exact", "{\"b\":[1,2],\"a\":\"x\"}", NULL, rev1, sizeof rev1), CBL_OK);
        snprintf(want, sizeof want, "{\"_id\":\"exact\",\"_rev\":\"%s\",\"a\":\"x\",\"b\":[1,2]}", rev1);
        CHECK_OUT(cbl_doc_get(c, "exact", 0, &J, &E), CBL_OK, strcmp(J, want) == 0);
        CHECK_ST(put(c, "q\"uote\\d", "{}", NULL, rev1, sizeof rev1), CBL_OK);
        snprintf(want, sizeof want, "{\"_id\":\"q\\\"uote\\\\d\",\"_rev\":\"%s\"}", rev1);
        CHECK_OUT(cbl_doc_get(c, "q\"uote\\d", 0, &J, &E), CBL_OK, strcmp(J, want) == 0);
    }
    /* delete: 404 afterwards unless CBL_GET_DELETED */
    char tomb[128];
    CHECK_OUT(cbl_doc_delete(c, "doc", rev2, &J, &E), CBL_CONFLICT, 1); /* parent not current */
    CHECK_OUT(cbl_doc_delete(c, "doc", NULL, &J, &E), CBL_OK, generation(J) == 4 && snprintf(tomb, sizeof tomb, "%s", J) > 0);
    CHECK_OUT(cbl_doc_get(c, "doc", 0, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_DOC(c, "doc", CBL_GET_DELETED, jhas(D, "_deleted", "true") && jstr(D, "_rev", buf, sizeof buf) && strcmp(buf, tomb) == 0);
    CHECK_ST(cbl_doc_delete(c, "doc", NULL, NULL, &E), CBL_NOT_FOUND);
    CHECK_ST(cbl_doc_delete(c, "never", NULL, NULL, &E), CBL_NOT_FOUND);
    /* re-creating a deleted document: a new revision on the tombstone */
    CHECK_ST(put(c, "doc", "{\"n\":5}", NULL, rev3, sizeof rev3), CBL_OK);
    CHECK(generation(rev3) == 5);
    /* tombstone with properties, via "_deleted":true */
    char r[128], t[128];
    CHECK_ST(put(c, "tomb", "{\"keep\":1}", NULL, r, sizeof r), CBL_OK);
    uint64_t count0 = 0;
    CHECK_ST(cbl_collection_count(c, &count0, &E), CBL_OK);
    CHECK_ST(put(c, "tomb", "{\"_deleted\":true,\"reason\":\"gone\"}", r, t, sizeof t), CBL_OK);
    CHECK(generation(t) == 2 && get(c, "tomb", 0) == NULL);
    CHECK_DOC(c, "tomb", CBL_GET_DELETED, jhas(D, "reason", "\"gone\"") && jhas(D, "_deleted", "true"));
    CHECK_NUM(cbl_collection_count(c, &U, &E), count0 - 1);
    CHECK_OUT(cbl_doc_conflicts(c, "tomb", &J, &E), CBL_OK, strcmp(J, "[]") == 0);
    /* metadata, JSON and ID rules: 400 */
    char longid[1100];
    memset(longid, 'i', 1025);
    longid[1025] = '\0';
    const char* bad_bodies[] = {"{\"_foo\":1}", "{\"a\":1", "[1,2]", "\"str\"", "{\"a\":\"\xff\xfe\"}",
                                "{\"a\":1} trailing", "", "{\"_deleted\":\"yes\"}", NULL};
    for (size_t i = 0; i < sizeof bad_bodies / sizeof bad_bodies[0]; i++) {
        PUT_FAILS(c, "m1", bad_bodies[i], NULL, 0, CBL_BAD_REQUEST);
        CHECK(get(c, "m1", CBL_GET_DELETED) == NULL);
    }
    const char* bad_ids[] = {"_design", "", "ctl\x01id", "bad\xc3", longid};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++)
        PUT_FAILS(c, bad_ids[i], "{}", NULL, 0, CBL_BAD_REQUEST);
    longid[1024] = '\0';
    CHECK_ST(put(c, longid, "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(put(c, "\xe6\x96\x87\xe6\x9b\xb8 with spaces", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(put(c, "m8", "{\"_attachments\":{}}", NULL, NULL, 0), CBL_OK);
    /* NULL pointers: 400 with out-parameters set to NULL */
    PUT_FAILS(NULL, "n1", "{}", NULL, 0, CBL_BAD_REQUEST);
    CHECK_OUT(cbl_doc_get(c, NULL, 0, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_OUT(cbl_doc_get(NULL, "doc", 0, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_ST(cbl_doc_get(c, "doc", 0, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_doc_get(c, "doc", 0, NULL, NULL), CBL_BAD_REQUEST);
    CHECK_OUT(cbl_doc_delete(c, NULL, NULL, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_OUT(cbl_doc_get_revision(c, "doc", NULL, 0, &J, &E), CBL_BAD_REQUEST, 1);
    /* the same change on two databases gives the same revision ID */
    cbl_db* other = open_db("docs-other", dir);
    cbl_collection* oc = default_coll(other);
    char a1[128], b1[128], a2[128], b2[128], a3[128], b3[128];
    CHECK_ST(put(c, "twin", "{\"x\":1,\"y\":[true,false]}", NULL, a1, sizeof a1), CBL_OK);
    CHECK_ST(put(oc, "twin", "{\"y\":[true,false],\"x\":1}", NULL, b1, sizeof b1), CBL_OK); /* key order differs */
    CHECK(a1[0] && strcmp(a1, b1) == 0);
    CHECK_ST(put(c, "twin", "{\"x\":2}", a1, a2, sizeof a2), CBL_OK);
    CHECK_ST(put(oc, "twin", "{ \"x\" : 2 }", b1, b2, sizeof b2), CBL_OK);
    CHECK(a2[0] && strcmp(a2, b2) == 0 && strcmp(a1, a2) != 0);
    CHECK_ST(cbl_doc_delete(c, "twin", NULL, NULL, &E), CBL_OK);
    CHECK_ST(put(oc, "twin", "{\"x\":3}", b2, b3, sizeof b3), CBL_OK); /* differs from a deletion */
    CHECK_DOC(c, "twin", CBL_GET_DELETED, jstr(D, "_rev", a3, sizeof a3) && strcmp(a3, b3) != 0 && generation(a3) == 3);
    RELEASE_AND_CLOSE(oc, other);

    RELEASE_AND_CLOSE(c, db);
}

/* ---- Documents: conflicts, winner rule, history, revision tree ------------------- */

/* 1 when element i of the flat JSON string array equals want. */
static int jarray_is(const char* json, int i, const char* want) {
    char el[200];
    return jarray_at(json, i, el, sizeof el) != NULL && strcmp(el, want) == 0;
}

/* Inserts with cbl_doc_put_existing, then checks the document's current revision. */
static void put_existing(cbl_collection* c, const char* id, const char* body, const char* history,
                         const char* want_current, int line) {
    char cur[128], what[300];
    poison();
    snprintf(what, sizeof what, "cbl_doc_put_existing(%s, %s, &E)", id, history);
    check_st_(cbl_doc_put_existing(c, id, body, history, &E), CBL_OK, what, __FILE__, line);
    snprintf(what, sizeof what, "current revision of %s is %s", id, want_current);
    check_(strcmp(current_rev(c, id, cur, sizeof cur), want_current) == 0, what, __FILE__, line);
}
#define PUT_EXISTING(c, id, body, history, want_current) put_existing(c, id, body, history, want_current, __LINE__)
#define CURRENT_IS(c, id, want) do { char cur_[128]; CHECK(strcmp(current_rev(c, id, cur_, sizeof cur_), want) == 0); } while (0)

static void test_conflicts(void) {
    char dir[512], r1[128], r2a[128], r2b[128], buf[512];
    cbl_collection* c; cbl_db* db = setup("conflicts", "conflicts", dir, sizeof dir, &c);
    /* A branch via CBL_PUT_ALLOW_CONFLICT */
    CHECK_ST(put(c, "cf", "{\"v\":1}", NULL, r1, sizeof r1), CBL_OK);
    CHECK_ST(put(c, "cf", "{\"v\":\"a\"}", r1, r2a, sizeof r2a), CBL_OK);
    PUT_FAILS(c, "cf", "{\"v\":\"b\"}", r1, 0, CBL_CONFLICT);
    CHECK_OUT(cbl_doc_put(c, "cf", "{\"v\":\"b\"}", r1, CBL_PUT_ALLOW_CONFLICT, NULL, &J, &E), CBL_OK,
              snprintf(r2b, sizeof r2b, "%s", J) > 0 && generation(r2b) == 2 && strcmp(r2a, r2b) != 0);
    const char* win = strcmp(r2a, r2b) > 0 ? r2a : r2b;
    const char* lose = strcmp(r2a, r2b) > 0 ? r2b : r2a;
    CURRENT_IS(c, "cf", win);
    CHECK_OUT(cbl_doc_conflicts(c, "cf", &J, &E), CBL_OK, jarray_len(J) == 2 && jarray_is(J, 0, win) && jarray_is(J, 1, lose));
    CHECK_OUT(cbl_doc_conflicts(c, "nope", &J, &E), CBL_NOT_FOUND, 1);
    /* output flags */
    CHECK_DOC(c, "cf", CBL_GET_CONFLICTS, jval(D, "_conflicts") && jarray_len(jval(D, "_conflicts")) == 1 &&
              jarray_is(jval(D, "_conflicts"), 0, lose) && !jval(D, "_revisions") && !jval(D, "_local_seq"));
    CHECK_DOC(c, "cf", 0, !jval(D, "_conflicts") && !jval(D, "_revisions") && !jval(D, "_local_seq"));
    CHECK_DOC(c, "cf", CBL_GET_REVISIONS, jval(D, "_revisions") && jint(D, "start") == 2 && jval(D, "ids") &&
              jarray_len(jval(D, "ids")) == 2 && jarray_is(jval(D, "ids"), 0, strchr(win, '-') + 1) &&
              jarray_is(jval(D, "ids"), 1, strchr(r1, '-') + 1));
    uint64_t last = 0;
    CHECK_ST(cbl_collection_last_sequence(c, &last, &E), CBL_OK);
    CHECK_DOC(c, "cf", CBL_GET_LOCAL_SEQ, jint(D, "_local_seq") == (long long)last);
    CHECK_OUT(cbl_doc_get_revision(c, "cf", lose, CBL_GET_REVISIONS | CBL_GET_LOCAL_SEQ, &J, &E), CBL_OK,
              jstr(J, "_rev", buf, sizeof buf) && strcmp(buf, lose) == 0 && jint(J, "start") == 2 && jval(J, "_local_seq"));
    /* resolve by deleting the losing leaf; only leaves may be named */
    CHECK_OUT(cbl_doc_delete(c, "cf", r1, &J, &E), CBL_CONFLICT, 1);      /* not a leaf */
    CHECK_OUT(cbl_doc_delete(c, "cf", "2-ffff", &J, &E), CBL_CONFLICT, 1); /* unknown */
    char ltomb[128];
    CHECK_OUT(cbl_doc_delete(c, "cf", lose, &J, &E), CBL_OK, generation(J) == 3 && snprintf(ltomb, sizeof ltomb, "%s", J) > 0);
    CHECK_OUT(cbl_doc_conflicts(c, "cf", &J, &E), CBL_OK, jarray_len(J) == 1 && jarray_is(J, 0, win));
    CURRENT_IS(c, "cf", win);
    CHECK_DOC(c, "cf", CBL_GET_CONFLICTS, !jval(D, "_conflicts"));
    CHECK_OUT(cbl_doc_delete(c, "cf", ltomb, &J, &E), CBL_NOT_FOUND, 1);  /* a tombstone leaf */
    CHECK_OUT(cbl_doc_delete(c, "cf", lose, &J, &E), CBL_CONFLICT, 1);    /* no longer a leaf */
    /* a tombstone on a branch via CBL_PUT_ALLOW_CONFLICT works too */
    PUT_EXISTING(c, "cf2", "{}", "[\"2-bb\",\"1-aa\"]", "2-bb");
    PUT_EXISTING(c, "cf2", "{}", "[\"2-cc\",\"1-aa\"]", "2-cc");
    CHECK_ST(cbl_doc_put(c, "cf2", "{\"_deleted\":true}", "2-bb", CBL_PUT_ALLOW_CONFLICT, NULL, NULL, &E), CBL_OK);
    CHECK_OUT(cbl_doc_conflicts(c, "cf2", &J, &E), CBL_OK, strcmp(J, "[\"2-cc\"]") == 0);
    /* put_existing: winner by generation, then by ASCII */
    PUT_EXISTING(c, "w1", "{\"b\":1}", "[\"1-a1\"]", "1-a1");
    PUT_EXISTING(c, "w1", "{\"b\":2}", "[\"2-b2\",\"1-a1\"]", "2-b2");
    PUT_EXISTING(c, "w1", "{\"b\":\"f\"}", "[\"2-f2\",\"1-a1\"]", "2-f2"); /* equal gen: higher ASCII */
    PUT_EXISTING(c, "w1", "{\"b\":\"0\"}", "[\"2-0z\",\"1-a1\"]", "2-f2");
    PUT_EXISTING(c, "w1", "{\"b\":3}", "[\"3-c3\",\"2-b2\",\"1-a1\"]", "3-c3"); /* higher generation */
    CHECK_DOC(c, "w1", 0, jhas(D, "b", "3"));
    CHECK_OUT(cbl_doc_conflicts(c, "w1", &J, &E), CBL_OK, jarray_len(J) == 3 && jarray_is(J, 0, "3-c3") &&
              strstr(J, "\"2-f2\"") && strstr(J, "\"2-0z\"") && !strstr(J, "\"2-b2\""));
    /* a known revision: no-op */
    uint64_t s0 = 0;
    CHECK_ST(cbl_collection_last_sequence(c, &s0, &E), CBL_OK);
    PUT_EXISTING(c, "w1", "{\"b\":3}", "[\"3-c3\",\"2-b2\",\"1-a1\"]", "3-c3");
    CHECK_NUM(cbl_collection_last_sequence(c, &U, &E), s0);
    /* undeleted beats a deleted leaf of higher generation */
    PUT_EXISTING(c, "w1", "{\"_deleted\":true}", "[\"6-d6\",\"5-d5\",\"4-d4\",\"3-c3\",\"2-b2\",\"1-a1\"]", "2-f2");
    /* all leaves deleted: the deleted leaf of highest generation; the doc reads as deleted */
    PUT_EXISTING(c, "w2", "{\"x\":1}", "[\"1-a1\"]", "1-a1");
    PUT_EXISTING(c, "w2", "{\"_deleted\":true}", "[\"2-d2\",\"1-a1\"]", "2-d2");
    PUT_EXISTING(c, "w2", "{\"_deleted\":true,\"why\":\"x\"}", "[\"3-d3\",\"2-x2\",\"1-a1\"]", "3-d3");
    CHECK(get(c, "w2", 0) == NULL);
    CHECK_DOC(c, "w2", CBL_GET_DELETED, jhas(D, "_deleted", "true") && jhas(D, "why", "\"x\""));
    CHECK_OUT(cbl_doc_conflicts(c, "w2", &J, &E), CBL_OK, strcmp(J, "[]") == 0);
    /* ancestors added without bodies: 404 for their bodies */
    CHECK_OUT(cbl_doc_get_revision(c, "w2", "2-x2", 0, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_get_revision(c, "w1", "5-d5", 0, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_get_revision(c, "w1", "6-d6", 0, &J, &E), CBL_OK, jhas(J, "_deleted", "true"));
    /* a new document arriving with history, ancestors unknown here */
    PUT_EXISTING(c, "w3", "{\"deep\":true}", "[\"7-e7\",\"6-e6\",\"5-e5\"]", "7-e7");
    CHECK_OUT(cbl_doc_history(c, "w3", NULL, &J, &E), CBL_OK, jarray_len(J) == 3 && jarray_is(J, 1, "6-e6"));
    /* bad histories and bodies */
    const char* bad_hist[] = {"[\"2-b\",\"3-c\"]", "[\"2-b\",\"2-c\"]", "[\"nodash\"]", "[\"0-abc\"]", "[]",
                              "{\"a\":1}", "[1]", NULL};
    for (size_t i = 0; i < sizeof bad_hist / sizeof bad_hist[0]; i++)
        CHECK_ST(cbl_doc_put_existing(c, "w4", "{}", bad_hist[i], &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_doc_put_existing(c, "w4", "{\"_x\":1}", "[\"1-a\"]", &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_doc_put_existing(c, "w4", NULL, "[\"1-a\"]", &E), CBL_BAD_REQUEST);
    CHECK(get(c, "w4", CBL_GET_DELETED) == NULL);
    /* history: newest first, the second element is the parent */
    char h1[128], h2[128], h3[128];
    CHECK_ST(put(c, "h", "{\"i\":1}", NULL, h1, sizeof h1), CBL_OK);
    CHECK_ST(put(c, "h", "{\"i\":2}", h1, h2, sizeof h2), CBL_OK);
    CHECK_ST(put(c, "h", "{\"i\":3}", h2, h3, sizeof h3), CBL_OK);
    CHECK_OUT(cbl_doc_history(c, "h", NULL, &J, &E), CBL_OK,
              jarray_len(J) == 3 && jarray_is(J, 0, h3) && jarray_is(J, 1, h2) && jarray_is(J, 2, h1));
    CHECK_OUT(cbl_doc_history(c, "h", h2, &J, &E), CBL_OK, jarray_len(J) == 2 && jarray_is(J, 1, h1));
    CHECK_OUT(cbl_doc_history(c, "h", "9-nope", &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_history(c, "nodoc", NULL, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_history(c, NULL, NULL, &J, &E), CBL_BAD_REQUEST, 1);
    /* revision tree (newest first) */
    snprintf(buf, sizeof buf, "\"%s\"", h3);
    CHECK_OUT(cbl_doc_revision_tree(c, "h", &J, &E), CBL_OK,
              jhas(J, "id", "\"h\"") && jhas(J, "current", buf) && jint(J, "sequence") > 0 &&
              jhas(J, "parent", "null") && count_of(J, "\"rev\"") == 3 && jhas(J, "leaf", "true") &&
              jhas(J, "leaf", "false") && jhas(J, "has_body", "true") && jhas(J, "deleted", "false") &&
              jval(J, "revisions") && strstr(jval(J, "revisions"), h3) && strstr(jval(J, "revisions"), h1) &&
              strstr(jval(J, "revisions"), h3) < strstr(jval(J, "revisions"), h1));
    CHECK_OUT(cbl_doc_revision_tree(c, "w1", &J, &E), CBL_OK, count_of(J, "\"rev\"") == 8 &&
              jhas(J, "deleted", "true") && jhas(J, "has_body", "false") && jhas(J, "current", "\"2-f2\""));
    CHECK_OUT(cbl_doc_revision_tree(c, "nodoc", &J, &E), CBL_NOT_FOUND, 1);
    /* updates on the winner of a conflicted document (one statement each, pruned past the
     * depth with the losing branch kept): still conflicted, the loser still readable */
    char u1[128], ua[128], ub[128], uw[128];
    CHECK_ST(cbl_db_set_max_rev_tree_depth(db, 3, &E), CBL_OK);
    CHECK_ST(put(c, "cw", "{\"v\":1}", NULL, u1, sizeof u1), CBL_OK);
    CHECK_ST(put(c, "cw", "{\"v\":\"a\"}", u1, ua, sizeof ua), CBL_OK);
    CHECK_OUT(cbl_doc_put(c, "cw", "{\"v\":\"b\"}", u1, CBL_PUT_ALLOW_CONFLICT, NULL, &J, &E), CBL_OK,
              snprintf(ub, sizeof ub, "%s", J) > 0);
    snprintf(uw, sizeof uw, "%s", strcmp(ua, ub) > 0 ? ua : ub);
    const char* ul = strcmp(ua, ub) > 0 ? ub : ua;
    for (int i = 0; i < 4; i++) {
        char body[64], next[128];
        snprintf(body, sizeof body, "{\"v\":%d,\"price\":10.50}", i);
        CHECK_ST(put(c, "cw", body, uw, next, sizeof next), CBL_OK);
        CHECK(generation(next) == generation(uw) + 1);
        snprintf(uw, sizeof uw, "%s", next);
    }
    CHECK_OUT(cbl_doc_conflicts(c, "cw", &J, &E), CBL_OK, jarray_len(J) == 2 && jarray_is(J, 0, uw) && jarray_is(J, 1, ul));
    CHECK_OUT(cbl_doc_history(c, "cw", NULL, &J, &E), CBL_OK, jarray_len(J) == 3 && jarray_is(J, 0, uw));
    CHECK_OUT(cbl_doc_get_revision(c, "cw", ul, 0, &J, &E), CBL_OK, jhas(J, "v", ul == ua ? "\"a\"" : "\"b\""));
    CHECK_DOC(c, "cw", CBL_GET_CONFLICTS, jhas(D, "price", "10.5") && jval(D, "_conflicts"));
    PUT_FAILS(c, "cw", "{\"v\":\"stale\"}", ua, 0, CBL_CONFLICT);
    CHECK_OUT(cbl_db_integrity_check(db, &J, &E), CBL_OK, strcmp(J, "[]") == 0);
    CHECK_ST(cbl_db_set_max_rev_tree_depth(db, 20, &E), CBL_OK);

    RELEASE_AND_CLOSE(c, db);
}

/* ---- Pruning, compaction, purge -------------------------------------------------- */

static void test_prune_compact_purge(void) {
    char dir[512], rev[128], revs[21][128];
    cbl_collection* c; cbl_db* db = setup("prune", "prune", dir, sizeof dir, &c);
    /* pruning at max depth: depth 5, 20 updates -> 5 revisions kept */
    CHECK_ST(cbl_db_set_max_rev_tree_depth(db, 5, &E), CBL_OK);
    CHECK_ST(put(c, "deep", "{\"i\":0}", NULL, revs[0], sizeof revs[0]), CBL_OK);
    for (int i = 1; i <= 20; i++) {
        char body[64];
        snprintf(body, sizeof body, "{\"i\":%d}", i);
        CHECK_ST(put(c, "deep", body, revs[i - 1], revs[i], sizeof revs[i]), CBL_OK);
    }
    CHECK(generation(revs[20]) == 21);
    CHECK_OUT(cbl_doc_history(c, "deep", NULL, &J, &E), CBL_OK,
              jarray_len(J) == 5 && jarray_is(J, 0, revs[20]) && jarray_is(J, 4, revs[16]));
    CHECK_OUT(cbl_doc_revision_tree(c, "deep", &J, &E), CBL_OK, count_of(J, "\"rev\"") == 5);
    CHECK_OUT(cbl_doc_get_revision(c, "deep", revs[2], 0, &J, &E), CBL_NOT_FOUND, 1); /* pruned */
    CHECK_DOC(c, "deep", CBL_GET_REVISIONS, jint(D, "start") == 21 && jarray_len(jval(D, "ids")) == 5);
    CHECK_ST(cbl_db_set_max_rev_tree_depth(db, 20, &E), CBL_OK);
    /* compaction drops ancestor bodies, keeps leaves */
    char c1[128], c2[128], c3[128];
    CHECK_ST(put(c, "cmp", "{\"gen\":1}", NULL, c1, sizeof c1), CBL_OK);
    CHECK_ST(put(c, "cmp", "{\"gen\":2}", c1, c2, sizeof c2), CBL_OK);
    CHECK_ST(put(c, "cmp", "{\"gen\":3}", c2, c3, sizeof c3), CBL_OK);
    CHECK_OUT(cbl_doc_get_revision(c, "cmp", c1, 0, &J, &E), CBL_OK, jhas(J, "gen", "1")); /* before */
    CHECK_ST(cbl_db_compact(db, &E), CBL_OK);
    CHECK_OUT(cbl_doc_get_revision(c, "cmp", c1, 0, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_get_revision(c, "cmp", c2, 0, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_get_revision(c, "cmp", c3, 0, &J, &E), CBL_OK, jhas(J, "gen", "3"));
    CHECK_DOC(c, "cmp", 0, jhas(D, "gen", "3"));
    CHECK_OUT(cbl_doc_history(c, "cmp", NULL, &J, &E), CBL_OK, jarray_len(J) == 3); /* the IDs stay */
    CHECK_OUT(cbl_doc_revision_tree(c, "cmp", &J, &E), CBL_OK,
              count_of(J, "\"has_body\":false") == 2 && count_of(J, "\"has_body\":true") == 1);
    CHECK_OUT(cbl_db_integrity_check(db, &J, &E), CBL_OK, strcmp(J, "[]") == 0);
    /* purge: gone from get (even with CBL_GET_DELETED), from the changes feed, the count */
    CHECK_ST(put(c, "purgeme", "{\"p\":1}", NULL, rev, sizeof rev), CBL_OK);
    CHECK_ST(put(c, "keepme", "{\"k\":1}", NULL, NULL, 0), CBL_OK);
    uint64_t n0 = 0;
    CHECK_ST(cbl_collection_count(c, &n0, &E), CBL_OK);
    CHECK_ST(cbl_doc_purge(c, "purgeme", &E), CBL_OK);
    CHECK_NUM(cbl_collection_count(c, &U, &E), n0 - 1);
    CHECK_OUT(cbl_doc_get(c, "purgeme", CBL_GET_DELETED, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_get_revision(c, "purgeme", rev, 0, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_history(c, "purgeme", NULL, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_collection_changes(c, 0, NULL, &J, &E), CBL_OK,
              strstr(J, "\"purgeme\"") == NULL && strstr(J, "\"keepme\"") != NULL);
    CHECK_ST(cbl_doc_purge(c, "purgeme", &E), CBL_NOT_FOUND);
    CHECK_ST(cbl_doc_purge(c, NULL, &E), CBL_BAD_REQUEST);
    /* a purged ID starts over at generation 1 */
    CHECK_ST(put(c, "purgeme", "{\"p\":2}", NULL, rev, sizeof rev), CBL_OK);
    CHECK(generation(rev) == 1);
    /* a tombstone can be purged too */
    CHECK_ST(cbl_doc_delete(c, "keepme", NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_doc_purge(c, "keepme", &E), CBL_OK);
    CHECK_OUT(cbl_doc_get(c, "keepme", CBL_GET_DELETED, &J, &E), CBL_NOT_FOUND, 1);

    RELEASE_AND_CLOSE(c, db);
}

/* ---- Update, expiration, local documents, validation ----------------------------- */

typedef struct upd_ctx {
    int calls, saw_null, cancel; /* calls; calls with current_json NULL; return 0 */
    char last_current[512];
} upd_ctx;

/* Increments "n" (from 0 when the document does not exist). */
static int upd_increment(void* context, const char* current_json, char** out_new_json) {
    upd_ctx* u = (upd_ctx*)context;
    if (u) {
        u->calls++;
        u->saw_null += current_json ? 0 : 1;
        snprintf(u->last_current, sizeof u->last_current, "%s", current_json ? current_json : "");
        if (u->cancel) { *out_new_json = NULL; return 0; }
    }
    long long n = current_json ? jint(current_json, "n") : 0;
    char buf[64];
    snprintf(buf, sizeof buf, "{\"n\":%lld}", (n < 0 ? 0 : n) + 1);
    *out_new_json = cbl_strdup(buf);
    return 1;
}

/* Interferes once: writes a competing revision before answering, forcing a retry. */
typedef struct upd_race { cbl_collection* coll; int calls; } upd_race;

static int upd_racing(void* context, const char* current_json, char** out_new_json) {
    upd_race* r = (upd_race*)context;
    char rev[128];
    if (++r->calls == 1 && current_json && jstr(current_json, "_rev", rev, sizeof rev))
        put(r->coll, "race", "{\"n\":100}", rev, NULL, 0);
    return upd_increment(NULL, current_json, out_new_json);
}

static void test_update(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("upd", "upd", dir, sizeof dir, &c);
    /* creates, then increments on the current revision */
    upd_ctx u;
    memset(&u, 0, sizeof u);
    CHECK_OUT(cbl_doc_update(c, "counter", upd_increment, &u, &J, &E), CBL_OK,
              generation(J) == 1 && u.calls == 1 && u.saw_null == 1);
    CHECK_OUT(cbl_doc_update(c, "counter", upd_increment, &u, &J, &E), CBL_OK, generation(J) == 2);
    CHECK(jhas(u.last_current, "_id", "\"counter\"") && jhas(u.last_current, "_rev", "\"1-") &&
          jhas(u.last_current, "n", "1"));
    CHECK_DOC(c, "counter", 0, jhas(D, "n", "2"));
    /* cancelled: 409, no revision */
    u.cancel = 1;
    CHECK_OUT(cbl_doc_update(c, "counter", upd_increment, &u, &J, &E), CBL_CONFLICT, 1);
    CHECK(strstr(E.message, "cancel") != NULL);
    CHECK_DOC(c, "counter", 0, jhas(D, "n", "2") && jhas(D, "_rev", "\"2-"));
    CHECK_ST(cbl_doc_update(c, "counter", NULL, NULL, NULL, &E), CBL_BAD_REQUEST);
    /* a competing write between read and save: the callback is called again */
    CHECK_ST(put(c, "race", "{\"n\":1}", NULL, NULL, 0), CBL_OK);
    upd_race race = {c, 0};
    CHECK_ST(cbl_doc_update(c, "race", upd_racing, &race, NULL, &E), CBL_OK);
    CHECK(race.calls == 2);
    CHECK_DOC(c, "race", 0, jhas(D, "n", "101") && jhas(D, "_rev", "\"3-"));
    /* a deleted document: the callback sees NULL */
    CHECK_ST(cbl_doc_delete(c, "counter", NULL, NULL, &E), CBL_OK);
    u.cancel = u.saw_null = 0;
    CHECK_ST(cbl_doc_update(c, "counter", upd_increment, &u, NULL, &E), CBL_OK);
    CHECK(u.saw_null == 1);
    CHECK_DOC(c, "counter", 0, jhas(D, "n", "1") && jhas(D, "_rev", "\"4-"));

    RELEASE_AND_CLOSE(c, db);
}

/* "_design/NAME" documents are ordinary documents: saved, read, updated, deleted, listed
 * by the all-documents query and the changes feed. Only that prefix, and with a name. */
static void test_design_documents(void) {
    char dir[512], r1[128], r2[128];
    cbl_collection* c; cbl_db* db = setup("ddoc", "ddoc", dir, sizeof dir, &c);
    const char* body = "{\"views\":{\"v\":{\"map\":\"function(doc){ emit(doc._id); }\"}},\"filters\":{}}";
    CHECK_ST(put(c, "_design/app", body, NULL, r1, sizeof r1), CBL_OK);
    CHECK(generation(r1) == 1);
    CHECK_DOC(c, "_design/app", 0, jhas(D, "_id", "\"_design/app\"") && strstr(D, "emit(doc._id)") != NULL);
    CHECK_ST(put(c, "_design/app", body, NULL, NULL, 0), CBL_CONFLICT);
    CHECK_ST(put(c, "_design/app", "{\"language\":\"javascript\"}", r1, r2, sizeof r2), CBL_OK);
    CHECK_ST(put(c, "plain", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_OUT(cbl_collection_all_docs(c, NULL, &J, &E), CBL_OK,
              jint(J, "total_rows") == 2 && strstr(J, "\"id\":\"_design/app\"") != NULL);
    CHECK_OUT(cbl_collection_changes(c, 0, NULL, &J, &E), CBL_OK, strstr(J, "\"id\":\"_design/app\"") != NULL);
    CHECK_OUT(cbl_doc_delete(c, "_design/app", r2, &J, &E), CBL_OK, generation(J) == 3);
    CHECK(get(c, "_design/app", 0) == NULL && E.code == CBL_NOT_FOUND);
    const char* bad_ids[] = {"_design", "_design/", "_designs/x", "_local/x", "_x"};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
        CHECK_ST(put(c, bad_ids[i], "{}", NULL, NULL, 0), CBL_BAD_REQUEST);
        CHECK(strstr(E.message, "_design/") != NULL || strstr(E.message, "name") != NULL);
    }
    RELEASE_AND_CLOSE(c, db);
}

/* {"a":[[...]]} nested `depth` levels (the object is the first), or with `objects`
 * {"a":{"a":...1}}; caller frees. */
static char* nested_doc(int depth, int objects) {
    size_t n = (size_t)depth - 1;
    char* s = malloc(6 * n + 16);
    if (!s) return NULL;
    char* p = s;
    p += sprintf(p, "{\"a\":");
    for (size_t i = 0; i < n; i++) p += sprintf(p, objects ? "{\"a\":" : "[");
    if (objects) *p++ = '1';
    memset(p, objects ? '}' : ']', n); p += n;
    strcpy(p, "}");
    return s;
}

/* A document saved and read on a thread of its own (a C caller's thread, as the library
 * meets it). */
typedef struct { cbl_collection* c; const char* id; const char* body; cbl_status put, get; } deep_job;

static void* deep_work(void* arg) {
    deep_job* j = arg;
    cbl_error e;
    char* json = NULL;
    j->put = cbl_doc_put(j->c, j->id, j->body, NULL, 0, NULL, NULL, &e);
    j->get = cbl_doc_get(j->c, j->id, 0, &json, &e);
    cbl_free(json);
    return NULL;
}

/* Runs `fn` on a thread whose `size`-byte stack is painted first; returns the bytes of it
 * the call used (the stack grows down: the painted bytes left at the bottom were not). */
static size_t stack_used(void* (*fn)(void*), void* arg, size_t size) {
    void* stack = NULL;
    if (posix_memalign(&stack, 4096, size) != 0) return size;
    unsigned char* mem = stack;
    memset(mem, 0xA5, size);
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, mem, size);
    size_t used = size;
    if (pthread_create(&t, &attr, fn, arg) == 0) {
        pthread_join(t, NULL);
        size_t untouched = 0;
        while (untouched < size && mem[untouched] == 0xA5) untouched++;
        used = size - untouched;
    }
    pthread_attr_destroy(&attr);
    free(stack);
    return used;
}

/* Documents nested CBL_MAX_JSON_DEPTH levels are stored and read back whole; one level
 * more is a 400 that names the limit, and nothing is stored; in a batch, each document is
 * held to the limit. Saved and read at the limit, the shipped library uses less than
 * 4 MiB of the thread's stack (half the 8 MiB glibc gives a thread by default):
 * measured on a painted stack, with the cost of a level printed. */
static void test_deep_documents(void) {
    char dir[512], want[64];
    cbl_collection* c; cbl_db* db = setup("deep", "deep", dir, sizeof dir, &c);
    char* at = nested_doc(CBL_MAX_JSON_DEPTH, 0);
    char* over = nested_doc(CBL_MAX_JSON_DEPTH + 1, 0);
    char* objects = nested_doc(CBL_MAX_JSON_DEPTH, 1);
    CHECK(at && over);
    CHECK_ST(put(c, "at-limit", at, NULL, NULL, 0), CBL_OK);
    CHECK_DOC(c, "at-limit", 0, strstr(D, at + 1) != NULL);     /* the body's members, whole */
    CHECK_ST(put(c, "over-limit", over, NULL, NULL, 0), CBL_BAD_REQUEST);
    snprintf(want, sizeof want, "nesting deeper than %d", CBL_MAX_JSON_DEPTH);
    CHECK(strstr(E.message, want) != NULL);
    CHECK(get(c, "over-limit", CBL_GET_DELETED) == NULL && E.code == CBL_NOT_FOUND);
    /* In a batch (one level down in its array): each document is held to the limit. */
    size_t n = strlen(over) + 64;
    char* batch = malloc(2 * n);
    CHECK(batch != NULL);
    snprintf(batch, 2 * n, "[{\"_id\":\"b-at\",\"_rev\":\"1-a\",%s,{\"_id\":\"b-over\",\"_rev\":\"1-a\",%s]",
             at + 1, over + 1);
    CHECK_OUT(cbl_collection_docs_put_existing(c, batch, &J, &E), CBL_OK,
              strstr(J, "{\"ok\":true,\"id\":\"b-at\"") != NULL &&
              strstr(J, "\"id\":\"b-over\",\"error\":\"bad_request\"") != NULL && strstr(J, want) != NULL);
    CHECK(get(c, "b-over", CBL_GET_DELETED) == NULL);
    free(batch);
    deep_job shallow = {c, "on-a-thread-shallow", "{\"a\":[]}", CBL_OK, CBL_OK},
             deep = {c, "on-a-thread-arrays", at, CBL_OK, CBL_OK},
             deep_objects = {c, "on-a-thread-objects", objects, CBL_OK, CBL_OK};
    size_t base = stack_used(deep_work, &shallow, 16u << 20);
    size_t used = stack_used(deep_work, &deep, 16u << 20);
    size_t used_objects = stack_used(deep_work, &deep_objects, 16u << 20);
    CHECK(shallow.put == CBL_OK && shallow.get == CBL_OK && deep.put == CBL_OK && deep.get == CBL_OK);
    CHECK(deep_objects.put == CBL_OK && deep_objects.get == CBL_OK);
    printf("# a document nested %d levels: %zu bytes of stack in arrays (%zu a level), %zu in objects (%zu)\n",
           CBL_MAX_JSON_DEPTH, used, (used - base) / CBL_MAX_JSON_DEPTH, used_objects,
           (used_objects - base) / CBL_MAX_JSON_DEPTH);
    /* The library as shipped; a sanitized build (CBLITE_SANITIZED, set by the reliability
     * runs) inflates every frame, so the bound says nothing there. */
    if (!getenv("CBLITE_SANITIZED")) CHECK(used < (4u << 20) && used_objects < (4u << 20));
    free(at);
    free(objects);
    free(over);
    RELEASE_AND_CLOSE(c, db);
}

#define CHECK_EXPIRATION(c, id, value) \
    do { int64_t T = -7; CHECK_ST(cbl_doc_get_expiration(c, id, &T, &E), CBL_OK); \
         check_(T == (int64_t)(value), "expiration of " id " is " #value, __FILE__, __LINE__); } while (0)

static void test_expiration_and_local(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("ttl", "ttl", dir, sizeof dir, &c);
    /* expiration: set / get / clear */
    CHECK_ST(put(c, "ttl", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_EXPIRATION(c, "ttl", 0);
    int64_t later = (int64_t)time(NULL) + 3600;
    CHECK_ST(cbl_doc_set_expiration(c, "ttl", later, &E), CBL_OK);
    CHECK_EXPIRATION(c, "ttl", later);
    CHECK_ST(cbl_doc_set_expiration(c, "ttl", 0, &E), CBL_OK);
    CHECK_EXPIRATION(c, "ttl", 0);
    CHECK_ST(cbl_doc_set_expiration(c, "nodoc", later, &E), CBL_NOT_FOUND);
    int64_t when = 5;
    CHECK_ST(cbl_doc_get_expiration(c, "nodoc", &when, &E), CBL_NOT_FOUND);
    CHECK(when == 0);
    CHECK_ST(cbl_doc_get_expiration(c, "ttl", NULL, &E), CBL_BAD_REQUEST);
    /* compaction keeps an unexpired document and its expiration; so does reopening */
    CHECK_ST(cbl_doc_set_expiration(c, "ttl", later, &E), CBL_OK);
    CHECK_ST(cbl_db_compact(db, &E), CBL_OK);
    RELEASE_AND_CLOSE(c, db);
    db = open_db("ttl", dir);
    c = default_coll(db);
    CHECK_EXPIRATION(c, "ttl", later);
    /* automatic purge of an expired document, while the database is open */
    CHECK_ST(put(c, "expiring", "{\"short\":\"lived\"}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_doc_set_expiration(c, "expiring", (int64_t)time(NULL) - 1, &E), CBL_OK);
    int gone = 0;
    for (int i = 0; i < 100 && !gone; i++) {
        char* d = NULL;
        gone = cbl_doc_get(c, "expiring", CBL_GET_DELETED, &d, NULL) == CBL_NOT_FOUND;
        cbl_free(d);
        if (!gone) sleep_ms(50);
    }
    CHECK(gone);
    CHECK_ST(cbl_doc_get_expiration(c, "expiring", &when, &E), CBL_NOT_FOUND);
    CHECK_OUT(cbl_collection_changes(c, 0, NULL, &J, &E), CBL_OK, strstr(J, "\"expiring\"") == NULL);
    CHECK_DOC(c, "ttl", 0, 1);
    /* local documents: create (NULL parent), update on the current revision only */
    CHECK_OUT(cbl_local_get(c, "cfg", &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_local_put(c, "cfg", "{\"theme\":\"dark\"}", NULL, &J, &E), CBL_OK, strcmp(J, "0-1") == 0);
    CHECK_OUT(cbl_local_get(c, "cfg", &J, &E), CBL_OK,
              jhas(J, "_id", "\"cfg\"") && jhas(J, "_rev", "\"0-1\"") && jhas(J, "theme", "\"dark\""));
    CHECK_OUT(cbl_local_put(c, "cfg", "{\"theme\":\"x\"}", NULL, &J, &E), CBL_CONFLICT, 1); /* exists */
    CHECK_OUT(cbl_local_put(c, "cfg", "{\"theme\":\"x\"}", "0-7", &J, &E), CBL_CONFLICT, 1); /* wrong rev */
    CHECK_OUT(cbl_local_put(c, "cfg", "{\"theme\":\"light\"}", "0-1", &J, &E), CBL_OK, strcmp(J, "0-2") == 0);
    CHECK_OUT(cbl_local_get(c, "cfg", &J, &E), CBL_OK, jhas(J, "theme", "\"light\"") && jhas(J, "_rev", "\"0-2\""));
    CHECK_ST(cbl_local_put(c, "cfg", "[1]", "0-2", NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_local_put(c, "cfg2", "{\"a\":", NULL, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_local_put(c, NULL, "{}", NULL, NULL, &E), CBL_BAD_REQUEST);
    /* not in the changes feed, no sequence, not counted, not a document */
    uint64_t seq0 = 0, n0 = 0;
    CHECK_ST(cbl_collection_last_sequence(c, &seq0, &E), CBL_OK);
    CHECK_ST(cbl_collection_count(c, &n0, &E), CBL_OK);
    CHECK_ST(cbl_local_put(c, "cfg3", "{}", NULL, NULL, &E), CBL_OK);
    CHECK_NUM(cbl_collection_last_sequence(c, &U, &E), seq0);
    CHECK_NUM(cbl_collection_count(c, &U, &E), n0);
    CHECK_OUT(cbl_collection_changes(c, 0, NULL, &J, &E), CBL_OK, strstr(J, "cfg") == NULL);
    CHECK_OUT(cbl_doc_get(c, "cfg", 0, &J, &E), CBL_NOT_FOUND, 1);
    /* delete: wrong rev 409, right rev or NULL fine, then 404 */
    CHECK_ST(cbl_local_delete(c, "cfg", "0-1", &E), CBL_CONFLICT);
    CHECK_ST(cbl_local_delete(c, "cfg", "0-2", &E), CBL_OK);
    CHECK_OUT(cbl_local_get(c, "cfg", &J, &E), CBL_NOT_FOUND, 1);
    CHECK_ST(cbl_local_delete(c, "cfg", NULL, &E), CBL_NOT_FOUND);
    CHECK_ST(cbl_local_delete(c, "cfg3", NULL, &E), CBL_OK);
    CHECK_ST(cbl_local_delete(c, "cfg3", NULL, &E), CBL_NOT_FOUND);

    RELEASE_AND_CLOSE(c, db);
}

typedef struct val_ctx {
    int calls, saw_current_null, saw_current;
    int bad_new_json;   /* new_json lacked "_id" or "_rev" */
    int reject_all, empty_message;
} val_ctx;

static int validator(void* context, const char* new_json, const char* current_json,
                     char* message, size_t message_size) {
    val_ctx* v = (val_ctx*)context;
    v->calls++;
    if (!current_json) v->saw_current_null++; else v->saw_current++;
    if (!new_json || !jval(new_json, "_id") || !jval(new_json, "_rev")) v->bad_new_json++;
    if (v->reject_all || (new_json && jhas(new_json, "bad", "true"))) {
        if (!v->empty_message) snprintf(message, message_size, "no bad documents allowed");
        return 0;
    }
    return 1;
}

static void test_validation(void) {
    char dir[512], rev[128], buf[256];
    cbl_collection* c; cbl_db* db = setup("val", "val", dir, sizeof dir, &c);

    val_ctx v;
    memset(&v, 0, sizeof v);
    CHECK_ST(cbl_collection_set_validator(c, "nobad", validator, &v, &E), CBL_OK);
    PUT_FAILS(c, "v1", "{\"bad\":true}", NULL, 0, CBL_FORBIDDEN);
    CHECK(strstr(E.message, "no bad documents allowed") != NULL);
    CHECK(get(c, "v1", CBL_GET_DELETED) == NULL && v.calls == 1 && v.saw_current_null == 1);
    CHECK_ST(put(c, "v1", "{\"bad\":false}", NULL, rev, sizeof rev), CBL_OK);
    CHECK(v.calls == 2);
    snprintf(buf, sizeof buf, "{\"bad\":true,\"_rev\":\"%s\"}", rev);
    CHECK_ST(put(c, "v1", buf, NULL, NULL, 0), CBL_FORBIDDEN);
    CHECK(v.calls == 3 && v.saw_current == 1); /* this update, with its current revision */
    CHECK_ST(cbl_doc_put_existing(c, "v2", "{\"bad\":true}", "[\"1-abc\"]", &E), CBL_FORBIDDEN);
    CHECK(get(c, "v2", CBL_GET_DELETED) == NULL);
    CHECK_ST(cbl_doc_put_existing(c, "v2", "{\"bad\":false}", "[\"1-abc\"]", &E), CBL_OK);
    CHECK(v.bad_new_json == 0);
    /* rejecting everything without a message: the default message names the validator */
    v.reject_all = v.empty_message = 1;
    CHECK_ST(cbl_doc_delete(c, "v1", NULL, NULL, &E), CBL_FORBIDDEN);
    CHECK(strstr(E.message, "rejected by validator nobad") != NULL);
    CHECK_ST(cbl_doc_update(c, "v1", upd_increment, NULL, NULL, &E), CBL_FORBIDDEN);
    CHECK_DOC(c, "v1", 0, jhas(D, "bad", "false"));
    /* a validator sees writes through another handle of the same database */
    cbl_db* db2 = open_db("val", dir);
    cbl_collection* c2 = default_coll(db2);
    int before = v.calls;
    CHECK_ST(put(c2, "via-db2", "{}", NULL, NULL, 0), CBL_FORBIDDEN);
    CHECK(v.calls == before + 1);
    /* removed: everything is accepted again */
    CHECK_ST(cbl_collection_set_validator(c, "nobad", NULL, NULL, &E), CBL_OK);
    before = v.calls;
    CHECK_ST(put(c2, "via-db2", "{\"bad\":true}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_doc_delete(c, "v1", NULL, NULL, &E), CBL_OK);
    CHECK(v.calls == before);
    CHECK_ST(cbl_collection_set_validator(c, NULL, validator, &v, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_collection_set_validator(NULL, "x", validator, &v, &E), CBL_BAD_REQUEST);
    RELEASE_AND_CLOSE(c2, db2);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* ---- Changes feed ---------------------------------------------------------------- */

static void test_changes(void) {
    char dir[512], ra[128], r1[128], r2x[128], r2y[128];
    subdir("changes", dir, sizeof dir);
    cbl_db* db = open_db("changes", dir);
    cbl_collection* c = NULL;
    CHECK_ST(cbl_db_create_collection(db, "feed", "items", &c, &E), CBL_OK);
    CHECK_ST(put(c, "a", "{\"name\":\"alpha\"}", NULL, ra, sizeof ra), CBL_OK);  /* seq 1 */
    CHECK_ST(put(c, "b", "{\"name\":\"beta\"}", NULL, NULL, 0), CBL_OK);         /* seq 2 */
    CHECK_ST(put(c, "c", "{\"name\":\"gamma\"}", NULL, NULL, 0), CBL_OK);        /* seq 3 */
    CHECK_ST(put(c, "a", "{\"name\":\"alpha2\"}", ra, ra, sizeof ra), CBL_OK);   /* seq 4 */
    CHECK_ST(cbl_doc_delete(c, "b", NULL, NULL, &E), CBL_OK);                    /* seq 5 */
    /* each document once, at its latest sequence, in sequence order: c(3), a(4), b(5) */
    CHECK_OUT(cbl_collection_changes(c, 0, NULL, &J, &E), CBL_OK,
              jint(J, "last_seq") == 5 && count_of(J, "\"id\"") == 3 && strstr(J, "\"c\"") &&
              strstr(J, "\"a\"") && strstr(J, "\"b\"") && strstr(J, "\"c\"") < strstr(J, "\"a\"") &&
              strstr(J, "\"a\"") < strstr(J, "\"b\"") && strstr(J, ra) && count_of(J, "\"deleted\"") == 1 &&
              jhas(J, "deleted", "true") && !strstr(J, "\"doc\"") && jhas(J, "seq", "3") &&
              jhas(J, "seq", "4") && jhas(J, "seq", "5") && !jhas(J, "seq", "1"));
    /* since, limit, descending, include_docs */
    CHECK_OUT(cbl_collection_changes(c, 3, NULL, &J, &E), CBL_OK, count_of(J, "\"id\"") == 2 && !strstr(J, "\"c\""));
    CHECK_OUT(cbl_collection_changes(c, 5, NULL, &J, &E), CBL_OK, count_of(J, "\"id\"") == 0 && jint(J, "last_seq") == 5);
    CHECK_OUT(cbl_collection_changes(c, 0, "{\"limit\":1}", &J, &E), CBL_OK,
              count_of(J, "\"id\"") == 1 && strstr(J, "\"c\"") && jint(J, "last_seq") == 3);
    CHECK_OUT(cbl_collection_changes(c, 0, "{\"descending\":true}", &J, &E), CBL_OK,
              strstr(J, "\"b\"") && strstr(J, "\"c\"") && strstr(J, "\"b\"") < strstr(J, "\"c\""));
    CHECK_OUT(cbl_collection_changes(c, 0, "{\"include_docs\":true}", &J, &E), CBL_OK,
              strstr(J, "\"doc\"") && strstr(J, "\"alpha2\"") && strstr(J, "\"gamma\"") && !strstr(J, "\"alpha\""));
    /* all_revs: every leaf of a conflicted document */
    CHECK_ST(put(c, "conflicted", "{\"v\":0}", NULL, r1, sizeof r1), CBL_OK);
    CHECK_ST(put(c, "conflicted", "{\"v\":1}", r1, r2x, sizeof r2x), CBL_OK);
    CHECK_OUT(cbl_doc_put(c, "conflicted", "{\"v\":2}", r1, CBL_PUT_ALLOW_CONFLICT, NULL, &J, &E), CBL_OK,
              snprintf(r2y, sizeof r2y, "%s", J) > 0);
    CHECK_OUT(cbl_collection_changes(c, 5, NULL, &J, &E), CBL_OK, count_of(J, "\"rev\"") == 1);
    CHECK_OUT(cbl_collection_changes(c, 5, "{\"all_revs\":true}", &J, &E), CBL_OK,
              count_of(J, "\"rev\"") == 2 && strstr(J, r2x) && strstr(J, r2y));
    /* bad options; the default collection has its own feed */
    CHECK_OUT(cbl_collection_changes(c, 0, "{\"limit\":", &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_ST(cbl_collection_changes(c, 0, NULL, NULL, &E), CBL_BAD_REQUEST);
    cbl_collection* def = default_coll(db);
    CHECK_OUT(cbl_collection_changes(def, 0, NULL, &J, &E), CBL_OK, count_of(J, "\"id\"") == 0);
    cbl_collection_release(def);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- Listeners ------------------------------------------------------------------- */

/* Removes its own token from inside the callback. */
typedef struct self_remover { cbl_listener_token* token; int calls; } self_remover;

static void self_remove_cb(void* context, const cbl_change* changes, size_t count) {
    (void)changes;
    (void)count;
    self_remover* s = (self_remover*)context;
    s->calls++;
    cbl_listener_token_remove(s->token);
}

/* Reads each changed "trigger-*" document and writes an "echo-*" document for it. */
typedef struct echo_ctx { cbl_collection* coll; int reads_ok, writes_ok; } echo_ctx;

static void echo_cb(void* context, const cbl_change* changes, size_t count) {
    echo_ctx* x = (echo_ctx*)context;
    for (size_t i = 0; i < count; i++) {
        if (strncmp(changes[i].doc_id, "trigger-", 8) != 0 || changes[i].deleted) continue;
        char* json = NULL;
        char id[200];
        if (cbl_doc_get(x->coll, changes[i].doc_id, 0, &json, NULL) == CBL_OK && strstr(json, changes[i].rev_id))
            x->reads_ok++;
        cbl_free(json);
        snprintf(id, sizeof id, "echo-%s", changes[i].doc_id + 8);
        if (cbl_doc_put(x->coll, id, "{\"echo\":true}", NULL, 0, NULL, NULL, NULL) == CBL_OK) x->writes_ok++;
    }
}

static void test_listeners(void) {
    char dir[512], rev[128], tomb[128];
    cbl_collection* c; cbl_db* db = setup("listen", "listen", dir, sizeof dir, &c);
    cbl_collection* other = NULL;
    CHECK_ST(cbl_db_create_collection(db, NULL, "other", &other, &E), CBL_OK);
    int64_t inst = cbl_instance_count();

    recorder coll_rec, doc_rec, db_rec, other_rec;
    recorder* all_recs[] = {&coll_rec, &doc_rec, &db_rec, &other_rec};
    for (int i = 0; i < 4; i++) rec_init(all_recs[i]);
    cbl_listener_token *t_coll = NULL, *t_doc = NULL, *t_db = NULL, *t_other = NULL;
    CHECK_ST(cbl_collection_add_change_listener(c, rec_cb, &coll_rec, &t_coll, &E), CBL_OK);
    CHECK_ST(cbl_collection_add_document_listener(c, "watched", rec_cb, &doc_rec, &t_doc, &E), CBL_OK);
    CHECK_ST(cbl_db_add_change_listener(db, rec_cb, &db_rec, &t_db, &E), CBL_OK);
    CHECK_ST(cbl_collection_add_change_listener(other, rec_cb, &other_rec, &t_other, &E), CBL_OK);
    CHECK(t_coll && t_doc && t_db && t_other && cbl_instance_count() == inst + 4);
    cbl_listener_token* t_bad = (cbl_listener_token*)POISON_PTR;
    CHECK_ST(cbl_collection_add_change_listener(c, NULL, NULL, &t_bad, &E), CBL_BAD_REQUEST);
    CHECK(t_bad == NULL);
    t_bad = (cbl_listener_token*)POISON_PTR;
    CHECK_ST(cbl_collection_add_document_listener(c, NULL, rec_cb, NULL, &t_bad, &E), CBL_BAD_REQUEST);
    CHECK(t_bad == NULL);
    /* one transaction: delivered after the commit, as one batch, in order */
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    CHECK_ST(put(c, "one", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(put(c, "watched", "{\"w\":1}", NULL, rev, sizeof rev), CBL_OK);
    CHECK_ST(put(c, "three", "{}", NULL, NULL, 0), CBL_OK);
    CHECK(rec_changes(&coll_rec) == 0);
    CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
    CHECK(delivered(db, &coll_rec) == 3 && rec_calls(&coll_rec) == 1 && coll_rec.out_of_order == 0);
    CHECK(rec_saw(&coll_rec, "one") && rec_saw(&coll_rec, "watched") && rec_saw(&coll_rec, "three"));
    CHECK(strcmp(coll_rec.last_id, "three") == 0 && coll_rec.external == 0 && coll_rec.deleted == 0);
    CHECK(rec_changes(&db_rec) == 3 && rec_changes(&other_rec) == 0);
    CHECK(rec_changes(&doc_rec) == 1 && strcmp(doc_rec.last_rev, rev) == 0);
    CHECK_NUM(cbl_db_last_sequence(db, &U, &E), coll_rec.last_seq);
    /* a deletion is reported as deleted, with the tombstone's revision */
    CHECK_OUT(cbl_doc_delete(c, "watched", NULL, &J, &E), CBL_OK, snprintf(tomb, sizeof tomb, "%s", J) > 0);
    CHECK(delivered(db, &doc_rec) == 2 && doc_rec.deleted == 1 && strcmp(doc_rec.last_rev, tomb) == 0);
    /* external: set by put_existing only */
    rec_reset(&coll_rec);
    CHECK_ST(cbl_doc_put_existing(c, "replicated", "{\"r\":1}", "[\"2-bb\",\"1-aa\"]", &E), CBL_OK);
    CHECK_ST(put(c, "local-made", "{}", NULL, NULL, 0), CBL_OK);
    CHECK(delivered(db, &coll_rec) == 2 && coll_rec.external == 1 && strcmp(coll_rec.last_id, "local-made") == 0);
    /* not called on abort */
    rec_reset(&coll_rec);
    rec_reset(&doc_rec);
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    CHECK_ST(put(c, "watched", "{\"w\":2}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_db_abort(db, &E), CBL_OK);
    CHECK(delivered(db, &coll_rec) == 0 && rec_changes(&doc_rec) == 0);
    /* a change through a second handle notifies the first handle's listeners */
    cbl_db* db2 = open_db("listen", dir);
    cbl_collection* c2 = default_coll(db2);
    CHECK_ST(put(c2, "from-db2", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_db_wait_notifications(db2, 5000, &E), CBL_OK);
    CHECK(delivered(db, &coll_rec) == 1 && rec_saw(&coll_rec, "from-db2"));
    /* buffered notifications: queued until send */
    rec_reset(&coll_rec);
    CHECK_ST(cbl_db_buffer_notifications(db, 1, &E), CBL_OK);
    CHECK_ST(put(c, "buffered1", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(put(c, "buffered2", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_db_wait_notifications(db, 200, &E), CBL_OK); /* does not wait for buffered ones */
    sleep_ms(50);
    CHECK(rec_changes(&coll_rec) == 0);
    CHECK_ST(cbl_db_send_notifications(db, &E), CBL_OK);
    CHECK(delivered(db, &coll_rec) == 2 && rec_saw(&coll_rec, "buffered1") && rec_saw(&coll_rec, "buffered2"));
    CHECK_ST(cbl_db_buffer_notifications(db, 0, &E), CBL_OK);
    CHECK_ST(cbl_db_send_notifications(db, &E), CBL_OK); /* nothing pending: harmless */
    rec_reset(&coll_rec);
    CHECK_ST(put(c, "unbuffered", "{}", NULL, NULL, 0), CBL_OK);
    CHECK(delivered(db, &coll_rec) == 1);
    /* a callback that reads and writes through the library */
    echo_ctx ex = {c, 0, 0};
    cbl_listener_token* t_echo = NULL;
    CHECK_ST(cbl_collection_add_change_listener(c, echo_cb, &ex, &t_echo, &E), CBL_OK);
    CHECK_ST(put(c, "trigger-1", "{}", NULL, NULL, 0), CBL_OK);
    /* unbuffered, trigger-1 and the callback's own echo-1, delivered before the wait returns */
    CHECK(delivered(db, &coll_rec) == 3 && ex.reads_ok == 1 && ex.writes_ok == 1);
    CHECK_DOC(c, "echo-1", 0, jhas(D, "echo", "true"));
    CHECK(rec_saw(&coll_rec, "echo-1"));
    cbl_listener_token_remove(t_echo);
    /* removal from inside its own callback */
    self_remover sr = {NULL, 0};
    CHECK_ST(cbl_collection_add_change_listener(c, self_remove_cb, &sr, &sr.token, &E), CBL_OK);
    int64_t inst_sr = cbl_instance_count();
    CHECK_ST(put(c, "sr1", "{}", NULL, NULL, 0), CBL_OK);
    CHECK(delivered(db, &coll_rec) == 4 && sr.calls == 1);
    CHECK_ST(put(c, "sr2", "{}", NULL, NULL, 0), CBL_OK);
    CHECK(delivered(db, &coll_rec) == 5 && sr.calls == 1 && cbl_instance_count() == inst_sr - 1);
    cbl_listener_token_remove(sr.token); /* again: harmless */
    /* removed twice: harmless, and no more calls */
    cbl_listener_token_remove(t_doc);
    cbl_listener_token_remove(t_doc);
    cbl_listener_token_remove(NULL);
    rec_reset(&doc_rec);
    CHECK_ST(put(c, "watched", "{\"w\":3}", NULL, NULL, 0), CBL_OK);
    CHECK(delivered(db, &doc_rec) == 0);
    /* bad handles; the other collection's listener saw only its own change */
    CHECK_ST(cbl_db_wait_notifications(NULL, 10, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_buffer_notifications(NULL, 1, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_send_notifications(NULL, &E), CBL_BAD_REQUEST);
    CHECK(rec_changes(&other_rec) == 0);
    CHECK_ST(put(other, "in-other", "{}", NULL, NULL, 0), CBL_OK);
    CHECK(delivered(db, &other_rec) == 1 && rec_saw(&other_rec, "in-other"));
    RELEASE_AND_CLOSE(c2, db2);
    /* tokens stay valid to remove after their database was closed */
    cbl_listener_token_remove(t_coll);
    cbl_collection_release(c);
    RELEASE_AND_CLOSE(other, db);
    cbl_listener_token_remove(t_db);
    cbl_listener_token_remove(t_other);
    cbl_listener_token_remove(t_other);
    CHECK(cbl_instance_count() == inst - 3); /* the database and its two collection handles too */
    for (int i = 0; i < 4; i++) pthread_mutex_destroy(&all_recs[i]->mu);
}

/* ---- Threads --------------------------------------------------------------------- */

#define N_THREADS 4
#define N_INCREMENTS 50

typedef struct worker { cbl_collection* coll; int ok, failed; cbl_status last_error; } worker;

static void* worker_main(void* arg) {
    worker* w = (worker*)arg;
    for (int i = 0; i < N_INCREMENTS; i++) {
        cbl_status st = cbl_doc_update(w->coll, "shared-counter", upd_increment, NULL, NULL, NULL);
        if (st == CBL_OK) w->ok++;
        else { w->failed++; w->last_error = st; }
    }
    return NULL;
}

/* 4 threads x 50 increments of one counter document with cbl_doc_update, two of them
 * through a second handle of the same database: no increment is lost. */
static void test_threads(void) {
    char dir[512], want[64];
    subdir("threads", dir, sizeof dir);
    cbl_db* db1 = open_db("threads", dir);
    cbl_db* db2 = open_db("threads", dir);
    cbl_collection* c1 = default_coll(db1);
    cbl_collection* c2 = default_coll(db2);
    recorder rec;
    rec_init(&rec);
    cbl_listener_token* tok = NULL;
    CHECK_ST(cbl_collection_add_document_listener(c1, "shared-counter", rec_cb, &rec, &tok, &E), CBL_OK);
    worker w[N_THREADS];
    pthread_t th[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].coll = (i % 2 == 0) ? c1 : c2;
        CHECK(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
    }
    int ok = 0;
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], NULL);
        ok += w[i].ok;
        if (w[i].failed) fprintf(stderr, "  thread %d: %d updates failed (last status %d)\n", i, w[i].failed, (int)w[i].last_error);
    }
    CHECK(ok == N_THREADS * N_INCREMENTS);
    snprintf(want, sizeof want, "\"%d-", N_THREADS * N_INCREMENTS);
    CHECK_DOC(c2, "shared-counter", 0, jint(D, "n") == N_THREADS * N_INCREMENTS && jhas(D, "_rev", want));
    CHECK_ST(cbl_db_wait_notifications(db2, 10000, &E), CBL_OK);
    CHECK_ST(cbl_db_wait_notifications(db1, 10000, &E), CBL_OK);
    CHECK(rec_changes(&rec) == N_THREADS * N_INCREMENTS && rec.out_of_order == 0);
    CHECK_OUT(cbl_db_integrity_check(db2, &J, &E), CBL_OK, strcmp(J, "[]") == 0);
    cbl_listener_token_remove(tok);
    cbl_collection_release(c1);
    RELEASE_AND_CLOSE(c2, db2);
    CHECK_ST(cbl_db_close(db1, &E), CBL_OK);
    pthread_mutex_destroy(&rec.mu);
}

/* ---- Write bursts: the WAL is copied back off the committing thread ------------- */

/* Reads one document over and over while the burst writes (readers wait neither for the
 * writer nor for the copy). */
typedef struct burst_reader { cbl_collection* coll; int stop, reads, failed; } burst_reader;

static void* burst_read(void* arg) {
    burst_reader* r = arg;
    cbl_error e;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        char* json = NULL;
        cbl_status st = cbl_doc_get(r->coll, "burst-0-0", 0, &json, &e);
        if (st == CBL_OK) r->reads++;
        else if (st != CBL_NOT_FOUND) r->failed++;
        cbl_free(json);
    }
    return NULL;
}

/* A burst of large transactions (well past the 1,000-frame checkpoint threshold) with a
 * reader beside it: every document survives close and reopen, the WAL stays bounded
 * while the burst runs, and close removes it (the writer closes last, after the
 * checkpointer's connection). */
static void test_write_burst(void) {
    char dir[512], id[64], path[600];
    subdir("burst", dir, sizeof dir);
    cbl_db* db = open_db("burst", dir);
    cbl_collection* c = default_coll(db);
    static char body[3200];
    snprintf(body, sizeof body, "{\"pad\":\"%0*d\"}", 3000, 7);
    burst_reader r = { .coll = c };
    pthread_t th;
    CHECK(pthread_create(&th, NULL, burst_read, &r) == 0);
    snprintf(path, sizeof path, "%s/burst.cblite2/db.sqlite3-wal", dir);
    long long max_wal = 0;
    int ok = 1;
    for (int t = 0; t < 8 && ok; t++) {
        CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
        for (int i = 0; i < 400 && ok; i++) {
            snprintf(id, sizeof id, "burst-%d-%d", t, i);
            if (cbl_doc_put(c, id, body, NULL, 0, NULL, NULL, &E) != CBL_OK) ok = 0;
        }
        CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
        struct stat sb;
        if (stat(path, &sb) == 0 && sb.st_size > max_wal) max_wal = sb.st_size;
    }
    CHECK(ok);
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    CHECK(r.failed == 0 && r.reads > 0);
    /* 3,200 pages written; the log holds at most ~8,000 frames (32 MiB) plus a transaction. */
    CHECK(max_wal > 0 && max_wal < 40LL * 1024 * 1024);
    cbl_collection_release(c);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    struct stat sb;
    CHECK(stat(path, &sb) != 0);     /* the log was checkpointed and removed at close */
    db = open_db("burst", dir);
    c = default_coll(db);
    CHECK_NUM(cbl_collection_count(c, &U, &E), 3200);
    CHECK_DOC(c, "burst-7-399", 0, strlen(D) > 3000);
    CHECK_OUT(cbl_db_integrity_check(db, &J, &E), CBL_OK, strcmp(J, "[]") == 0);
    RELEASE_AND_CLOSE(c, db);
}

/* The library's threads of a database run only while they have work: a copy of the
 * write-ahead log to make, an expiration pending, a read lock kept after a run of reads. A single-threaded program that stops
 * writing is single-threaded again (a second thread costs it on every file-descriptor
 * system call). Counted in /proc/self/task, against the count before the open. */
static int thread_count(void) {
    int n = 0;
    char line[256];
    FILE* f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Threads:", 8) == 0) n = atoi(line + 8);
    fclose(f);
    return n;
}

/* Waits (at most 5 s) until the process has at most `most` threads. */
static int threads_back_to(int most) {
    for (int i = 0; i < 100 && thread_count() > most; i++) sleep_ms(50);
    return thread_count() <= most;
}

static void test_idle_threads(void) {
    char dir[512], id[64];
    subdir("idle", dir, sizeof dir);
    int before = thread_count();
    for (int i = 0; i < 40; i++) {                     /* settled: earlier tests' threads gone */
        sleep_ms(50);
        int now = thread_count();
        if (now == before) break;
        before = now;
    }
    CHECK(before >= 1);
    cbl_db* db = open_db("idle", dir);
    cbl_collection* c = default_coll(db);
    CHECK(threads_back_to(before));                    /* no expiration: no timer thread (the
                                                        * open's reads may keep a read lock
                                                        * for a moment: test_kept_read_locks) */
    static char body[3200];
    snprintf(body, sizeof body, "{\"pad\":\"%0*d\"}", 3000, 7);
    for (int t = 0; t < 3; t++) {                      /* 1,200 pages: the log is copied */
        CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
        for (int i = 0; i < 400; i++) {
            snprintf(id, sizeof id, "idle-%d-%d", t, i);
            CHECK_ST(cbl_doc_put(c, id, body, NULL, 0, NULL, NULL, &E), CBL_OK);
        }
        CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
    }
    CHECK(threads_back_to(before));                    /* copies made: the copier ended */
    CHECK_ST(cbl_doc_set_expiration(c, "idle-0-0", (int64_t)time(NULL) + 1, &E), CBL_OK);
    CHECK(threads_back_to(before + 1));                /* the timer, for the pending one */
    CHECK(thread_count() == before + 1);
    int purged = 0;
    for (int i = 0; i < 100 && !purged; i++) {
        char* d = NULL;
        purged = cbl_doc_get(c, "idle-0-0", 0, &d, &E) == CBL_NOT_FOUND;
        cbl_free(d);
        if (!purged) sleep_ms(50);
    }
    CHECK(purged);
    CHECK(threads_back_to(before));                    /* nothing pending: the timer ended */
    CHECK_NUM(cbl_collection_count(c, &U, &E), 1199);
    RELEASE_AND_CLOSE(c, db);
    CHECK(threads_back_to(before));
}

/* Reads in a run keep their WAL read-mark lock between transactions while no other process
 * has the database open (kept_read_locks.c in the library): the system shows the lock
 * after a run and not once reads stop; while another process has the database open, no
 * read-mark lock outlives its read; when it has gone, runs keep their lock again. The
 * locks are read from /proc/locks: a process's POSIX locks on the -shm file's bytes
 * 123..127 (the read marks) or 128 (held by every process attached to it). */
static int shm_locks(const char* shm, pid_t pid, long first, long last) {
    struct stat st;
    if (stat(shm, &st) != 0) return -1;
    FILE* f = fopen("/proc/locks", "r");
    if (!f) return -1;
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char kind[16], dev_ino[64], end[24];
        int lock_pid;
        long start;
        if (strstr(line, "->")) continue;                  /* a waiter, not a lock */
        if (sscanf(line, "%*d: %15s %*s %*s %d %63s %ld %23s", kind, &lock_pid, dev_ino, &start, end) != 5) continue;
        const char* ino = strrchr(dev_ino, ':');
        long stop = strcmp(end, "EOF") == 0 ? LONG_MAX : atol(end);
        if (strcmp(kind, "POSIX") == 0 && lock_pid == pid && ino && strtoull(ino + 1, NULL, 10) == (unsigned long long)st.st_ino
            && start <= last && stop >= first) n++;
    }
    fclose(f);
    return n;
}

static int read_mark_locks(const char* shm) { return shm_locks(shm, getpid(), 123, 127); }

/* Waits (at most 2 s) until this process holds no read-mark lock on `shm`. */
static int read_marks_released(const char* shm) {
    for (int i = 0; i < 200 && read_mark_locks(shm) != 0; i++) sleep_ms(10);
    return read_mark_locks(shm) == 0;
}

static void read_run(cbl_collection* c, int reads) {
    char id[32];
    for (int i = 0; i < reads; i++) {
        snprintf(id, sizeof id, "k%d", i % 100);
        CHECK_DOC(c, id, 0, jval(D, "n") != NULL);
    }
}

/* Runs of 300 reads (five at most) until one ends with a read-mark lock kept: a run that a
 * loaded machine pauses for longer than the run's window releases its lock, as it should. */
static int read_run_keeps_a_lock(cbl_collection* c, const char* shm) {
    for (int attempt = 0; attempt < 5; attempt++) {
        read_run(c, 300);
        if (read_mark_locks(shm) == 1) return 1;
    }
    return 0;
}

/* Child mode: another process with the database open until `dir`/release exists (5 s at most). */
static int holder_child(const char* dir) {
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    char release[600], *json = NULL;
    snprintf(release, sizeof release, "%s/release", dir);
    if (cbl_db_open("kept", dir, NULL, &db, NULL) != CBL_OK) return 3;
    if (cbl_db_default_collection(db, &c, NULL) != CBL_OK) return 4;
    if (cbl_doc_get(c, "k1", 0, &json, NULL) != CBL_OK) return 5;
    cbl_free(json);
    struct stat st;
    for (int i = 0; i < 500 && stat(release, &st) != 0; i++) sleep_ms(10);
    cbl_collection_release(c);
    return cbl_db_close(db, NULL) == CBL_OK ? 0 : 6;
}

static void test_kept_read_locks(void) {
    char dir[512], shm[600], release[600], id[32], body[32];
    cbl_collection* c;
    cbl_db* db = setup("kept", "kept", dir, sizeof dir, &c);
    snprintf(shm, sizeof shm, "%s/kept.cblite2/db.sqlite3-shm", dir);
    snprintf(release, sizeof release, "%s/release", dir);
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    for (int i = 0; i < 100; i++) {
        snprintf(id, sizeof id, "k%d", i);
        snprintf(body, sizeof body, "{\"n\":%d}", i);
        CHECK_ST(cbl_doc_put(c, id, body, NULL, 0, NULL, NULL, &E), CBL_OK);
    }
    CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
    CHECK(read_marks_released(shm));

    CHECK(read_run_keeps_a_lock(c, shm));              /* kept for the next read */
    CHECK(read_marks_released(shm));                   /* and released once reads stop */

    /* Another process opens the database. */
    pid_t child = fork();
    if (child == 0) {
        execl("/proc/self/exe", "test_cblite", "--holder-child", dir, (char*)NULL);
        _exit(2);
    }
    CHECK(child > 0);
    int attached = 0;
    for (int i = 0; i < 500 && !(attached = shm_locks(shm, child, 128, 128) > 0); i++) sleep_ms(10);
    CHECK(attached);
    sleep_ms(50);                                      /* past the period a check of other processes holds */
    read_run(c, 300);
    CHECK(read_mark_locks(shm) == 0);                  /* nothing kept beside another process */

    FILE* f = fopen(release, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    int status = -1;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sleep_ms(50);
    CHECK(read_run_keeps_a_lock(c, shm));              /* alone again: kept again */
    CHECK(read_marks_released(shm));
    RELEASE_AND_CLOSE(c, db);
}

/* ---- Encryption ------------------------------------------------------------------ */

#define SECRET "correct horse battery staple"
#define PW_KEY "{\"password\":\"" SECRET "\"}"
#define RAW_KEY "{\"raw_hex\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}"

typedef struct leak_ctx { pthread_mutex_t mu; int messages, leaks; } leak_ctx;

static void leak_log_cb(void* context, cbl_log_domain domain, cbl_log_level level, const char* message) {
    (void)domain;
    (void)level;
    leak_ctx* l = (leak_ctx*)context;
    pthread_mutex_lock(&l->mu);
    l->messages++;
    if (strstr(message, "horse") || strstr(message, "battery") || strstr(message, "0123456789abcdef")) l->leaks++;
    pthread_mutex_unlock(&l->mu);
}

/* A reader busy in another thread while the key changes gives its connection back after
 * the file swap; that connection (old file, old key) must not serve later reads, which
 * would miss every write made after the swap. The filter holds the reader inside its read. */
typedef struct busy_reader {
    cbl_collection* coll;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int inside, proceed, finished;
    cbl_status st;
} busy_reader;

static int holding_filter(void* ctx, const char* doc, const char* params) {
    (void)doc; (void)params;
    busy_reader* b = ctx;
    pthread_mutex_lock(&b->mu);
    b->inside = 1;
    pthread_cond_broadcast(&b->cv);
    while (!b->proceed) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    return 1;
}

static void* busy_changes(void* arg) {
    busy_reader* b = arg;
    char* json = NULL;
    cbl_error e;
    b->st = cbl_collection_changes(b->coll, 0, "{\"filter\":\"hold\"}", &json, &e);
    cbl_free(json);
    pthread_mutex_lock(&b->mu);
    b->finished = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

static void test_rekey_beside_a_busy_reader(const char* dir, const char* open_json, const char* new_key) {
    cbl_db* db = NULL;
    CHECK_ST(cbl_db_open("busyrekey", dir, open_json, &db, &E), CBL_OK);
    if (!db) return;
    busy_reader b;
    memset(&b, 0, sizeof b);
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    b.coll = default_coll(db);
    CHECK_ST(put(b.coll, "before", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_db_set_filter(db, "hold", holding_filter, &b, &E), CBL_OK);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, busy_changes, &b) == 0);
    pthread_mutex_lock(&b.mu);
    while (!b.inside) pthread_cond_wait(&b.cv, &b.mu);
    pthread_mutex_unlock(&b.mu);
    CHECK_ST(cbl_db_change_encryption_key(db, new_key, &E), CBL_OK);
    pthread_mutex_lock(&b.mu);
    b.proceed = 1;
    pthread_cond_broadcast(&b.cv);
    pthread_mutex_unlock(&b.mu);
    CHECK(pthread_join(t, NULL) == 0 && b.finished == 1 && b.st == CBL_OK);
    CHECK_ST(cbl_db_set_filter(db, "hold", NULL, NULL, &E), CBL_OK);
    CHECK_ST(put(b.coll, "after", "{}", NULL, NULL, 0), CBL_OK);
    for (int i = 0; i < 3; i++) {     /* whichever reader serves it */
        CHECK_DOC(b.coll, "after", 0, 1);
        uint64_t n = 0;
        CHECK_ST(cbl_collection_count(b.coll, &n, &E), CBL_OK);
        CHECK(n == 2);
    }
    RELEASE_AND_CLOSE(b.coll, db);
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);
}

/* Readers on other threads keep reading while the key changes back and forth: each
 * re-key drops the pooled readers, so they open new connections while the file and the
 * key are swapped. None of their reads may fail. */
#define RAW_KEY_2 "{\"raw_hex\":\"1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100\"}"
typedef struct rekey_reader {
    pthread_t thread;
    cbl_collection* coll;
    int* stop;                  /* read and written atomically */
    long reads, failures;
    cbl_status last_failure;
} rekey_reader;

static void* read_during_rekeys(void* arg) {
    rekey_reader* r = arg;
    char id[32];
    cbl_error e;
    while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE)) {
        snprintf(id, sizeof id, "doc%ld", r->reads % 10);
        char* json = NULL;
        cbl_status st = cbl_doc_get(r->coll, id, 0, &json, &e);
        cbl_free(json);
        if (st != CBL_OK) { r->failures++; r->last_failure = st; }
        r->reads++;
    }
    return NULL;
}

static void test_reads_during_rekeys(const char* dir) {
    cbl_db* db = NULL;
    CHECK_ST(cbl_db_open("rekeys", dir, "{\"encryption_key\":" RAW_KEY "}", &db, &E), CBL_OK);
    if (!db) return;
    cbl_collection* c = default_coll(db);
    char id[32];
    for (int i = 0; i < 10; i++) {
        snprintf(id, sizeof id, "doc%d", i);
        CHECK_ST(put(c, id, "{}", NULL, NULL, 0), CBL_OK);
    }
    int stop = 0;
    rekey_reader readers[3];
    memset(readers, 0, sizeof readers);
    for (int i = 0; i < 3; i++) {
        readers[i].coll = c;
        readers[i].stop = &stop;
        CHECK(pthread_create(&readers[i].thread, NULL, read_during_rekeys, &readers[i]) == 0);
    }
    for (int k = 1; k <= 16; k++)
        CHECK_ST(cbl_db_change_encryption_key(db, k % 2 ? RAW_KEY_2 : RAW_KEY, &E), CBL_OK);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    long reads = 0, failures = 0;
    for (int i = 0; i < 3; i++) {
        CHECK(pthread_join(readers[i].thread, NULL) == 0);
        reads += readers[i].reads;
        failures += readers[i].failures;
        if (readers[i].failures) fprintf(stderr, "  reader %d: %ld failed reads, last status %d\n", i, readers[i].failures, (int)readers[i].last_failure);
    }
    CHECK(reads > 0);
    CHECK(failures == 0);
    RELEASE_AND_CLOSE(c, db);
}

static void test_encryption(void) {
    char dir[512], file[700];
    subdir("enc", dir, sizeof dir);
    const char* pw = "{\"encryption_key\":" PW_KEY "}";
    const char* raw = "{\"encryption_key\":" RAW_KEY "}";
    leak_ctx lk;
    memset(&lk, 0, sizeof lk);
    pthread_mutex_init(&lk.mu, NULL);
    cbl_log_set_callback(leak_log_cb, &lk);
    for (int d = 0; d < CBL_LOG_DOMAIN_COUNT; d++) CHECK_ST(cbl_log_set_level((cbl_log_domain)d, CBL_LOG_DEBUG, NULL), CBL_OK);

    /* create encrypted with a password; a plain database is not encrypted */
    cbl_db* db = NULL;
    CHECK_ST(cbl_db_open("secret", dir, pw, &db, &E), CBL_OK);
    CHECK(db_is_encrypted(db) == 1);
    cbl_collection* c = default_coll(db);
    CHECK_ST(put(c, "classified", "{\"eyes\":\"only\"}", NULL, NULL, 0), CBL_OK);
    RELEASE_AND_CLOSE(c, db);
    cbl_db* plain = open_db("plain", dir);
    CHECK(db_is_encrypted(plain) == 0);
    test_rekey_beside_a_busy_reader(dir, "{\"busy_timeout_ms\":200,\"encryption_key\":" PW_KEY "}", RAW_KEY);
    test_reads_during_rekeys(dir);

    /* missing or wrong key: 401, out NULL, the file untouched, the key in no message */
    snprintf(file, sizeof file, "%s/secret.cblite2/db.sqlite3", dir);
    struct stat before, after;
    CHECK(stat(file, &before) == 0);
    OPEN_FAILS("secret", dir, NULL, CBL_UNAUTHORIZED);
    OPEN_FAILS("secret", dir, "{\"encryption_key\":{\"password\":\"wrong horse\"}}", CBL_UNAUTHORIZED);
    CHECK(strstr(E.message, "horse") == NULL);
    OPEN_FAILS("secret", dir, raw, CBL_UNAUTHORIZED);
    CHECK(stat(file, &after) == 0 && after.st_size == before.st_size && after.st_mtime == before.st_mtime);
    /* malformed keys: 400 */
    OPEN_FAILS("secret", dir, "{\"encryption_key\":{\"password\":42}}", CBL_BAD_REQUEST);
    OPEN_FAILS("secret", dir, "{\"encryption_key\":{\"raw_hex\":\"xyz\"}}", CBL_BAD_REQUEST);
    OPEN_FAILS("secret", dir, "{\"encryption_key\":\"" SECRET "\"}", CBL_BAD_REQUEST);
    /* the right key opens it */
    CHECK_ST(cbl_db_open("secret", dir, pw, &db, &E), CBL_OK);
    c = default_coll(db);
    CHECK_DOC(c, "classified", 0, jhas(D, "eyes", "\"only\""));

    /* change the key (a raw key now); all handles of this process follow */
    cbl_db* db2 = NULL;
    CHECK_ST(cbl_db_open("secret", dir, pw, &db2, &E), CBL_OK);
    CHECK_ST(cbl_db_change_encryption_key(db, "{\"raw_hex\":\"nothex\"}", &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    CHECK_ST(cbl_db_change_encryption_key(db, RAW_KEY, &E), CBL_NOT_ACCEPTABLE);
    CHECK_ST(cbl_db_abort(db, &E), CBL_OK);
    CHECK_ST(cbl_db_change_encryption_key(db, RAW_KEY, &E), CBL_OK);
    CHECK(db_is_encrypted(db) == 1 && db_is_encrypted(db2) == 1);
    CHECK_DOC(c, "classified", 0, 1);
    CHECK_NUM(cbl_db_count(db2, &U, &E), 1);
    CHECK_ST(put(c, "after-rekey", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_db_close(db2, &E), CBL_OK);
    RELEASE_AND_CLOSE(c, db);
    OPEN_FAILS("secret", dir, pw, CBL_UNAUTHORIZED); /* the old key no longer opens it */
    CHECK_ST(cbl_db_open("secret", dir, raw, &db, &E), CBL_OK);
    CHECK_NUM(cbl_db_count(db, &U, &E), 2);

    /* remove encryption: afterwards it opens without a key */
    CHECK_ST(cbl_db_change_encryption_key(db, NULL, &E), CBL_OK);
    CHECK(db_is_encrypted(db) == 0);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    db = open_db("secret", dir);
    CHECK(db_is_encrypted(db) == 0);
    CHECK_NUM(cbl_db_count(db, &U, &E), 2);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);

    /* add encryption to a plain database */
    CHECK_ST(cbl_db_change_encryption_key(plain, PW_KEY, &E), CBL_OK);
    CHECK(db_is_encrypted(plain) == 1);
    CHECK_ST(cbl_db_close(plain, &E), CBL_OK);
    OPEN_FAILS("plain", dir, NULL, CBL_UNAUTHORIZED);
    CHECK_ST(cbl_db_open("plain", dir, pw, &plain, &E), CBL_OK);
    CHECK_ST(cbl_db_close(plain, &E), CBL_OK);

    /* bad handles */
    long long junk[4] = {0, 0, 0, 0};
    CHECK(db_is_encrypted((cbl_db*)(void*)junk) == -1 && db_is_encrypted(NULL) == -1);
    CHECK_ST(cbl_db_change_encryption_key((cbl_db*)(void*)junk, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_change_encryption_key(plain, NULL, &E), CBL_BAD_REQUEST); /* closed */

    cbl_log_set_callback(NULL, NULL);
    for (int d = 0; d < CBL_LOG_DOMAIN_COUNT; d++) CHECK_ST(cbl_log_set_level((cbl_log_domain)d, CBL_LOG_WARNING, NULL), CBL_OK);
    CHECK(lk.messages > 0 && lk.leaks == 0); /* the key never appears in log messages */
    pthread_mutex_destroy(&lk.mu);
}

/* ---- Yes/no queries that report errors (cbl_db_exists_v2, cbl_db_is_encrypted_v2) --- */

/* Sets (value NULL: unsets) an environment variable, returning its old value (caller
 * frees) for restore_env. */
static char* swap_env(const char* key, const char* value) {
    char* old = getenv(key) ? strdup(getenv(key)) : NULL;
    if (value) setenv(key, value, 1); else unsetenv(key);
    return old;
}

static void restore_env(const char* key, char* old) {
    if (old) setenv(key, old, 1); else unsetenv(key);
    free(old);
}

/* ---- The deprecated functions: the _v2 queries' old forms and the seven old names of
 *      calls renamed by the naming rule. They stay exported and working (old programs
 *      link against them), so they are called here with their warnings silenced. ----- */

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

static void test_v2_queries(void) {
    char dir[512], missing[700];
    subdir("v2", dir, sizeof dir);
    snprintf(missing, sizeof missing, "%s/no/such/dir", dir);
    int flag = 77;

    /* exists_v2: absent, then present; the deprecated form agrees */
    CHECK_ST(cbl_db_exists_v2("here", dir, &flag, &E), CBL_OK);
    CHECK(flag == 0 && cbl_db_exists("here", dir) == 0);
    cbl_db* db = open_db("here", dir);
    flag = 77;
    CHECK_ST(cbl_db_exists_v2("here", dir, &flag, &E), CBL_OK);
    CHECK(flag == 1 && cbl_db_exists("here", dir) == 1);
    flag = 77;
    CHECK_ST(cbl_db_exists_v2("here", dir, &flag, NULL), CBL_OK); /* err may be NULL */
    CHECK(flag == 1);
    CHECK_ST(cbl_db_exists_v2("a/b", dir, &flag, &E), CBL_OK);   /* valid, absent */
    CHECK(flag == 0);
    /* a missing directory: the database does not exist there; nothing is created */
    flag = 77;
    CHECK_ST(cbl_db_exists_v2("here", missing, &flag, &E), CBL_OK);
    CHECK(flag == 0 && !dir_exists(missing));
    /* an empty directory names no directory: 400, as for opening (the old form: 0) */
    flag = 77;
    CHECK_ST(cbl_db_exists_v2("here", "", &flag, &E), CBL_BAD_REQUEST);
    CHECK(flag == 0 && strstr(E.message, "directory") != NULL && cbl_db_exists("here", "") == 0);
    CHECK_OUT(cbl_db_list("", &J, &E), CBL_BAD_REQUEST, 1);
    /* NULL arguments: 400, *out_exists 0 */
    flag = 77;
    CHECK_ST(cbl_db_exists_v2(NULL, dir, &flag, &E), CBL_BAD_REQUEST);
    CHECK(flag == 0 && strstr(E.message, "name") != NULL);
    CHECK_ST(cbl_db_exists_v2("here", dir, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_exists_v2("here", dir, NULL, NULL), CBL_BAD_REQUEST);
    /* invalid names (and text that is not UTF-8): 400 where the old form answers 0 */
    const char* bad[] = {"Bad", "1abc", "", "a b", "caf\xc3\xa9", "a.b", "_x", "ab\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        flag = 77;
        CHECK_ST(cbl_db_exists_v2(bad[i], dir, &flag, &E), CBL_BAD_REQUEST);
        CHECK(flag == 0 && cbl_db_exists(bad[i], dir) == 0);
    }
    CHECK_ST(cbl_db_exists_v2("here", "/tmp/\xff", &flag, &E), CBL_BAD_REQUEST);
    /* dir NULL: the default directory; none at all: 400 where the old form answers 0 */
    char* save_cd = swap_env("CBLITE_DIR", dir);
    flag = 77;
    CHECK_ST(cbl_db_exists_v2("here", NULL, &flag, &E), CBL_OK);
    CHECK(flag == 1 && cbl_db_exists("here", NULL) == 1);
    unsetenv("CBLITE_DIR");
    char* save_xdg = swap_env("XDG_DATA_HOME", NULL);
    char* save_home = swap_env("HOME", NULL);
    flag = 77;
    CHECK_ST(cbl_db_exists_v2("here", NULL, &flag, &E), CBL_BAD_REQUEST);
    CHECK(flag == 0 && cbl_db_exists("here", NULL) == 0);
    restore_env("HOME", save_home);
    restore_env("XDG_DATA_HOME", save_xdg);
    restore_env("CBLITE_DIR", save_cd);

    /* is_encrypted_v2 */
    flag = 77;
    CHECK_ST(cbl_db_is_encrypted_v2(db, &flag, &E), CBL_OK);
    CHECK(flag == 0 && cbl_db_is_encrypted(db) == 0);
    cbl_db* enc = NULL;
    CHECK_ST(cbl_db_open("secret", dir, "{\"encryption_key\":{\"password\":\"pw\"}}", &enc, &E), CBL_OK);
    flag = 77;
    CHECK_ST(cbl_db_is_encrypted_v2(enc, &flag, NULL), CBL_OK);
    CHECK(flag == 1 && cbl_db_is_encrypted(enc) == 1);
    flag = 77; /* exists_v2 finds an encrypted database without its key */
    CHECK_ST(cbl_db_exists_v2("secret", dir, &flag, &E), CBL_OK);
    CHECK(flag == 1);
    CHECK_ST(cbl_db_is_encrypted_v2(enc, NULL, &E), CBL_BAD_REQUEST);
    flag = 77;
    CHECK_ST(cbl_db_is_encrypted_v2(NULL, &flag, &E), CBL_BAD_REQUEST);
    CHECK(flag == 0 && cbl_db_is_encrypted(NULL) == 0);
    long long junk[4] = {0, 0, 0, 0};
    flag = 77;
    CHECK_ST(cbl_db_is_encrypted_v2((cbl_db*)(void*)junk, &flag, &E), CBL_BAD_REQUEST);
    CHECK(flag == 0 && strstr(E.message, "invalid") != NULL);
    /* a handle of another type: 400, and it stays valid */
    cbl_collection* coll = default_coll(db);
    flag = 77;
    CHECK_ST(cbl_db_is_encrypted_v2((cbl_db*)(void*)coll, &flag, &E), CBL_BAD_REQUEST);
    CHECK(flag == 0 && strstr(E.message, "not a cbl_db") != NULL);
    CHECK_NUM(cbl_collection_count(coll, &U, &E), 0);
    cbl_collection_release(coll);
    /* a closed handle: 400 where the old form answers 0 */
    CHECK_ST(cbl_db_close(enc, &E), CBL_OK);
    flag = 77;
    CHECK_ST(cbl_db_is_encrypted_v2(enc, &flag, &E), CBL_BAD_REQUEST);
    CHECK(flag == 0 && cbl_db_is_encrypted(enc) == 0);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
}

/* Calls `old` and `new` (the same call under its two names) with the same arguments:
 * both must return `want` with the same JSON. */
#define CHECK_SAME_JSON(want, old_call, new_call) \
    do { char* O_ = NULL; char* N_ = NULL; \
         CHECK_ST(old_call, want); CHECK_ST(new_call, want); \
         check_(O_ != NULL && N_ != NULL && strcmp(O_, N_) == 0, #old_call " == " #new_call, __FILE__, __LINE__); \
         cbl_free(O_); cbl_free(N_); } while (0)

static void map_with_old_emit(void* context, const char* doc_json, cbl_emitter* emitter) {
    (void)doc_json;
    cbl_status* status = (cbl_status*)context;
    cbl_status st = cbl_emit(emitter, "\"k\"", "1", NULL);
    if (st != CBL_OK) *status = st;
}

static void count_changes(void* context, const cbl_change* changes, size_t count) {
    (void)changes;
    *(size_t*)context += count;
}

static void test_deprecated_names(void) {
    char dir[512];
    cbl_collection* c = NULL;
    cbl_db* db = setup("deprecated", "old", dir, sizeof dir, &c);
    /* cbl_docs_save and cbl_docs_put_existing write as the new names do */
    char* out = NULL;
    CHECK_ST(cbl_docs_save(c, "[{\"_id\":\"saved\",\"v\":1}]", &out, &E), CBL_OK);
    CHECK(out != NULL && strstr(out, "\"ok\":true") != NULL);
    cbl_free(out);
    out = NULL;
    CHECK_ST(cbl_docs_put_existing(c, "[{\"_id\":\"grafted\",\"_rev\":\"1-abc\",\"v\":2}]", &out, &E), CBL_OK);
    CHECK(out != NULL && strstr(out, "\"ok\":true") != NULL);
    cbl_free(out);
    CHECK_DOC(c, "grafted", 0, strstr(D, "\"1-abc\"") != NULL);
    CHECK_ST(cbl_docs_save(c, "{", &out, &E), CBL_BAD_REQUEST);          /* errors too */
    CHECK(out == NULL);
    /* cbl_revs_diff and cbl_docs_bulk_get answer as the new names */
    const char* diff = "{\"grafted\":[\"1-abc\",\"2-def\"],\"other\":[\"1-x\"]}";
    CHECK_SAME_JSON(CBL_OK, cbl_revs_diff(c, diff, &O_, &E), cbl_collection_revs_diff(c, diff, &N_, &E));
    const char* bulk = "{\"docs\":[{\"id\":\"grafted\"},{\"id\":\"saved\"},{\"id\":\"absent\"}]}";
    CHECK_SAME_JSON(CBL_OK, cbl_docs_bulk_get(c, bulk, "{\"revs\":true}", &O_, &E),
                    cbl_collection_docs_bulk_get(c, bulk, "{\"revs\":true}", &N_, &E));
    /* cbl_changes_wait: changes after 0, none after the last sequence */
    uint64_t last = 0;
    CHECK_ST(cbl_collection_last_sequence(c, &last, &E), CBL_OK);
    int changed = 77;
    CHECK_ST(cbl_changes_wait(c, 0, 0, &changed, &E), CBL_OK);
    CHECK(changed == 1);
    changed = 77;
    CHECK_ST(cbl_changes_wait(c, last, 10, &changed, &E), CBL_OK);
    CHECK(changed == 0);
    CHECK_ST(cbl_changes_wait(c, 0, 0, NULL, &E), CBL_BAD_REQUEST);
    /* cbl_emit from a map callback builds the index; outside one it is 400 */
    cbl_status emitted = CBL_OK;
    cbl_view* v = NULL;
    CHECK_ST(cbl_collection_view(c, "old_emit", &v, &E), CBL_OK);
    CHECK_ST(cbl_view_set_map_reduce(v, map_with_old_emit, NULL, NULL, "1", &emitted, &E), CBL_OK);
    CHECK_OUT(cbl_view_query_json(v, NULL, &J, &E), CBL_OK, jint(J, "total_rows") == 2);
    CHECK(emitted == CBL_OK);
    cbl_view_release(v);
    long long junk[4] = {0, 0, 0, 0};
    CHECK_ST(cbl_emit((cbl_emitter*)(void*)junk, "1", NULL, &E), CBL_BAD_REQUEST);
    /* cbl_listener_remove releases the token and stops its calls */
    size_t seen = 0;
    cbl_listener_token* token = NULL;
    int64_t before = cbl_instance_count();
    CHECK_ST(cbl_collection_add_change_listener(c, count_changes, &seen, &token, &E), CBL_OK);
    CHECK(cbl_instance_count() == before + 1);
    CHECK_ST(put(c, "heard", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_db_wait_notifications(db, 5000, &E), CBL_OK);
    CHECK(seen == 1);
    cbl_listener_remove(token);
    CHECK(cbl_instance_count() == before);
    CHECK_ST(put(c, "unheard", "{}", NULL, NULL, 0), CBL_OK);
    CHECK_ST(cbl_db_wait_notifications(db, 5000, &E), CBL_OK);
    CHECK(seen == 1);
    cbl_listener_remove(token);                                             /* twice: harmless */
    RELEASE_AND_CLOSE(c, db);
}

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* ---- Errors the header lists, handles it describes -------------------------------- */

static void noop_change(void* context, const cbl_change* changes, size_t count) {
    (void)context; (void)changes; (void)count;
}

typedef struct holder_ctx {
    cbl_db* db;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int begun, release;
    cbl_status begin, abort;
} holder_ctx;

/* Holds a transaction on `db` (a writer in another thread) until told to let go. */
static void* hold_transaction(void* arg) {
    holder_ctx* h = (holder_ctx*)arg;
    cbl_status st = cbl_db_begin(h->db, NULL);
    pthread_mutex_lock(&h->mu);
    h->begin = st;
    h->begun = 1;
    pthread_cond_broadcast(&h->cv);
    while (!h->release) pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    h->abort = cbl_db_abort(h->db, NULL);
    return NULL;
}

static void test_documented_errors(void) {
    char dir[512];
    cbl_collection* dflt;
    cbl_db* db = setup("docerr", "docerr", dir, sizeof dir, &dflt);
    cbl_collection* coll = NULL;
    cbl_listener_token* tok = (cbl_listener_token*)(void*)POISON_PTR;
    CHECK_ST(cbl_db_create_collection(db, "s", "c", &coll, &E), CBL_OK);
    CHECK_ST(put(coll, "d", "{}", NULL, NULL, 0), CBL_OK);

    /* cbl_collection_changes: 400 malformed options, 404 unknown filter, 400 NULL out */
    CHECK_OUT(cbl_collection_changes(coll, 0, "{\"bogus\":1}", &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_OUT(cbl_collection_changes(coll, 0, "[]", &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_OUT(cbl_collection_changes(coll, 0, "{\"limit\":\"x\"}", &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_OUT(cbl_collection_changes(coll, 0, "{\"filter\":\"nope\"}", &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_collection_changes(coll, 0, "{\"doc_ids\":[\"_design/x\"]}", &J, &E), CBL_OK,
              strstr(J, "\"results\":[]") != NULL);
    CHECK_ST(cbl_collection_changes(coll, 0, NULL, NULL, &E), CBL_BAD_REQUEST);

    /* listener registrations: 400 NULL callback / out_token / bad document ID */
    CHECK_ST(cbl_collection_add_change_listener(coll, NULL, NULL, &tok, &E), CBL_BAD_REQUEST);
    CHECK(tok == NULL);
    CHECK_ST(cbl_collection_add_change_listener(coll, noop_change, NULL, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_collection_add_document_listener(coll, "_bad", noop_change, NULL, &tok, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_collection_add_document_listener(coll, NULL, noop_change, NULL, &tok, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_add_change_listener(db, NULL, NULL, &tok, &E), CBL_BAD_REQUEST);
    CHECK(tok == NULL);

    /* cbl_view_info: 400 NULL out */
    cbl_view* view = NULL;
    CHECK_ST(cbl_collection_view(coll, "v", &view, &E), CBL_OK);
    CHECK_OUT(cbl_view_info(view, &J, &E), CBL_OK, jint(J, "last_sequence") == 0);
    CHECK_ST(cbl_view_info(view, NULL, &E), CBL_BAD_REQUEST);

    /* release calls ignore a handle of another type: it stays valid */
    cbl_view_release((cbl_view*)(void*)coll);
    cbl_query_result_release((cbl_query_result*)(void*)coll);
    cbl_listener_token_remove((cbl_listener_token*)(void*)coll);
    cbl_collection_release((cbl_collection*)(void*)view);
    CHECK_NUM(cbl_collection_count(coll, &U, &E), 1);
    CHECK_OUT(cbl_view_info(view, &J, &E), CBL_OK, 1);
    /* and a call given a handle of another type fails with 400 */
    CHECK_OUT(cbl_view_info((cbl_view*)(void*)coll, &J, &E), CBL_BAD_REQUEST,
              1);
    CHECK(strstr(E.message, "not a cbl_view") != NULL);

    /* cbl_db_optimize: inside this thread's transaction it is part of it; another
     * thread's transaction past the busy timeout: 503 */
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    CHECK_ST(cbl_db_optimize(db, &E), CBL_OK);
    CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
    cbl_db* quick = NULL;
    CHECK_ST(cbl_db_open("docerr", dir, "{\"busy_timeout_ms\":100}", &quick, &E), CBL_OK);
    holder_ctx h;
    memset(&h, 0, sizeof h);
    h.db = db;
    h.begin = h.abort = -1;
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, hold_transaction, &h) == 0);
    pthread_mutex_lock(&h.mu);
    while (!h.begun) pthread_cond_wait(&h.cv, &h.mu);
    pthread_mutex_unlock(&h.mu);
    CHECK_ST(cbl_db_optimize(quick, &E), CBL_BUSY);
    uint64_t n = 0; /* reads do not wait for the writer */
    CHECK_ST(cbl_db_count(quick, &n, &E), CBL_OK);
    pthread_mutex_lock(&h.mu);
    h.release = 1;
    pthread_cond_broadcast(&h.cv);
    pthread_mutex_unlock(&h.mu);
    CHECK(pthread_join(th, NULL) == 0 && h.begin == CBL_OK && h.abort == CBL_OK);
    pthread_cond_destroy(&h.cv);
    pthread_mutex_destroy(&h.mu);
    CHECK_ST(cbl_db_optimize(quick, &E), CBL_OK);
    CHECK_ST(cbl_db_optimize(NULL, &E), CBL_BAD_REQUEST);

    /* a deleted collection: 404 — but its name and scope still answer */
    CHECK_ST(cbl_db_delete_collection(db, "s", "c", &E), CBL_OK);
    CHECK_OUT(cbl_collection_name(coll, &J, &E), CBL_OK, strcmp(J, "c") == 0);
    CHECK_OUT(cbl_collection_scope(coll, &J, &E), CBL_OK, strcmp(J, "s") == 0);
    CHECK_ST(cbl_collection_name(coll, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_collection_count(coll, &n, &E), CBL_NOT_FOUND);
    CHECK_OUT(cbl_collection_changes(coll, 0, NULL, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_ST(cbl_collection_add_change_listener(coll, noop_change, NULL, &tok, &E), CBL_NOT_FOUND);
    CHECK_ST(cbl_collection_add_document_listener(coll, "d", noop_change, NULL, &tok, &E), CBL_NOT_FOUND);
    CHECK(tok == NULL);
    CHECK_OUT(cbl_view_info(view, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_collection_view_names(coll, &J, &E), CBL_NOT_FOUND, 1);
    cbl_view_release(view);
    cbl_collection_release(coll);

    /* a closed database handle: its collections fail with 400 — name and scope answer */
    cbl_view* dview = NULL;
    CHECK_ST(cbl_collection_view(dflt, "w", &dview, &E), CBL_OK);
    CHECK_ST(cbl_db_close(quick, &E), CBL_OK);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    CHECK_OUT(cbl_collection_name(dflt, &J, &E), CBL_OK, strcmp(J, "_default") == 0);
    CHECK_ST(cbl_collection_count(dflt, &n, &E), CBL_BAD_REQUEST);
    CHECK_OUT(cbl_collection_changes(dflt, 0, NULL, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_ST(cbl_collection_add_change_listener(dflt, noop_change, NULL, &tok, &E), CBL_BAD_REQUEST);
    CHECK_OUT(cbl_view_info(dview, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_ST(cbl_db_optimize(db, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_wait_notifications(db, 0, &E), CBL_BAD_REQUEST);
    cbl_view_release(dview);
    cbl_collection_release(dflt);
}

/* ---- Bad handles ----------------------------------------------------------------- */

static void test_bad_handles(void) {
    /* the address of a stack variable is not a handle: 400, out-parameters NULL, no crash */
    long long junk[16];
    memset(junk, 0, sizeof junk);
    cbl_db* fake = (cbl_db*)(void*)junk;
    cbl_collection* fake_c = (cbl_collection*)(void*)&junk[4];
    uint64_t n = 7;
    CHECK_ST(cbl_db_count(fake, &n, &E), CBL_BAD_REQUEST);
    CHECK(n == 0 && strstr(E.message, "invalid") != NULL);
    CHECK_OUT(cbl_db_name(fake, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_ST(cbl_db_close(fake, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_delete(fake, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_begin(fake, &E), CBL_BAD_REQUEST);
    cbl_collection* out = (cbl_collection*)POISON_PTR;
    CHECK_ST(cbl_db_default_collection(fake, &out, &E), CBL_BAD_REQUEST);
    CHECK(out == NULL);
    CHECK_ST(cbl_collection_count(fake_c, &(uint64_t){0}, &E), CBL_BAD_REQUEST);
    CHECK_OUT(cbl_doc_get(fake_c, "x", 0, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_ST(cbl_db_count(NULL, &(uint64_t){0}, &E), CBL_BAD_REQUEST);
    cbl_collection_release(fake_c); /* ignored */
    cbl_collection_release(NULL);
    cbl_listener_token_remove((cbl_listener_token*)(void*)&junk[8]); /* ignored */
    CHECK(junk[0] == 0 && junk[4] == 0 && junk[8] == 0); /* not written to */

    /* a closed database handle, its collections, a released collection: 400 */
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("badh", "badh", dir, sizeof dir, &c);
    cbl_collection* rel = default_coll(db);
    cbl_collection_release(rel);
    CHECK_ST(cbl_collection_count(rel, &(uint64_t){0}, &E), CBL_BAD_REQUEST);
    cbl_collection_release(rel); /* twice: ignored */
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    CHECK_ST(cbl_db_count(db, &(uint64_t){0}, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_close(db, &E), CBL_BAD_REQUEST);
    CHECK_OUT(cbl_db_path(db, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_ST(cbl_db_commit(db, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_max_rev_tree_depth(db, 5, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_collection_count(c, &(uint64_t){0}, &E), CBL_BAD_REQUEST);
    CHECK_ST(put(c, "x", "{}", NULL, NULL, 0), CBL_BAD_REQUEST);
    cbl_collection_release(c);
    CHECK(db_exists("badh", dir) == 1); /* close removes nothing */
}

/* ---- main ------------------------------------------------------------------------ */

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "--holder-child") == 0) return holder_child(argv[2]);
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(g_root, sizeof g_root, "/tmp/cblite-test-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 2; }
    int64_t instances = cbl_instance_count();
    CHECK(instances == 0); /* nothing opened yet: every handle counted later is this run's */

    test_library();
    test_logging();
    test_databases();
    test_transactions();
    test_collections();
    test_documents_basic();
    test_conflicts();
    test_prune_compact_purge();
    test_update();
    test_design_documents();
    test_deep_documents();
    test_expiration_and_local();
    test_validation();
    test_changes();
    test_listeners();
    test_threads();
    test_write_burst();
    test_idle_threads();
    test_kept_read_locks();
    test_encryption();
    test_bad_handles();
    test_v2_queries();
    test_deprecated_names();
    test_documented_errors();

    return finish_tests(instances);
}
