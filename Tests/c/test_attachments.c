/*
 * test_attachments.c — attachments through the C ABI of libcblite (the "Attachments"
 * section of include/cblite.h): content store, streaming writers and readers, stubs,
 * inheritance on body-only updates, removal, dedup, compaction, crash safety, hostile
 * names. Prints "N passed, N failed" and exits nonzero on any failure.
 *
 *   cc -std=c99 -Wall -Wextra -Werror -g -Iinclude -o test_attachments \
 *      Tests/c/test_attachments.c -Lbuild/lib -lcblite -lpthread
 */
#define _POSIX_C_SOURCE 200809L

#include "cblite.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- Checks (same conventions as test_cblite.c) ------------------------------------ */

#include "check.h"   /* CHECK, CHECK_ST, CHECK_OUT, E, g_root, g_pass/g_fail */

/* ---- Helpers ------------------------------------------------------------------------ */

#define EMPTY_DIGEST "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk="   /* SHA-1 of no bytes */
#define CHUNK 65536

/* Deterministic content: byte i of a stream, reproducible at any offset. */
static unsigned char pat(uint64_t i, unsigned seed) {
    uint64_t x = (i + seed * 7919ull) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return (unsigned char)(x >> 17);
}


static cbl_db* setup(const char* sub, char* dir, size_t n, cbl_collection** c) {
    snprintf(dir, n, "%s/%s", g_root, sub);
    cbl_db* db = open_db("att", dir);
    *c = default_coll(db);
    return db;
}

#define RELEASE_AND_CLOSE(c, db) do { cbl_collection_release(c); CHECK_ST(cbl_db_close(db, &E), CBL_OK); } while (0)

static char* get(cbl_collection* c, const char* id) {
    char* json = NULL;
    if (cbl_doc_get(c, id, 0, &json, &E) != CBL_OK) return NULL;
    return json;
}

/* Puts a body; copies the new revision ID into rev (when given). */
static cbl_status put(cbl_collection* c, const char* id, const char* body, const char* parent,
                      char* rev, size_t n) {
    char* r = NULL;
    cbl_status st = cbl_doc_put(c, id, body, parent, 0, NULL, &r, &E);
    if (rev && n) { rev[0] = '\0'; if (r) snprintf(rev, n, "%s", r); }
    cbl_free(r);
    return st;
}

static cbl_status set_att(cbl_collection* c, const char* id, const char* parent, const char* name,
                          const char* type, const char* digest, char* rev, size_t n) {
    char* r = NULL;
    cbl_status st = cbl_doc_set_attachment(c, id, parent, name, type, digest, &r, &E);
    if (rev && n) { rev[0] = '\0'; if (r) snprintf(rev, n, "%s", r); }
    cbl_free(r);
    return st;
}

/* Stores bytes; copies the digest into out. */
static cbl_status blob_put(cbl_db* db, const void* data, size_t len, char* out, size_t n) {
    char* d = NULL;
    cbl_status st = cbl_db_blob_put(db, data, len, &d, &E);
    if (out && n) { out[0] = '\0'; if (d) snprintf(out, n, "%s", d); }
    cbl_free(d);
    return st;
}

static int generation(const char* rev) { return rev ? atoi(rev) : -1; }

/* The text of `"_attachments":{...}` in a document's JSON (balanced braces), or "". */
static void attachments_text(const char* json, char* out, size_t n) {
    out[0] = '\0';
    const char* p = json ? strstr(json, "\"_attachments\":") : NULL;
    if (!p) return;
    p += strlen("\"_attachments\":");
    int depth = 0;
    size_t i = 0;
    do {
        if (*p == '{') depth++;
        if (*p == '}') depth--;
        if (i + 1 < n) out[i++] = *p;
        p++;
    } while (depth > 0 && *p);
    out[i] = '\0';
}

static int count_files(const char* dir, const char* suffix) {
    DIR* d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        size_t l = strlen(e->d_name), s = strlen(suffix);
        if (l >= s && strcmp(e->d_name + l - s, suffix) == 0) n++;
    }
    closedir(d);
    return n;
}

/* Entries of `dir` whose name contains `part`. */
static int count_containing(const char* dir, const char* part) {
    DIR* d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL) if (strstr(e->d_name, part) != NULL) n++;
    closedir(d);
    return n;
}

static int file_exists(const char* path) { struct stat st; return stat(path, &st) == 0; }

static void db_path(cbl_db* db, char* out, size_t n) {
    char* p = NULL;
    CHECK_ST(cbl_db_path(db, &p, &E), CBL_OK);
    snprintf(out, n, "%s", p ? p : "");
    cbl_free(p);
}

/* "sha1-<base64>" -> the 40 uppercase hex digits the file is named after. */
static int digest_hex(const char* digest, char hex[41]) {
    static const char* b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (strncmp(digest, "sha1-", 5) != 0 || strlen(digest) != 33) return 0;
    unsigned char bytes[21];
    int nb = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (const char* p = digest + 5; *p && *p != '='; p++) {
        const char* q = strchr(b64, *p);
        if (!q) return 0;
        acc = (acc << 6) | (uint32_t)(q - b64);
        bits += 6;
        if (bits >= 8) { bits -= 8; if (nb < 21) bytes[nb++] = (unsigned char)(acc >> bits); }
    }
    if (nb != 20) return 0;
    for (int i = 0; i < 20; i++) snprintf(hex + 2 * i, 3, "%02X", bytes[i]);
    return 1;
}

/* ---- Content store ------------------------------------------------------------------ */

static void test_blob_store(void) {
    char dir[512], bundle[600], attdir[700], d[64], d2[64];
    cbl_collection* c; cbl_db* db = setup("store", dir, sizeof dir, &c);
    db_path(db, bundle, sizeof bundle);
    snprintf(attdir, sizeof attdir, "%s/attachments", bundle);

    CHECK_ST(blob_put(db, NULL, 0, d, sizeof d), CBL_OK);            /* 0 bytes, NULL allowed */
    CHECK(strcmp(d, EMPTY_DIGEST) == 0);
    uint64_t len = 99;
    CHECK_ST(cbl_db_blob_length(db, EMPTY_DIGEST, &len, &E), CBL_OK);
    CHECK(len == 0);
    CHECK_ST(blob_put(db, "hello", 5, d, sizeof d), CBL_OK);
    CHECK_ST(cbl_db_blob_length(db, d, &len, &E), CBL_OK);
    CHECK(len == 5);
    char hex[41], file[800];
    CHECK(digest_hex(d, hex));
    snprintf(file, sizeof file, "%s/%s.blob", attdir, hex);
    CHECK(file_exists(file));                                         /* <bundle>/attachments/<HEX>.blob */
    CHECK_ST(blob_put(db, "hello", 5, d2, sizeof d2), CBL_OK);
    CHECK(strcmp(d, d2) == 0);
    CHECK(count_files(attdir, ".blob") == 2);                         /* stored once */
    /* digest out-parameter is optional */
    CHECK_ST(cbl_db_blob_put(db, "hello", 5, NULL, &E), CBL_OK);

    /* errors: NULL data with a length, malformed and unknown digests, NULL outs */
    CHECK_OUT(cbl_db_blob_put(db, NULL, 3, &J, &E), CBL_BAD_REQUEST, 1);
    len = 7;
    CHECK_ST(cbl_db_blob_length(db, "sha1-nope", &len, &E), CBL_BAD_REQUEST);
    CHECK(len == 0);
    len = 7;
    CHECK_ST(cbl_db_blob_length(db, "sha1-AAAAAAAAAAAAAAAAAAAAAAAAAAA=", &len, &E), CBL_NOT_FOUND);
    CHECK(len == 0);
    CHECK_ST(cbl_db_blob_length(db, d, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_blob_length(db, NULL, &len, &E), CBL_BAD_REQUEST);
    CHECK_OUT(cbl_db_blob_put(NULL, "x", 1, &J, &E), CBL_BAD_REQUEST, 1);

    /* import a file; a missing file is 404, a directory 400 */
    char src[700];
    snprintf(src, sizeof src, "%s/import.bin", dir);
    FILE* f = fopen(src, "wb");
    CHECK(f != NULL);
    for (int i = 0; i < 200000; i++) fputc(pat((uint64_t)i, 3), f);
    fclose(f);
    CHECK_OUT(cbl_db_blob_import_file(db, src, &J, &E), CBL_OK, strncmp(J, "sha1-", 5) == 0);
    CHECK_ST(cbl_db_blob_import_file(db, src, NULL, &E), CBL_OK);
    CHECK(count_files(attdir, ".blob") == 3);
    snprintf(src, sizeof src, "%s/absent.bin", dir);
    CHECK_OUT(cbl_db_blob_import_file(db, src, &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_db_blob_import_file(db, dir, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_OUT(cbl_db_blob_import_file(db, NULL, &J, &E), CBL_BAD_REQUEST, 1);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- Stubs, names, reading ------------------------------------------------------------ */

static void test_set_and_read(void) {
    char dir[512], d[64], r1[128], r2[128], r3[128];
    cbl_collection* c; cbl_db* db = setup("setread", dir, sizeof dir, &c);
    CHECK_ST(put(c, "doc", "{\"title\":\"photo\"}", NULL, r1, sizeof r1), CBL_OK);
    CHECK_ST(blob_put(db, "jpeg!", 5, d, sizeof d), CBL_OK);
    CHECK_ST(set_att(c, "doc", r1, "photo.jpg", "image/jpeg", d, r2, sizeof r2), CBL_OK);
    CHECK(generation(r2) == 2);
    char* json = get(c, "doc");
    CHECK(json && strstr(json, "\"title\":\"photo\"") != NULL);
    CHECK(json && strstr(json, "\"photo.jpg\":{\"content_type\":\"image/jpeg\"") != NULL);
    CHECK(json && strstr(json, d) != NULL && strstr(json, "\"length\":5") != NULL);
    CHECK(json && strstr(json, "\"revpos\":2") != NULL && strstr(json, "\"stub\":true") != NULL);
    CHECK(json && strstr(json, "\"data\"") == NULL);
    cbl_free(json);
    CHECK_OUT(cbl_doc_attachment_names(c, "doc", &J, &E), CBL_OK, strcmp(J, "[\"photo.jpg\"]") == 0);

    void* bytes = POISON_PTR;
    size_t n = 99;
    CHECK_ST(cbl_doc_get_attachment(c, "doc", "photo.jpg", &bytes, &n, &E), CBL_OK);
    CHECK(bytes != NULL && n == 5 && memcmp(bytes, "jpeg!", 5) == 0);
    cbl_free(bytes);
    bytes = POISON_PTR; n = 99;
    CHECK_ST(cbl_doc_get_attachment(c, "doc", "nope.jpg", &bytes, &n, &E), CBL_NOT_FOUND);
    CHECK(bytes == NULL && n == 0);
    bytes = POISON_PTR; n = 99;
    CHECK_ST(cbl_doc_get_attachment(c, "absent", "photo.jpg", &bytes, &n, &E), CBL_NOT_FOUND);
    CHECK(bytes == NULL && n == 0);
    CHECK_ST(cbl_doc_get_attachment(c, "doc", "photo.jpg", NULL, &n, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_doc_get_attachment(c, "doc", "photo.jpg", &bytes, NULL, &E), CBL_BAD_REQUEST);

    /* A zero-byte attachment: a non-NULL buffer of length 0. */
    CHECK_ST(set_att(c, "doc", r2, "empty", "text/plain", EMPTY_DIGEST, NULL, 0), CBL_PRECONDITION_FAILED);
    CHECK_ST(blob_put(db, NULL, 0, NULL, 0), CBL_OK);
    CHECK_ST(set_att(c, "doc", r2, "empty", "text/plain", EMPTY_DIGEST, r3, sizeof r3), CBL_OK);
    bytes = NULL; n = 99;
    CHECK_ST(cbl_doc_get_attachment(c, "doc", "empty", &bytes, &n, &E), CBL_OK);
    CHECK(bytes != NULL && n == 0);
    cbl_free(bytes);
    CHECK_OUT(cbl_doc_attachment_names(c, "doc", &J, &E), CBL_OK, strcmp(J, "[\"empty\",\"photo.jpg\"]") == 0);

    /* Parents: NULL on an existing document and a stale parent are conflicts. */
    CHECK_ST(set_att(c, "doc", NULL, "x", NULL, d, NULL, 0), CBL_CONFLICT);
    CHECK_ST(set_att(c, "doc", r1, "x", NULL, d, NULL, 0), CBL_CONFLICT);
    CHECK_ST(set_att(c, "absent", r1, "x", NULL, d, NULL, 0), CBL_NOT_FOUND);
    /* NULL parent on an absent document creates it, with this attachment. */
    char r4[128];
    CHECK_ST(set_att(c, "fresh", NULL, "a", NULL, d, r4, sizeof r4), CBL_OK);
    CHECK(generation(r4) == 1);
    json = get(c, "fresh");
    CHECK(json && strstr(json, "\"content_type\":\"application/octet-stream\"") != NULL);
    cbl_free(json);
    CHECK_OUT(cbl_doc_attachment_names(c, "absent", &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_attachment_names(c, NULL, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_OUT(cbl_doc_set_attachment(c, "doc", r3, "x", "bad type", d, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_OUT(cbl_doc_set_attachment(c, "doc", r3, "x", NULL, "sha1-bad", &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_OUT(cbl_doc_set_attachment(c, "doc", r3, "x", NULL, NULL, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_OUT(cbl_doc_set_attachment(NULL, "doc", r3, "x", NULL, d, &J, &E), CBL_BAD_REQUEST, 1);

    /* Inline data in a put is stored and comes back as a stub. */
    CHECK_ST(put(c, "inline", "{\"_attachments\":{\"a.txt\":{\"content_type\":\"text/plain\",\"data\":\"aGk=\"}}}", NULL, NULL, 0), CBL_OK);
    json = get(c, "inline");
    CHECK(json && strstr(json, "aGk=") == NULL && strstr(json, "\"length\":2") != NULL && strstr(json, "\"revpos\":1") != NULL);
    cbl_free(json);
    bytes = NULL;
    CHECK_ST(cbl_doc_get_attachment(c, "inline", "a.txt", &bytes, &n, &E), CBL_OK);
    CHECK(n == 2 && bytes && memcmp(bytes, "hi", 2) == 0);
    cbl_free(bytes);
    RELEASE_AND_CLOSE(c, db);
}

/* CouchDB's digest kept beside ours: each stub carries "md5" ("md5-<base64>" of the
 * content) while "digest" stays our SHA-1 address; CouchDB's stub forms ({"stub":true}
 * alone, an "md5-" digest) name the parent's attachment of that name (412 otherwise);
 * names starting with '_' are refused, as CouchDB does. */
static void test_couchdb_digests(void) {
    char dir[512], r1[128], r2[128];
    cbl_collection* c; cbl_db* db = setup("couchdigests", dir, sizeof dir, &c);
    CHECK_ST(put(c, "doc", "{\"_attachments\":{\"a.txt\":{\"content_type\":\"text/plain\",\"data\":\"aGk=\"}}}",
                 NULL, r1, sizeof r1), CBL_OK);
    char* json = get(c, "doc");
    CHECK(json && strstr(json, "\"md5\":\"md5-SfaKXIST7CwL9ImCHCH8Ow==\"") != NULL);   /* MD5 of "hi" */
    CHECK(json && strstr(json, "\"digest\":\"sha1-") != NULL);
    cbl_free(json);
    /* a read body saves back as it is; {"stub":true} alone and an md5- digest keep it */
    CHECK_ST(put(c, "doc", "{\"v\":2,\"_attachments\":{\"a.txt\":{\"stub\":true}}}", r1, r2, sizeof r2), CBL_OK);
    CHECK_ST(put(c, "doc", "{\"v\":3,\"_attachments\":{\"a.txt\":{\"stub\":true,\"digest\":\"md5-AAAAAAAAAAAAAAAAAAAAAA==\",\"revpos\":1}}}",
                 r2, r1, sizeof r1), CBL_OK);
    void* bytes = NULL; size_t n = 0;
    CHECK_ST(cbl_doc_get_attachment(c, "doc", "a.txt", &bytes, &n, &E), CBL_OK);
    CHECK(n == 2 && bytes && memcmp(bytes, "hi", 2) == 0);
    cbl_free(bytes);
    json = get(c, "doc");
    CHECK(json && strstr(json, "\"md5\":\"md5-SfaKXIST7CwL9ImCHCH8Ow==\"") != NULL && strstr(json, "\"revpos\":1") != NULL);
    cbl_free(json);
    /* a stub of another revpos, of an unknown name, on a new document: 412 missing_stub */
    CHECK_ST(put(c, "doc", "{\"_attachments\":{\"a.txt\":{\"stub\":true,\"revpos\":99}}}", r1, NULL, 0), CBL_PRECONDITION_FAILED);
    CHECK(strstr(E.message, "Invalid attachment stub in doc for a.txt") != NULL);
    CHECK_ST(put(c, "doc", "{\"_attachments\":{\"b.txt\":{\"stub\":true}}}", r1, NULL, 0), CBL_PRECONDITION_FAILED);
    CHECK_ST(put(c, "new", "{\"_attachments\":{\"a.txt\":{\"stub\":true}}}", NULL, NULL, 0), CBL_PRECONDITION_FAILED);
    /* neither data nor a stub; a reserved name */
    CHECK_ST(put(c, "doc", "{\"_attachments\":{\"a.txt\":{\"content_type\":\"text/plain\"}}}", r1, NULL, 0), CBL_BAD_REQUEST);
    CHECK_ST(put(c, "doc", "{\"_attachments\":{\"_a.txt\":{\"data\":\"aGk=\"}}}", r1, NULL, 0), CBL_BAD_REQUEST);
    CHECK(strstr(E.message, "starts with prohibited character '_'") != NULL);
    RELEASE_AND_CLOSE(c, db);
}

/* A revision can never refer to content the store does not have. */
static void test_missing_content(void) {
    char dir[512], r1[128];
    cbl_collection* c; cbl_db* db = setup("missing", dir, sizeof dir, &c);
    const char* missing = "sha1-AAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    char body[256];
    snprintf(body, sizeof body, "{\"_attachments\":{\"x.bin\":{\"digest\":\"%s\",\"stub\":true}}}", missing);
    CHECK_ST(put(c, "m", body, NULL, NULL, 0), CBL_PRECONDITION_FAILED);
    CHECK(strstr(E.message, "attachment content missing for \"x.bin\"") != NULL);
    CHECK(get(c, "m") == NULL);
    CHECK_ST(set_att(c, "m", NULL, "x", NULL, missing, NULL, 0), CBL_PRECONDITION_FAILED);
    CHECK_ST(put(c, "m", "{}", NULL, r1, sizeof r1), CBL_OK);
    CHECK_ST(put(c, "m", body, r1, NULL, 0), CBL_PRECONDITION_FAILED);
    CHECK_ST(cbl_doc_put_existing(c, "p", body, "[\"1-abc\"]", &E), CBL_PRECONDITION_FAILED);
    CHECK_OUT(cbl_doc_history(c, "m", NULL, &J, &E), CBL_OK, strchr(J, ',') == NULL);   /* one revision */
    /* a wrong length for stored content is a 400 */
    char d[64];
    CHECK_ST(blob_put(db, "four", 4, d, sizeof d), CBL_OK);
    snprintf(body, sizeof body, "{\"_attachments\":{\"x\":{\"digest\":\"%s\",\"length\":5}}}", d);
    CHECK_ST(put(c, "m", body, r1, NULL, 0), CBL_BAD_REQUEST);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- Body-only updates keep stubs; removal ------------------------------------------ */

static void test_inherit_and_remove(void) {
    char dir[512], d1[64], d2[64], r1[128], r2[128], r3[128], r4[128];
    char before[1024], after[1024];
    cbl_collection* c; cbl_db* db = setup("inherit", dir, sizeof dir, &c);
    CHECK_ST(blob_put(db, "AAA", 3, d1, sizeof d1), CBL_OK);
    CHECK_ST(blob_put(db, "BBBB", 4, d2, sizeof d2), CBL_OK);
    CHECK_ST(put(c, "d", "{\"v\":1}", NULL, r1, sizeof r1), CBL_OK);
    CHECK_ST(set_att(c, "d", r1, "a", "text/plain", d1, r2, sizeof r2), CBL_OK);
    CHECK_ST(set_att(c, "d", r2, "b", "text/plain", d2, r3, sizeof r3), CBL_OK);
    char* json = get(c, "d");
    attachments_text(json, before, sizeof before);
    cbl_free(json);
    CHECK(strstr(before, "\"revpos\":2") != NULL && strstr(before, "\"revpos\":3") != NULL);

    /* no "_attachments" key: inherited unchanged */
    CHECK_ST(put(c, "d", "{\"v\":2}", r3, r4, sizeof r4), CBL_OK);
    CHECK(generation(r4) == 4);
    json = get(c, "d");
    attachments_text(json, after, sizeof after);
    CHECK(json && strstr(json, "\"v\":2") != NULL);
    cbl_free(json);
    CHECK(before[0] != '\0' && strcmp(before, after) == 0);

    /* removal */
    CHECK_OUT(cbl_doc_remove_attachment(c, "d", r4, "zzz", &J, &E), CBL_NOT_FOUND, 1);
    CHECK_OUT(cbl_doc_remove_attachment(c, "d", r1, "a", &J, &E), CBL_CONFLICT, 1);
    CHECK_OUT(cbl_doc_remove_attachment(c, "d", r4, "a", &J, &E), CBL_OK, generation(J) == 5);
    CHECK_OUT(cbl_doc_attachment_names(c, "d", &J, &E), CBL_OK, strcmp(J, "[\"b\"]") == 0);
    void* bytes = POISON_PTR; size_t n = 9;
    CHECK_ST(cbl_doc_get_attachment(c, "d", "a", &bytes, &n, &E), CBL_NOT_FOUND);
    CHECK(bytes == NULL && n == 0);
    CHECK_OUT(cbl_doc_remove_attachment(c, "d", NULL, "b", &J, &E), CBL_OK, generation(J) == 6);
    CHECK_OUT(cbl_doc_attachment_names(c, "d", &J, &E), CBL_OK, strcmp(J, "[]") == 0);
    CHECK_OUT(cbl_doc_remove_attachment(c, "absent", NULL, "b", &J, &E), CBL_NOT_FOUND, 1);

    /* "_attachments": {} removes them all */
    char r7[128];
    CHECK_ST(set_att(c, "e", NULL, "a", NULL, d1, r7, sizeof r7), CBL_OK);
    CHECK_ST(put(c, "e", "{\"_attachments\":{},\"v\":3}", r7, NULL, 0), CBL_OK);
    json = get(c, "e");
    CHECK(json && strstr(json, "_attachments") == NULL);
    cbl_free(json);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- Large content, streamed --------------------------------------------------------- */

static void test_streaming(void) {
    char dir[512], bundle[600], attdir[700], tmpdir[720], digest[64], rev[128];
    cbl_collection* c; cbl_db* db = setup("stream", dir, sizeof dir, &c);
    db_path(db, bundle, sizeof bundle);
    snprintf(attdir, sizeof attdir, "%s/attachments", bundle);
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", attdir);
    const uint64_t total = 50ull * 1024 * 1024 + 777;                /* 50 MB */
    unsigned char* buf = malloc(CHUNK);
    CHECK(buf != NULL);

    cbl_blob_writer* w = (cbl_blob_writer*)POISON_PTR;
    CHECK_ST(cbl_blob_writer_create(db, &w, &E), CBL_OK);
    CHECK(w != NULL && w != (cbl_blob_writer*)POISON_PTR);
    for (uint64_t off = 0; off < total; off += CHUNK) {
        size_t n = (size_t)(total - off < CHUNK ? total - off : CHUNK);
        for (size_t i = 0; i < n; i++) buf[i] = pat(off + i, 1);
        cbl_status st = cbl_blob_writer_write(w, buf, n, &E);
        if (st != CBL_OK) { CHECK(st == CBL_OK); break; }
    }
    CHECK_ST(cbl_blob_writer_write(w, NULL, 0, &E), CBL_OK);
    CHECK_ST(cbl_blob_writer_write(w, NULL, 1, &E), CBL_BAD_REQUEST);
    CHECK(count_files(attdir, ".blob") == 0);                         /* nothing visible yet */
    CHECK(count_files(tmpdir, ".tmp") == 1);
    char* dg = POISON_PTR;
    CHECK_ST(cbl_blob_writer_finish(w, &dg, &E), CBL_OK);
    CHECK(dg != NULL && strncmp(dg, "sha1-", 5) == 0);
    snprintf(digest, sizeof digest, "%s", dg ? dg : "");
    cbl_free(dg);
    CHECK(count_files(attdir, ".blob") == 1 && count_files(tmpdir, ".tmp") == 0);
    CHECK_OUT(cbl_blob_writer_finish(w, &J, &E), CBL_BAD_REQUEST, 1);  /* released */
    CHECK_ST(cbl_blob_writer_write(w, "x", 1, &E), CBL_BAD_REQUEST);
    uint64_t len = 0;
    CHECK_ST(cbl_db_blob_length(db, digest, &len, &E), CBL_OK);
    CHECK(len == total);

    CHECK_ST(set_att(c, "big", NULL, "movie.bin", "application/octet-stream", digest, rev, sizeof rev), CBL_OK);
    cbl_blob_reader* r = (cbl_blob_reader*)POISON_PTR;
    CHECK_ST(cbl_doc_open_attachment(c, "big", "movie.bin", &r, &E), CBL_OK);
    CHECK(r != NULL && r != (cbl_blob_reader*)POISON_PTR);
    CHECK_ST(cbl_blob_reader_length(r, &len, &E), CBL_OK);
    CHECK(len == total);
    uint64_t got = 0;
    int same = 1;
    for (;;) {
        size_t n = 12345;
        cbl_status st = cbl_blob_reader_read(r, buf, 40000, &n, &E);
        if (st != CBL_OK) { CHECK(st == CBL_OK); break; }
        if (n == 0) break;
        for (size_t i = 0; i < n; i++) if (buf[i] != pat(got + i, 1)) same = 0;
        got += n;
    }
    CHECK(got == total && same);
    /* seek and read at an offset; past the end is 400 */
    CHECK_ST(cbl_blob_reader_seek(r, 33333333, &E), CBL_OK);
    size_t n = 0;
    CHECK_ST(cbl_blob_reader_read(r, buf, 100, &n, &E), CBL_OK);
    CHECK(n == 100 && buf[0] == pat(33333333, 1) && buf[99] == pat(33333333 + 99, 1));
    CHECK_ST(cbl_blob_reader_seek(r, total, &E), CBL_OK);
    n = 5;
    CHECK_ST(cbl_blob_reader_read(r, buf, 100, &n, &E), CBL_OK);
    CHECK(n == 0);
    CHECK_ST(cbl_blob_reader_seek(r, total + 1, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_blob_reader_read(r, NULL, 10, &n, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_blob_reader_read(r, buf, 10, NULL, &E), CBL_BAD_REQUEST);
    cbl_blob_reader_close(r);
    cbl_blob_reader_close(r);                                          /* twice: ignored */
    CHECK_ST(cbl_blob_reader_length(r, &len, &E), CBL_BAD_REQUEST);
    CHECK(len == 0);

    /* to a file, then re-import it: same digest, still one stored file */
    char out[700];
    snprintf(out, sizeof out, "%s/movie.out", dir);
    CHECK_ST(cbl_doc_save_attachment_to_file(c, "big", "movie.bin", out, &E), CBL_OK);
    struct stat st;
    CHECK(stat(out, &st) == 0 && (uint64_t)st.st_size == total);
    CHECK_OUT(cbl_db_blob_import_file(db, out, &J, &E), CBL_OK, strcmp(J, digest) == 0);
    CHECK(count_files(attdir, ".blob") == 1);
    CHECK_ST(cbl_doc_save_attachment_to_file(c, "big", "movie.bin", dir, &E), CBL_BAD_REQUEST);
    snprintf(out, sizeof out, "%s/no/such/folder/x", dir);
    CHECK_ST(cbl_doc_save_attachment_to_file(c, "big", "movie.bin", out, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_doc_save_attachment_to_file(c, "big", "nope", out, &E), CBL_NOT_FOUND);
    CHECK_ST(cbl_doc_save_attachment_to_file(c, "big", "movie.bin", NULL, &E), CBL_BAD_REQUEST);
    CHECK(count_containing(dir, ".cblite-tmp") == 0);
    unlink(out);
    free(buf);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- Dedup and compaction -------------------------------------------------------------- */

static void test_dedup_and_compaction(void) {
    char dir[512], bundle[600], attdir[700];
    char dA[64], dB[64], dP[64], dS[64], dL[64], dT[64], r[128];
    cbl_collection* c; cbl_db* db = setup("compact", dir, sizeof dir, &c);
    db_path(db, bundle, sizeof bundle);
    snprintf(attdir, sizeof attdir, "%s/attachments", bundle);
    CHECK_ST(blob_put(db, "replaced", 8, dA, sizeof dA), CBL_OK);
    CHECK_ST(blob_put(db, "replacement", 11, dB, sizeof dB), CBL_OK);
    CHECK_ST(blob_put(db, "purged", 6, dP, sizeof dP), CBL_OK);
    CHECK_ST(blob_put(db, "shared", 6, dS, sizeof dS), CBL_OK);
    CHECK_ST(blob_put(db, "loose, never attached", 21, dL, sizeof dL), CBL_OK);
    CHECK_ST(blob_put(db, "deleted", 7, dT, sizeof dT), CBL_OK);
    /* dedup across documents: the same content under three documents, one file */
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "s%d", i);
        CHECK_ST(set_att(c, id, NULL, "f", NULL, dS, NULL, 0), CBL_OK);
    }
    CHECK(count_files(attdir, ".blob") == 6);
    CHECK_ST(set_att(c, "upd", NULL, "f", NULL, dA, r, sizeof r), CBL_OK);
    CHECK_ST(set_att(c, "upd", r, "f", NULL, dB, NULL, 0), CBL_OK);
    CHECK_ST(set_att(c, "purge", NULL, "f", NULL, dP, NULL, 0), CBL_OK);
    CHECK_ST(set_att(c, "del", NULL, "f", NULL, dT, r, sizeof r), CBL_OK);
    CHECK_ST(cbl_doc_delete(c, "del", r, NULL, &E), CBL_OK);
    CHECK_ST(cbl_doc_purge(c, "purge", &E), CBL_OK);
    CHECK_ST(cbl_doc_purge(c, "s0", &E), CBL_OK);
    uint64_t len = 0;
    CHECK_ST(cbl_db_blob_length(db, dP, &len, &E), CBL_OK);             /* still there until compaction */
    CHECK(len == 6);
    CHECK_ST(cbl_db_compact(db, &E), CBL_OK);
    const char* gone[] = {dA, dP, dL, dT};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        len = 77;
        CHECK_ST(cbl_db_blob_length(db, gone[i], &len, &E), CBL_NOT_FOUND);
        CHECK(len == 0);
    }
    CHECK_ST(cbl_db_blob_length(db, dB, &len, &E), CBL_OK);
    CHECK(len == 11);
    CHECK_ST(cbl_db_blob_length(db, dS, &len, &E), CBL_OK);             /* s1, s2 still refer to it */
    CHECK(len == 6);
    CHECK(count_files(attdir, ".blob") == 2);
    void* bytes = NULL; size_t n = 0;
    CHECK_ST(cbl_doc_get_attachment(c, "upd", "f", &bytes, &n, &E), CBL_OK);
    CHECK(n == 11 && bytes && memcmp(bytes, "replacement", 11) == 0);
    cbl_free(bytes);
    /* a stub for content compaction deleted cannot be saved */
    CHECK_ST(set_att(c, "late", NULL, "f", NULL, dL, NULL, 0), CBL_PRECONDITION_FAILED);
    CHECK_OUT(cbl_db_integrity_check(db, &J, &E), CBL_OK, strcmp(J, "[]") == 0);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- Crash safety ---------------------------------------------------------------------- */

#define CRASH_CONTENT "content of a writer that never finished"

/* Child mode: starts writing into the store, then dies without finishing. */
static int crash_child(const char* dir) {
    cbl_db* db = NULL;
    if (cbl_db_open("att", dir, NULL, &db, NULL) != CBL_OK) return 3;
    cbl_blob_writer* w = NULL;
    if (cbl_blob_writer_create(db, &w, NULL) != CBL_OK) return 4;
    if (cbl_blob_writer_write(w, CRASH_CONTENT, strlen(CRASH_CONTENT), NULL) != CBL_OK) return 5;
    _exit(0);    /* no finish, no cancel, no close: as if killed */
}

static void test_crash_safety(void) {
    char dir[512], bundle[600], attdir[700], tmpdir[720];
    cbl_collection* c; cbl_db* db = setup("crash", dir, sizeof dir, &c);
    db_path(db, bundle, sizeof bundle);
    snprintf(attdir, sizeof attdir, "%s/attachments", bundle);
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", attdir);

    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test_attachments", "--crash-child", dir, (char*)NULL);
        _exit(2);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(count_files(tmpdir, ".tmp") == 1);                 /* the half-written file is left over */
    CHECK(count_files(attdir, ".blob") == 0);                /* ... and not visible */
    CHECK_OUT(cbl_doc_attachment_names(c, "x", &J, &E), CBL_NOT_FOUND, 1);

    /* a writer still at work keeps its temporary file through compaction */
    cbl_blob_writer* live = NULL;
    CHECK_ST(cbl_blob_writer_create(db, &live, &E), CBL_OK);
    CHECK_ST(cbl_blob_writer_write(live, "live", 4, &E), CBL_OK);
    CHECK(count_files(tmpdir, ".tmp") == 2);
    CHECK_ST(cbl_db_compact(db, &E), CBL_OK);
    CHECK(count_files(tmpdir, ".tmp") == 1);                 /* the leftover is cleaned */
    char* d = NULL;
    CHECK_ST(cbl_blob_writer_finish(live, &d, &E), CBL_OK);
    CHECK(count_files(tmpdir, ".tmp") == 0 && count_files(attdir, ".blob") == 1);
    CHECK_ST(set_att(c, "live", NULL, "l", NULL, d, NULL, 0), CBL_OK);
    cbl_free(d);

    /* the crashed content is simply absent: storing it again works */
    char dc[64];
    CHECK_ST(blob_put(db, CRASH_CONTENT, strlen(CRASH_CONTENT), dc, sizeof dc), CBL_OK);
    CHECK(count_files(attdir, ".blob") == 2);

    /* cancel: nothing becomes visible, the temporary file goes */
    cbl_blob_writer* w = NULL;
    CHECK_ST(cbl_blob_writer_create(db, &w, &E), CBL_OK);
    CHECK_ST(cbl_blob_writer_write(w, "cancelled", 9, &E), CBL_OK);
    cbl_blob_writer_cancel(w);
    cbl_blob_writer_cancel(w);                               /* released: ignored */
    cbl_blob_writer_cancel(NULL);
    CHECK(count_files(tmpdir, ".tmp") == 0 && count_files(attdir, ".blob") == 2);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- Group commit: content stored inside a transaction ---------------------------------- */

#define TXN_SIZE (3 * CHUNK + 17)

static void fill(unsigned char* buf, size_t n, unsigned seed) { for (size_t i = 0; i < n; i++) buf[i] = pat(i, seed); }

/* The length of `digest` as another thread sees it (status; *out_len when found). */
struct other_length { cbl_db* db; const char* digest; cbl_status st; uint64_t len; };
static void* other_length_thread(void* arg) {
    struct other_length* o = arg;
    cbl_error err;
    o->st = cbl_db_blob_length(o->db, o->digest, &o->len, &err);
    return NULL;
}
static cbl_status length_from_other_thread(cbl_db* db, const char* digest) {
    struct other_length o = {db, digest, -1, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, other_length_thread, &o) != 0) return -1;
    pthread_join(t, NULL);
    return o.st;
}

/* Child mode: stores content and attaches it inside a transaction, then dies before the commit. */
static int txn_crash_child(const char* dir) {
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    if (cbl_db_open("att", dir, NULL, &db, NULL) != CBL_OK) return 3;
    if (cbl_db_default_collection(db, &c, NULL) != CBL_OK) return 4;
    if (cbl_db_begin(db, NULL) != CBL_OK) return 5;
    unsigned char* buf = malloc(TXN_SIZE);
    if (!buf) return 6;
    fill(buf, TXN_SIZE, 99);
    char* d = NULL;
    if (cbl_db_blob_put(db, buf, TXN_SIZE, &d, NULL) != CBL_OK) return 7;
    if (cbl_doc_set_attachment(c, "crashed", NULL, "a", NULL, d, NULL, NULL) != CBL_OK) return 8;
    _exit(0);    /* no commit: as if killed (or the power went) before it */
}

static void test_group_commit(void) {
    char dir[512], bundle[600], attdir[700], tmpdir[720];
    cbl_collection* c; cbl_db* db = setup("txn", dir, sizeof dir, &c);
    db_path(db, bundle, sizeof bundle);
    snprintf(attdir, sizeof attdir, "%s/attachments", bundle);
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", attdir);
    unsigned char* buf = malloc(TXN_SIZE);
    CHECK(buf != NULL);
    if (!buf) return;
    char digests[3][64], id[16];

    /* stored in a transaction: readable and attachable at once by this thread, invisible
     * to others and not under its digest's name until the commit */
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    for (int k = 0; k < 3; k++) {
        fill(buf, TXN_SIZE, (unsigned)k + 10);
        CHECK_ST(blob_put(db, buf, TXN_SIZE, digests[k], sizeof digests[k]), CBL_OK);
        uint64_t len = 0;
        CHECK_ST(cbl_db_blob_length(db, digests[k], &len, &E), CBL_OK);
        CHECK(len == TXN_SIZE);
        snprintf(id, sizeof id, "t%d", k);
        CHECK_ST(set_att(c, id, NULL, "a", NULL, digests[k], NULL, 0), CBL_OK);
        void* bytes = NULL; size_t n = 0;
        CHECK_ST(cbl_doc_get_attachment(c, id, "a", &bytes, &n, &E), CBL_OK);
        CHECK(n == TXN_SIZE && bytes && memcmp(bytes, buf, n) == 0);
        cbl_free(bytes);
    }
    CHECK(count_files(attdir, ".blob") == 0);
    CHECK(count_containing(tmpdir, ".pending") == 1);
    CHECK(length_from_other_thread(db, digests[0]) == CBL_NOT_FOUND);
    CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
    CHECK(count_files(attdir, ".blob") == 3);
    CHECK(count_containing(tmpdir, ".pending") == 0);
    CHECK(length_from_other_thread(db, digests[2]) == CBL_OK);
    for (int k = 0; k < 3; k++) {
        fill(buf, TXN_SIZE, (unsigned)k + 10);
        snprintf(id, sizeof id, "t%d", k);
        void* bytes = NULL; size_t n = 0;
        CHECK_ST(cbl_doc_get_attachment(c, id, "a", &bytes, &n, &E), CBL_OK);
        CHECK(n == TXN_SIZE && bytes && memcmp(bytes, buf, n) == 0);
        cbl_free(bytes);
    }

    /* abort: the content stored in the transaction is gone, what was there stays */
    char aborted[64];
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    fill(buf, TXN_SIZE, 50);
    CHECK_ST(blob_put(db, buf, TXN_SIZE, aborted, sizeof aborted), CBL_OK);
    CHECK_ST(set_att(c, "ab", NULL, "a", NULL, aborted, NULL, 0), CBL_OK);
    CHECK_ST(set_att(c, "t0", NULL, "b", NULL, digests[0], NULL, 0), CBL_CONFLICT);   /* exists: needs its rev */
    CHECK_ST(cbl_db_abort(db, &E), CBL_OK);
    uint64_t len = 0;
    CHECK_ST(cbl_db_blob_length(db, aborted, &len, &E), CBL_NOT_FOUND);
    CHECK_ST(cbl_db_blob_length(db, digests[0], &len, &E), CBL_OK);
    CHECK(get(c, "ab") == NULL);
    CHECK(count_files(attdir, ".blob") == 3 && count_containing(tmpdir, ".pending") == 0);

    /* a process that dies before its commit: nothing of it is visible or trusted */
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test_attachments", "--txn-crash-child", dir, (char*)NULL);
        _exit(2);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(count_containing(tmpdir, ".pending") == 1);          /* its folder is left over ... */
    CHECK(count_files(attdir, ".blob") == 3);                  /* ... nothing was installed */
    char* json = get(c, "crashed");
    CHECK(json == NULL);
    cbl_free(json);
    fill(buf, TXN_SIZE, 99);
    char crashed[64];
    cbl_db* again = open_db("att", dir);                       /* an open cleans the leftover */
    CHECK(count_containing(tmpdir, ".pending") == 0);
    CHECK_ST(blob_put(again, buf, TXN_SIZE, crashed, sizeof crashed), CBL_OK);
    CHECK_ST(cbl_db_blob_length(db, crashed, &len, &E), CBL_OK);
    CHECK(len == TXN_SIZE);
    CHECK_ST(cbl_db_close(again, &E), CBL_OK);

    /* a file cut short under its digest's name is not trusted: a put inside a
     * transaction replaces it at the commit */
    char hex[41], path[800];
    CHECK(digest_hex(digests[1], hex));
    snprintf(path, sizeof path, "%s/%s.blob", attdir, hex);
    CHECK(truncate(path, CHUNK) == 0);
    fill(buf, TXN_SIZE, 11);
    char again_digest[64];
    CHECK_ST(cbl_db_begin(db, &E), CBL_OK);
    CHECK_ST(blob_put(db, buf, TXN_SIZE, again_digest, sizeof again_digest), CBL_OK);
    CHECK(strcmp(again_digest, digests[1]) == 0);
    CHECK_ST(cbl_db_commit(db, &E), CBL_OK);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size == TXN_SIZE);
    void* bytes = NULL; size_t n = 0;
    CHECK_ST(cbl_doc_get_attachment(c, "t1", "a", &bytes, &n, &E), CBL_OK);
    CHECK(n == TXN_SIZE && bytes && memcmp(bytes, buf, n) == 0);
    cbl_free(bytes);
    free(buf);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- Hostile names and corrupt content ------------------------------------------------ */

static void test_hostile_names(void) {
    char dir[512], bundle[600], attdir[700], d[64], rev[128], path[800];
    cbl_collection* c; cbl_db* db = setup("names", dir, sizeof dir, &c);
    db_path(db, bundle, sizeof bundle);
    snprintf(attdir, sizeof attdir, "%s/attachments", bundle);
    CHECK_ST(blob_put(db, "payload", 7, d, sizeof d), CBL_OK);
    const char* ok_names[] = {"../x", "/etc/passwd", "../../../../tmp/cblite-evil", "..", "a/b/c",
                              "\xe5\x90\x8d\xe5\x89\x8d with spaces"};
    rev[0] = '\0';
    for (size_t i = 0; i < sizeof ok_names / sizeof ok_names[0]; i++) {
        CHECK_ST(set_att(c, "h", rev[0] ? rev : NULL, ok_names[i], "text/plain", d, rev, sizeof rev), CBL_OK);
        void* bytes = NULL; size_t n = 0;
        CHECK_ST(cbl_doc_get_attachment(c, "h", ok_names[i], &bytes, &n, &E), CBL_OK);
        CHECK(n == 7 && bytes && memcmp(bytes, "payload", 7) == 0);
        cbl_free(bytes);
    }
    snprintf(path, sizeof path, "%s/x", bundle);
    CHECK(!file_exists(path));
    snprintf(path, sizeof path, "%s/x", dir);
    CHECK(!file_exists(path));
    CHECK(!file_exists("/tmp/cblite-evil"));
    CHECK(count_files(attdir, ".blob") == 1);
    char longname[300];
    memset(longname, 'n', 255); longname[255] = '\0';
    CHECK_ST(set_att(c, "h", rev, longname, NULL, d, rev, sizeof rev), CBL_OK);     /* 255 bytes: fine */
    longname[255] = 'n'; longname[256] = '\0';
    CHECK_ST(set_att(c, "h", rev, longname, NULL, d, NULL, 0), CBL_BAD_REQUEST);   /* 256: too long */
    CHECK_ST(set_att(c, "h", rev, "", NULL, d, NULL, 0), CBL_BAD_REQUEST);
    CHECK_ST(set_att(c, "h", rev, "ctl\x01", NULL, d, NULL, 0), CBL_BAD_REQUEST);
    CHECK_ST(set_att(c, "h", rev, "new\nline", NULL, d, NULL, 0), CBL_BAD_REQUEST);
    CHECK_ST(set_att(c, "h", rev, "bad\xff", NULL, d, NULL, 0), CBL_BAD_REQUEST);   /* not UTF-8 */
    CHECK_ST(set_att(c, "h", rev, NULL, NULL, d, NULL, 0), CBL_BAD_REQUEST);
    /* NUL can only arrive through JSON */
    CHECK_ST(put(c, "h2", "{\"_attachments\":{\"a\\u0000b\":{\"data\":\"aGk=\"}}}", NULL, NULL, 0), CBL_BAD_REQUEST);
    CHECK_ST(put(c, "h2", "{\"_attachments\":{\"\":{\"data\":\"aGk=\"}}}", NULL, NULL, 0), CBL_BAD_REQUEST);
    CHECK(get(c, "h2") == NULL);
    void* bytes = POISON_PTR; size_t n = 3;
    CHECK_ST(cbl_doc_get_attachment(c, "h", "", &bytes, &n, &E), CBL_BAD_REQUEST);
    CHECK(bytes == NULL && n == 0);

    /* corrupt content (changed behind the library's back) is detected when read */
    char hex[41];
    CHECK(digest_hex(d, hex));
    snprintf(path, sizeof path, "%s/%s.blob", attdir, hex);
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && write(fd, "PAYLOAD", 7) == 7);
    if (fd >= 0) close(fd);
    bytes = POISON_PTR;
    CHECK_ST(cbl_doc_get_attachment(c, "h", "../x", &bytes, &n, &E), CBL_INTERNAL_ERROR);
    CHECK(bytes == NULL);
    cbl_blob_reader* r = NULL;
    CHECK_ST(cbl_doc_open_attachment(c, "h", "../x", &r, &E), CBL_OK);
    unsigned char buf[64];
    CHECK_ST(cbl_blob_reader_read(r, buf, sizeof buf, &n, &E), CBL_INTERNAL_ERROR);
    CHECK(n == 0);
    cbl_blob_reader_close(r);
    cbl_blob_reader* r2 = (cbl_blob_reader*)POISON_PTR;
    CHECK_ST(cbl_doc_open_attachment(c, "h", "missing", &r2, &E), CBL_NOT_FOUND);
    CHECK(r2 == NULL);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- Bad handles ---------------------------------------------------------------------- */

static void test_bad_handles(void) {
    long long junk[8];
    memset(junk, 0, sizeof junk);
    cbl_blob_writer* fw = (cbl_blob_writer*)(void*)junk;
    cbl_blob_reader* fr = (cbl_blob_reader*)(void*)&junk[4];
    CHECK_ST(cbl_blob_writer_write(fw, "x", 1, &E), CBL_BAD_REQUEST);
    CHECK_OUT(cbl_blob_writer_finish(fw, &J, &E), CBL_BAD_REQUEST, 1);
    cbl_blob_writer_cancel(fw);
    size_t n = 5;
    char buf[4];
    CHECK_ST(cbl_blob_reader_read(fr, buf, sizeof buf, &n, &E), CBL_BAD_REQUEST);
    CHECK(n == 0);
    CHECK_ST(cbl_blob_reader_seek(fr, 0, &E), CBL_BAD_REQUEST);
    cbl_blob_reader_close(fr);
    cbl_blob_reader_close(NULL);
    CHECK(junk[0] == 0 && junk[4] == 0);
    /* a collection handle is not a reader, a reader not a writer */
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("badh", dir, sizeof dir, &c);
    CHECK_ST(cbl_blob_reader_seek((cbl_blob_reader*)(void*)c, 0, &E), CBL_BAD_REQUEST);
    cbl_blob_writer* out = (cbl_blob_writer*)POISON_PTR;
    CHECK_ST(cbl_blob_writer_create(NULL, &out, &E), CBL_BAD_REQUEST);
    CHECK(out == NULL);
    CHECK_ST(cbl_blob_writer_create(db, NULL, &E), CBL_BAD_REQUEST);
    /* readers outlive their database handle */
    char d[64];
    CHECK_ST(blob_put(db, "kept open", 9, d, sizeof d), CBL_OK);
    CHECK_ST(set_att(c, "r", NULL, "a", NULL, d, NULL, 0), CBL_OK);
    cbl_blob_reader* r = NULL;
    CHECK_ST(cbl_doc_open_attachment(c, "r", "a", &r, &E), CBL_OK);
    RELEASE_AND_CLOSE(c, db);
    char got[16] = {0};
    CHECK_ST(cbl_blob_reader_read(r, got, sizeof got, &n, &E), CBL_OK);
    CHECK(n == 9 && memcmp(got, "kept open", 9) == 0);
    cbl_blob_reader_close(r);
    CHECK_ST(cbl_db_blob_put(db, "x", 1, NULL, &E), CBL_BAD_REQUEST);    /* closed database */
}

/* ---- main ------------------------------------------------------------------------------- */

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "--crash-child") == 0) return crash_child(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--txn-crash-child") == 0) return txn_crash_child(argv[2]);
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(g_root, sizeof g_root, "/tmp/cblite-att-test-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 2; }
    int64_t instances = cbl_instance_count();

    test_blob_store();
    test_set_and_read();
    test_couchdb_digests();
    test_missing_content();
    test_inherit_and_remove();
    test_streaming();
    test_dedup_and_compaction();
    test_crash_safety();
    test_group_commit();
    test_hostile_names();
    test_bad_handles();

    return finish_tests(instances);   /* nothing leaked: writers and readers released */
}
