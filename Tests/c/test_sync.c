/*
 * test_sync.c — the replication surface of libcblite's C ABI (include/cblite.h,
 * "Replication surface", cbl_local_list and the replication options of
 * cbl_collection_changes): CouchDB's JSON shapes in and out, with revision IDs fixed by
 * cbl_collection_docs_put_existing so that every result is compared as an exact string; per-document
 * errors inside results; bad input of every kind (NULL, invalid JSON, wrong types,
 * closed, released, foreign and deleted handles, hostile strings); named filters with
 * parameters, replacement and removal; cbl_collection_changes_wait woken by another thread and by
 * another process.
 * Prints "N passed, N failed" and exits nonzero on any failure.
 *
 *   cc -std=c99 -Wall -Wextra -Werror -g -Iinclude -o test_sync Tests/c/test_sync.c \
 *      -Lbuild/lib -lcblite -lpthread
 */
#define _GNU_SOURCE          /* gettid */

#include "cblite.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"   /* CHECK, CHECK_ST, CHECK_OUT, E, g_root, g_pass/g_fail */

/* ---- Fixed revision IDs: the data set of Tests/Fixtures/couchdb-3.5 ------------------ */

#define D_C1  "d3be72beae043af6e69cf3f780dc4ced"
#define D_CA  "a43763cb6510199739a3d88e72322572"
#define D_CB  "0123456789abcdef0123456789abcdef"
#define R_C1  "1-" D_C1
#define R_CA  "2-" D_CA                     /* the winner: the higher rev-2 ID */
#define R_CB  "2-" D_CB
#define D_DEL1 "d83483c8194b6aaeb0b613fddae1f48d"
#define D_DEL2 "e84cc1ee936866c8ebfe1abdd0ee390a"
#define R_DEL "2-" D_DEL2
#define D_ATT1 "1e1b6dfb2145bc326409e05b4222068f"
#define R_ATT1 "1-" D_ATT1
#define R_P1  "1-0c822adc66f98458333e775f90a93a6b"
#define R_MISS "9-00000000000000000000000000000009"
#define HELLO_DIGEST "sha1-qvTGHdzF6KLavt4PO0gs2a6pQ00="   /* SHA-1 of "hello" */
#define HELLO_MD5 "md5-XUFAKrxLKna5cZ2REBfFkg=="              /* its MD5: CouchDB's digest, kept beside */

/* Six revisions in one call: the conflicted document (rev 1, then two rev-2 leaves),
 * a tombstone with its history, a document with an inline attachment, a plain one.
 * Sequences 1..6 in this order. */
static const char* SEED =
    "{\"new_edits\":false,\"docs\":["
    "{\"_id\":\"conflicted\",\"_rev\":\"" R_C1 "\",\"type\":\"conflicted\","
    "\"_revisions\":{\"start\":1,\"ids\":[\"" D_C1 "\"]}},"
    "{\"_id\":\"conflicted\",\"_rev\":\"" R_CA "\",\"type\":\"conflicted\",\"value\":\"edited here\","
    "\"_revisions\":{\"start\":2,\"ids\":[\"" D_CA "\",\"" D_C1 "\"]}},"
    "{\"_id\":\"conflicted\",\"_rev\":\"" R_CB "\",\"value\":\"edited on another peer\",\"type\":\"conflicted\","
    "\"_revisions\":{\"start\":2,\"ids\":[\"" D_CB "\",\"" D_C1 "\"]}},"
    "{\"_id\":\"deleted\",\"_rev\":\"" R_DEL "\",\"_deleted\":true,"
    "\"_revisions\":{\"start\":2,\"ids\":[\"" D_DEL2 "\",\"" D_DEL1 "\"]}},"
    "{\"_id\":\"att-text\",\"_rev\":\"" R_ATT1 "\",\"type\":\"attachment\","
    "\"_attachments\":{\"readme.txt\":{\"content_type\":\"text/plain\",\"data\":\"aGVsbG8=\","
    "\"digest\":\"md5-XUFAKrxLKna5cZ2REBfFkg==\"}}},"
    "{\"_id\":\"plain-01\",\"_rev\":\"" R_P1 "\",\"type\":\"plain\",\"n\":1,\"title\":\"Plain document 1\"}"
    "]}";

static const char* SEED_RESULT =
    "[{\"ok\":true,\"id\":\"conflicted\",\"rev\":\"" R_C1 "\"},"
    "{\"ok\":true,\"id\":\"conflicted\",\"rev\":\"" R_CA "\"},"
    "{\"ok\":true,\"id\":\"conflicted\",\"rev\":\"" R_CB "\"},"
    "{\"ok\":true,\"id\":\"deleted\",\"rev\":\"" R_DEL "\"},"
    "{\"ok\":true,\"id\":\"att-text\",\"rev\":\"" R_ATT1 "\"},"
    "{\"ok\":true,\"id\":\"plain-01\",\"rev\":\"" R_P1 "\"}]";

/* The two leaves as open_revs renders them with {"revs":true}. */
#define OK_CA_REVS "{\"ok\":{\"_id\":\"conflicted\",\"_rev\":\"" R_CA "\",\"_revisions\":{\"ids\":[\"" D_CA "\",\"" D_C1 "\"],\"start\":2},\"type\":\"conflicted\",\"value\":\"edited here\"}}"
#define OK_CB_REVS "{\"ok\":{\"_id\":\"conflicted\",\"_rev\":\"" R_CB "\",\"_revisions\":{\"ids\":[\"" D_CB "\",\"" D_C1 "\"],\"start\":2},\"type\":\"conflicted\",\"value\":\"edited on another peer\"}}"
#define OK_CA "{\"ok\":{\"_id\":\"conflicted\",\"_rev\":\"" R_CA "\",\"type\":\"conflicted\",\"value\":\"edited here\"}}"
#define OK_CB "{\"ok\":{\"_id\":\"conflicted\",\"_rev\":\"" R_CB "\",\"type\":\"conflicted\",\"value\":\"edited on another peer\"}}"
#define OK_DEL_REVS "{\"ok\":{\"_id\":\"deleted\",\"_rev\":\"" R_DEL "\",\"_deleted\":true,\"_revisions\":{\"ids\":[\"" D_DEL2 "\",\"" D_DEL1 "\"],\"start\":2}}}"

/* ---- Helpers ------------------------------------------------------------------------ */

/* Equal strings; on a mismatch both are printed (the check itself is counted by the caller). */
static int json_eq(const char* got, const char* want) {
    if (got && want && strcmp(got, want) == 0) return 1;
    fprintf(stderr, "  got:  %s\n  want: %s\n", got ? got : "(null)", want ? want : "(null)");
    return 0;
}
static int has(const char* got, const char* part) {
    if (got && strstr(got, part)) return 1;
    fprintf(stderr, "  got:  %s\n  lacks: %s\n", got ? got : "(null)", part);
    return 0;
}

/* A call returning JSON through &J: CBL_OK and exactly `want`. */
#define CHECK_JSON(expr, want) CHECK_OUT(expr, CBL_OK, json_eq(J, (want)))
/* A call that fails with `status`: *out NULL, E filled. */
#define CHECK_FAILS(expr, status) CHECK_OUT(expr, status, 1)

static cbl_db* setup(const char* sub, char* dir, size_t n, cbl_collection** c) {
    snprintf(dir, n, "%s/%s", g_root, sub);
    mkdir(dir, 0700);
    cbl_db* db = open_db("sync", dir);
    *c = default_coll(db);
    return db;
}

#define RELEASE_AND_CLOSE(c, db) do { cbl_collection_release(c); CHECK_ST(cbl_db_close(db, &E), CBL_OK); } while (0)

static void seed(cbl_collection* c) {
    CHECK_JSON(cbl_collection_docs_put_existing(c, SEED, &J, &E), SEED_RESULT);
}

static uint64_t last_seq(cbl_collection* c) {
    uint64_t s = 0;
    CHECK_ST(cbl_collection_last_sequence(c, &s, &E), CBL_OK);
    return s;
}

/* The current revision ID of a document ("" when absent) — through cbl_doc_get. */
static void current_rev(cbl_collection* c, const char* id, char* out, size_t n) {
    char* json = NULL;
    out[0] = '\0';
    if (cbl_doc_get(c, id, CBL_GET_DELETED, &json, NULL) != CBL_OK) return;
    const char* p = strstr(json, "\"_rev\":\"");
    if (p) {
        p += 8;
        size_t i = 0;
        while (p[i] && p[i] != '"' && i + 1 < n) { out[i] = p[i]; i++; }
        out[i] = '\0';
    }
    cbl_free(json);
}

/* ---- Fidelity with CouchDB: the same winner, every digit (issue 34) ------------------ */

static void test_couchdb_fidelity(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("fidelity", dir, sizeof dir, &c);
    /* CouchDB's 32-hex leaf against our 40-hex one of the same generation: CouchDB picks
     * its own (the 16 bytes 0x4D.. against the text '7'..), so we must too. */
    CHECK_JSON(cbl_collection_docs_put_existing(c,
        "{\"new_edits\":false,\"docs\":["
        "{\"_id\":\"m\",\"_rev\":\"3-748efd35aa5e1b2c3d4e5f60718293a4b5c6d7e8\",\"side\":\"ours\","
        "\"_revisions\":{\"start\":3,\"ids\":[\"748efd35aa5e1b2c3d4e5f60718293a4b5c6d7e8\",\"b\",\"a\"]}},"
        "{\"_id\":\"m\",\"_rev\":\"3-4dc79c95e1a2b3c4d5e6f708192a3b4c\",\"side\":\"couchdb\","
        "\"_revisions\":{\"start\":3,\"ids\":[\"4dc79c95e1a2b3c4d5e6f708192a3b4c\",\"b\",\"a\"]}}]}", &J, &E),
        "[{\"ok\":true,\"id\":\"m\",\"rev\":\"3-748efd35aa5e1b2c3d4e5f60718293a4b5c6d7e8\"},"
        "{\"ok\":true,\"id\":\"m\",\"rev\":\"3-4dc79c95e1a2b3c4d5e6f708192a3b4c\"}]");
    char rev[160];
    current_rev(c, "m", rev, sizeof rev);
    CHECK(strcmp(rev, "3-4dc79c95e1a2b3c4d5e6f708192a3b4c") == 0);
    CHECK_JSON(cbl_doc_conflicts(c, "m", &J, &E),
               "[\"3-4dc79c95e1a2b3c4d5e6f708192a3b4c\",\"3-748efd35aa5e1b2c3d4e5f60718293a4b5c6d7e8\"]");

    /* Integers beyond 64 bits keep every digit, on a new revision and a replicated one. */
    char* rid = NULL;
    CHECK_ST(cbl_doc_put(c, "big", "{\"v\":18446744073709551617,\"w\":[-12345678901234567890123]}", NULL, 0, NULL,
                         &rid, &E), CBL_OK);
    cbl_free(rid);
    CHECK_OUT(cbl_doc_get(c, "big", 0, &J, &E), CBL_OK,
              has(J, "\"v\":18446744073709551617") && has(J, "\"w\":[-12345678901234567890123]"));
    CHECK_JSON(cbl_collection_docs_put_existing(c,
        "[{\"_id\":\"big2\",\"_rev\":\"1-0123456789abcdef0123456789abcdef\",\"v\":12345678901234567890123}]", &J, &E),
        "[{\"ok\":true,\"id\":\"big2\",\"rev\":\"1-0123456789abcdef0123456789abcdef\"}]");
    CHECK_JSON(cbl_doc_get(c, "big2", 0, &J, &E),
               "{\"_id\":\"big2\",\"_rev\":\"1-0123456789abcdef0123456789abcdef\",\"v\":12345678901234567890123}");
    RELEASE_AND_CLOSE(c, db);
}

/* ---- cbl_collection_docs_put_existing ------------------------------------------------------------ */

static int reject_evil(void* ctx, const char* new_json, const char* current_json, char* message,
                       size_t size) {
    (void)ctx; (void)current_json;
    if (strstr(new_json, "\"evil\":true")) { snprintf(message, size, "no evil here"); return 0; }
    return 1;
}

static void test_put_existing(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("put_existing", dir, sizeof dir, &c);
    seed(c);
    CHECK(last_seq(c) == 6);

    /* the winner of two rev-2 leaves: the higher revision ID string, as CouchDB */
    char rev[160];
    current_rev(c, "conflicted", rev, sizeof rev);
    CHECK(strcmp(rev, R_CA) == 0);
    CHECK_JSON(cbl_doc_conflicts(c, "conflicted", &J, &E), "[\"" R_CA "\",\"" R_CB "\"]");
    CHECK_JSON(cbl_doc_get(c, "deleted", CBL_GET_DELETED, &J, &E),
               "{\"_id\":\"deleted\",\"_rev\":\"" R_DEL "\",\"_deleted\":true}");
    CHECK_FAILS(cbl_doc_get(c, "deleted", 0, &J, &E), CBL_NOT_FOUND);
    CHECK_JSON(cbl_doc_history(c, "deleted", NULL, &J, &E), "[\"" R_DEL "\",\"1-" D_DEL1 "\"]");
    void* bytes = NULL; size_t n = 0;
    CHECK_ST(cbl_doc_get_attachment(c, "att-text", "readme.txt", &bytes, &n, &E), CBL_OK);
    CHECK(n == 5 && bytes && memcmp(bytes, "hello", 5) == 0);
    cbl_free(bytes);
    /* a peer's MD5 digest is replaced by ours; the content's MD5 is kept beside it */
    CHECK_OUT(cbl_doc_get(c, "att-text", 0, &J, &E), CBL_OK,
              has(J, "\"digest\":\"" HELLO_DIGEST "\"") && has(J, "\"md5\":\"" HELLO_MD5 "\""));

    /* a revision already held: success, nothing changes (no new sequence) */
    CHECK_JSON(cbl_collection_docs_put_existing(c,
        "[{\"_id\":\"conflicted\",\"_rev\":\"" R_CB "\",\"value\":\"different body, same rev\"}]", &J, &E),
        "[{\"ok\":true,\"id\":\"conflicted\",\"rev\":\"" R_CB "\"}]");
    CHECK(last_seq(c) == 6);
    CHECK_OUT(cbl_doc_get_revision(c, "conflicted", R_CB, 0, &J, &E), CBL_OK,
              has(J, "edited on another peer"));

    /* a history grafted onto the newest revision held; ancestors without bodies */
    CHECK_JSON(cbl_collection_docs_put_existing(c,
        "[{\"_id\":\"plain-01\",\"_rev\":\"4-cccc\",\"n\":4,"
        "\"_revisions\":{\"start\":4,\"ids\":[\"cccc\",\"bbbb\",\"aaaa\",\"0c822adc66f98458333e775f90a93a6b\"]}},"
        "{\"_id\":\"fresh\",\"_rev\":\"3-ffff\",\"_revisions\":{\"start\":3,\"ids\":[\"ffff\",\"eeee\"]}}]", &J, &E),
        "[{\"ok\":true,\"id\":\"plain-01\",\"rev\":\"4-cccc\"},{\"ok\":true,\"id\":\"fresh\",\"rev\":\"3-ffff\"}]");
    CHECK_JSON(cbl_doc_history(c, "plain-01", NULL, &J, &E),
               "[\"4-cccc\",\"3-bbbb\",\"2-aaaa\",\"" R_P1 "\"]");
    CHECK_FAILS(cbl_doc_get_revision(c, "plain-01", "3-bbbb", 0, &J, &E), CBL_NOT_FOUND);
    CHECK_JSON(cbl_doc_history(c, "fresh", NULL, &J, &E), "[\"3-ffff\",\"2-eeee\"]");
    /* no common ancestor: a new root, hence a conflict; the higher generation wins */
    CHECK_JSON(cbl_collection_docs_put_existing(c,
        "[{\"_id\":\"fresh\",\"_rev\":\"2-dddd\",\"_revisions\":{\"start\":2,\"ids\":[\"dddd\",\"9999\"]}}]", &J, &E),
        "[{\"ok\":true,\"id\":\"fresh\",\"rev\":\"2-dddd\"}]");
    CHECK_JSON(cbl_doc_conflicts(c, "fresh", &J, &E), "[\"3-ffff\",\"2-dddd\"]");
    /* without _revisions: the revision alone (a root) */
    CHECK_JSON(cbl_collection_docs_put_existing(c, "[{\"_id\":\"solo\",\"_rev\":\"7-abc\",\"x\":1}]", &J, &E),
               "[{\"ok\":true,\"id\":\"solo\",\"rev\":\"7-abc\"}]");
    CHECK_JSON(cbl_doc_get(c, "solo", 0, &J, &E), "{\"_id\":\"solo\",\"_rev\":\"7-abc\",\"x\":1}");
    /* read-only metadata a peer's read carries is ignored, as CouchDB */
    CHECK_JSON(cbl_collection_docs_put_existing(c,
        "[{\"_id\":\"meta\",\"_rev\":\"1-m\",\"_conflicts\":[\"1-x\"],\"_revs_info\":[],\"_local_seq\":3,"
        "\"_deleted_conflicts\":[],\"k\":true}]", &J, &E),
        "[{\"ok\":true,\"id\":\"meta\",\"rev\":\"1-m\"}]");
    CHECK_JSON(cbl_doc_get(c, "meta", 0, &J, &E), "{\"_id\":\"meta\",\"_rev\":\"1-m\",\"k\":true}");

    /* a stub of content held here: resolved against the tree (revpos, our digest) */
    CHECK_JSON(cbl_collection_docs_put_existing(c,
        "[{\"_id\":\"att-text\",\"_rev\":\"2-bbbb\",\"_revisions\":{\"start\":2,\"ids\":[\"bbbb\",\"" D_ATT1 "\"]},"
        "\"type\":\"attachment\",\"_attachments\":{"
        "\"readme.txt\":{\"stub\":true,\"revpos\":1,\"digest\":\"md5-XUFAKrxLKna5cZ2REBfFkg==\"},"
        "\"notes.txt\":{\"content_type\":\"text/plain\",\"data\":\"bm90ZXM=\"}}}]", &J, &E),
        "[{\"ok\":true,\"id\":\"att-text\",\"rev\":\"2-bbbb\"}]");
    bytes = NULL;
    CHECK_ST(cbl_doc_get_attachment(c, "att-text", "readme.txt", &bytes, &n, &E), CBL_OK);
    CHECK(n == 5 && bytes && memcmp(bytes, "hello", 5) == 0);
    cbl_free(bytes);
    bytes = NULL;
    CHECK_ST(cbl_doc_get_attachment(c, "att-text", "notes.txt", &bytes, &n, &E), CBL_OK);
    CHECK(n == 5 && bytes && memcmp(bytes, "notes", 5) == 0);
    cbl_free(bytes);

    /* per-document errors, in order, beside successes; the call itself is CBL_OK */
    uint64_t before = last_seq(c);
    CHECK_JSON(cbl_collection_docs_put_existing(c,
        "[{\"_id\":\"no-rev\"},"
        "{\"_rev\":\"1-x\"},"
        "{\"_id\":5,\"_rev\":\"1-x\"},"
        "{\"_id\":\"_design\",\"_rev\":\"1-x\"},"
        "{\"_id\":\"nul\\u0000id\",\"_rev\":\"1-x\"},"
        "{\"_id\":\"bad-rev\",\"_rev\":\"x-y\"},"
        "{\"_id\":\"gap\",\"_rev\":\"2-b\",\"_revisions\":{\"start\":1,\"ids\":[\"b\",\"a\"]}},"
        "{\"_id\":\"other\",\"_rev\":\"2-b\",\"_revisions\":{\"start\":2,\"ids\":[\"c\"]}},"
        "{\"_id\":\"shape\",\"_rev\":\"2-b\",\"_revisions\":\"x\"},"
        "{\"_id\":\"stub\",\"_rev\":\"1-s\",\"_attachments\":{\"x\":{\"stub\":true,\"digest\":\"md5-AAAA\"}}},"
        "{\"_id\":\"b64\",\"_rev\":\"1-a\",\"_attachments\":{\"n\":{\"data\":\"!!!\"}}},"
        "{\"_id\":\"reserved\",\"_rev\":\"1-a\",\"_foo\":1},"
        "{\"_id\":\"delflag\",\"_rev\":\"1-a\",\"_deleted\":\"yes\"},"
        "{\"_id\":\"good\",\"_rev\":\"1-600d\",\"fine\":true}]", &J, &E),
        "[{\"id\":\"no-rev\",\"error\":\"bad_request\",\"reason\":\"document \\\"no-rev\\\" has no valid \\\"_rev\\\" (new_edits=false needs one)\"},"
        "{\"id\":\"\",\"error\":\"bad_request\",\"reason\":\"document has no \\\"_id\\\" string\"},"
        "{\"id\":\"\",\"error\":\"bad_request\",\"reason\":\"document has no \\\"_id\\\" string\"},"
        "{\"id\":\"_design\",\"error\":\"bad_request\",\"reason\":\"document ID must not start with '_' (except \\\"_design/NAME\\\")\"},"
        "{\"id\":\"nul\\u0000id\",\"error\":\"bad_request\",\"reason\":\"document ID must not contain control characters\"},"
        "{\"id\":\"bad-rev\",\"error\":\"bad_request\",\"reason\":\"document \\\"bad-rev\\\" has no valid \\\"_rev\\\" (new_edits=false needs one)\"},"
        "{\"id\":\"gap\",\"error\":\"bad_request\",\"reason\":\"\\\"_revisions\\\" has a start below its number of ids, or no ids\"},"
        "{\"id\":\"other\",\"error\":\"bad_request\",\"reason\":\"\\\"_revisions\\\" does not start with \\\"_rev\\\" (2-b)\"},"
        "{\"id\":\"shape\",\"error\":\"bad_request\",\"reason\":\"\\\"_revisions\\\" must be {\\\"start\\\": number, \\\"ids\\\": [strings]}\"},"
        "{\"id\":\"stub\",\"rev\":\"1-s\",\"error\":\"missing_stub\",\"reason\":\"Invalid attachment stub in stub for x\"},"
        "{\"id\":\"b64\",\"error\":\"bad_request\",\"reason\":\"attachment \\\"n\\\": \\\"data\\\" is not valid base64\"},"
        "{\"id\":\"reserved\",\"rev\":\"1-a\",\"error\":\"bad_request\",\"reason\":\"property \\\"_foo\\\" is reserved: top-level names starting with '_' are metadata\"},"
        "{\"id\":\"delflag\",\"rev\":\"1-a\",\"error\":\"bad_request\",\"reason\":\"\\\"_deleted\\\" must be a boolean\"},"
        "{\"ok\":true,\"id\":\"good\",\"rev\":\"1-600d\"}]");
    CHECK(last_seq(c) == before + 1);                    /* only "good" was written */
    CHECK_FAILS(cbl_doc_get(c, "stub", 0, &J, &E), CBL_NOT_FOUND);  /* a failed doc leaves no trace */
    CHECK_FAILS(cbl_doc_get(c, "reserved", 0, &J, &E), CBL_NOT_FOUND);

    /* a validator's refusal is "forbidden" with its message, for that document only */
    CHECK_ST(cbl_collection_set_validator(c, "no-evil", reject_evil, NULL, &E), CBL_OK);
    CHECK_JSON(cbl_collection_docs_put_existing(c,
        "[{\"_id\":\"evil\",\"_rev\":\"1-e\",\"evil\":true},{\"_id\":\"kind\",\"_rev\":\"1-k\",\"evil\":false}]", &J, &E),
        "[{\"id\":\"evil\",\"rev\":\"1-e\",\"error\":\"forbidden\",\"reason\":\"no evil here\"},"
        "{\"ok\":true,\"id\":\"kind\",\"rev\":\"1-k\"}]");
    CHECK_ST(cbl_collection_set_validator(c, "no-evil", NULL, NULL, &E), CBL_OK);

    /* hostile strings survive as data and are escaped in the result */
    CHECK_JSON(cbl_collection_docs_put_existing(c,
        "[{\"_id\":\"q\\\"u\\\\o\\u2028\xc3\xa9\xf0\x9f\x98\x80</script>\",\"_rev\":\"1-h\",\"v\":\"\\u0000\"}]", &J, &E),
        "[{\"ok\":true,\"id\":\"q\\\"u\\\\o\xe2\x80\xa8\xc3\xa9\xf0\x9f\x98\x80</script>\",\"rev\":\"1-h\"}]");

    /* empty batch; the {"docs": [...]} form ignores "new_edits" */
    CHECK_JSON(cbl_collection_docs_put_existing(c, "[]", &J, &E), "[]");
    CHECK_JSON(cbl_collection_docs_put_existing(c, "{\"docs\":[]}", &J, &E), "[]");

    /* bad requests: nothing done, *out NULL */
    before = last_seq(c);
    CHECK_FAILS(cbl_collection_docs_put_existing(c, NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_put_existing(c, "", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_put_existing(c, "nope", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_put_existing(c, "[{\"_id\":\"a\",\"_rev\":\"1-a\"}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_put_existing(c, "{}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_put_existing(c, "{\"docs\":{}}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_put_existing(c, "\"docs\"", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_put_existing(c, "42", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_put_existing(c, "[{\"_id\":\"ok\",\"_rev\":\"1-a\"},1]", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_put_existing(c, "[{\"_id\":\"dup\",\"_rev\":\"1-a\",\"_rev\":\"1-b\"}]", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_put_existing(c, "[{\"_id\":\"a\xff\",\"_rev\":\"1-a\"}]", &J, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_collection_docs_put_existing(c, "[]", NULL, &E), CBL_BAD_REQUEST);   /* out_json is required */
    CHECK(last_seq(c) == before);
    CHECK_FAILS(cbl_doc_get(c, "ok", 0, &J, &E), CBL_NOT_FOUND);           /* a 400 batch wrote nothing */
    /* deep nesting is refused, not a stack overflow */
    size_t deep = 100000;
    char* nested = malloc(2 * deep + 1);
    memset(nested, '[', deep);
    memset(nested + deep, ']', deep);
    nested[2 * deep] = '\0';
    CHECK_FAILS(cbl_collection_docs_put_existing(c, nested, &J, &E), CBL_BAD_REQUEST);
    free(nested);
    /* err may be NULL */
    char* out = POISON_PTR;
    CHECK(cbl_collection_docs_put_existing(c, "nope", &out, NULL) == CBL_BAD_REQUEST && out == NULL);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- cbl_collection_revs_diff -------------------------------------------------------------------- */

static void test_revs_diff(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("revs_diff", dir, sizeof dir, &c);
    seed(c);
    /* CouchDB's answer to the same request (client-shapes.jsonl seq 8) */
    CHECK_JSON(cbl_collection_revs_diff(c,
        "{\"plain-01\":[\"" R_P1 "\",\"2-00000000000000000000000000000001\"],"
        "\"conflicted\":[\"" R_CA "\",\"" R_CB "\",\"3-00000000000000000000000000000002\"],"
        "\"brand-new-doc\":[\"1-00000000000000000000000000000003\"]}", &J, &E),
        "{\"plain-01\":{\"missing\":[\"2-00000000000000000000000000000001\"],\"possible_ancestors\":[\"" R_P1 "\"]},"
        "\"conflicted\":{\"missing\":[\"3-00000000000000000000000000000002\"],\"possible_ancestors\":[\"" R_CA "\",\"" R_CB "\"]},"
        "\"brand-new-doc\":{\"missing\":[\"1-00000000000000000000000000000003\"]}}");
    /* all known (tombstones and inner revisions count): {} */
    CHECK_JSON(cbl_collection_revs_diff(c, "{\"deleted\":[\"" R_DEL "\",\"1-" D_DEL1 "\"],\"conflicted\":[\"" R_C1 "\"]}", &J, &E), "{}");
    CHECK_JSON(cbl_collection_revs_diff(c, "{}", &J, &E), "{}");
    /* a lower-generation missing revision has no possible ancestors; duplicates once;
     * a malformed revision ID is reported missing */
    CHECK_JSON(cbl_collection_revs_diff(c,
        "{\"conflicted\":[\"1-ffff\",\"1-ffff\"],\"plain-01\":[\"garbage\"],\"deleted\":[]}", &J, &E),
        "{\"conflicted\":{\"missing\":[\"1-ffff\"]},\"plain-01\":{\"missing\":[\"garbage\"]}}");
    /* hostile IDs are escaped in the result */
    CHECK_JSON(cbl_collection_revs_diff(c, "{\"a\\\"b\\\\c\\u2028\":[\"1-a\"]}", &J, &E),
               "{\"a\\\"b\\\\c\xe2\x80\xa8\":{\"missing\":[\"1-a\"]}}");
    /* document IDs this collection cannot hold (a CouchDB design document, control
     * characters, empty): every revision missing, so that the peer fails that one
     * document and not the whole batch (engine commit 11a37bf) */
    CHECK_JSON(cbl_collection_revs_diff(c, "{\"_design/x\":[\"1-a\",\"2-b\"],\"nul\\u0000\":[\"1-a\"],\"\":[\"1-a\"],"
                                "\"plain-01\":[\"" R_P1 "\"]}", &J, &E),
               "{\"_design/x\":{\"missing\":[\"1-a\",\"2-b\"]},\"nul\\u0000\":{\"missing\":[\"1-a\"]},\"\":{\"missing\":[\"1-a\"]}}");
    /* malformed requests: 400 for the whole call */
    CHECK_FAILS(cbl_collection_revs_diff(c, NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_revs_diff(c, "", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_revs_diff(c, "{", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_revs_diff(c, "[]", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_revs_diff(c, "\"x\"", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_revs_diff(c, "{\"a\":\"1-a\"}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_revs_diff(c, "{\"a\":[1]}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_revs_diff(c, "{\"a\":[\"1-a\",null]}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_revs_diff(c, "{\"\xff\":[\"1-a\"]}", &J, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_collection_revs_diff(c, "{}", NULL, &E), CBL_BAD_REQUEST);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- cbl_doc_open_revs ---------------------------------------------------------------- */

static void test_open_revs(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("open_revs", dir, sizeof dir, &c);
    seed(c);
    /* every leaf: NULL, "all" and null alike, in CouchDB's order (client-shapes seq 13:
     * siblings ascending, 2-0123… before 2-a437…) */
    const char* all = "[" OK_CB_REVS "," OK_CA_REVS "]";
    CHECK_JSON(cbl_doc_open_revs(c, "conflicted", NULL, "{\"revs\":true}", &J, &E), all);
    CHECK_JSON(cbl_doc_open_revs(c, "conflicted", "\"all\"", "{\"revs\":true}", &J, &E), all);
    CHECK_JSON(cbl_doc_open_revs(c, "conflicted", "null", "{\"revs\":true}", &J, &E), all);
    CHECK_JSON(cbl_doc_open_revs(c, "conflicted", NULL, NULL, &J, &E), "[" OK_CB "," OK_CA "]");
    CHECK_JSON(cbl_doc_open_revs(c, "conflicted", NULL, "{}", &J, &E), "[" OK_CB "," OK_CA "]");
    /* given revisions, in order: found or missing (client-shapes seq 14), inner ones too */
    CHECK_JSON(cbl_doc_open_revs(c, "conflicted", "[\"" R_CA "\",\"" R_MISS "\"]", "{\"revs\":true,\"latest\":true}", &J, &E),
               "[" OK_CA_REVS ",{\"missing\":\"" R_MISS "\"}]");
    CHECK_JSON(cbl_doc_open_revs(c, "conflicted", "[\"" R_C1 "\",\"" R_CB "\",\"garbage\"]", NULL, &J, &E),
               "[{\"ok\":{\"_id\":\"conflicted\",\"_rev\":\"" R_C1 "\",\"type\":\"conflicted\"}}," OK_CB ",{\"missing\":\"garbage\"}]");
    CHECK_JSON(cbl_doc_open_revs(c, "conflicted", "[]", NULL, &J, &E), "[]");
    /* latest: an inner revision stands for the leaves descending from it, each once */
    CHECK_JSON(cbl_doc_open_revs(c, "conflicted", "[\"" R_C1 "\",\"" R_CB "\"]", "{\"latest\":true}", &J, &E),
               "[" OK_CA "," OK_CB "]");
    /* the metadata options (client-shapes seq 38) */
    CHECK_JSON(cbl_doc_open_revs(c, "conflicted", "[\"" R_CA "\"]",
        "{\"revs_info\":true,\"conflicts\":true,\"deleted_conflicts\":true,\"local_seq\":true}", &J, &E),
        "[{\"ok\":{\"_id\":\"conflicted\",\"_rev\":\"" R_CA "\",\"_local_seq\":3,"
        "\"_revs_info\":[{\"rev\":\"" R_CA "\",\"status\":\"available\"},{\"rev\":\"" R_C1 "\",\"status\":\"available\"}],"
        "\"_conflicts\":[\"" R_CB "\"],\"type\":\"conflicted\",\"value\":\"edited here\"}}]");
    /* a tombstone (client-shapes seq 40) */
    CHECK_JSON(cbl_doc_open_revs(c, "deleted", NULL, "{\"revs\":true}", &J, &E), "[" OK_DEL_REVS "]");
    /* an ancestor added without a body is missing; revs_info says so */
    CHECK_JSON(cbl_doc_open_revs(c, "deleted", "[\"1-" D_DEL1 "\"]", NULL, &J, &E), "[{\"missing\":\"1-" D_DEL1 "\"}]");
    CHECK_JSON(cbl_doc_open_revs(c, "deleted", "[\"" R_DEL "\"]", "{\"revs_info\":true}", &J, &E),
               "[{\"ok\":{\"_id\":\"deleted\",\"_rev\":\"" R_DEL "\",\"_deleted\":true,\"_revs_info\":["
               "{\"rev\":\"" R_DEL "\",\"status\":\"deleted\"},{\"rev\":\"1-" D_DEL1 "\",\"status\":\"missing\"}]}}]");
    /* a tombstone leaf beside a live one: deleted_conflicts */
    CHECK_JSON(cbl_collection_docs_put_existing(c,
        "[{\"_id\":\"conflicted\",\"_rev\":\"3-dead\",\"_deleted\":true,\"_revisions\":{\"start\":3,\"ids\":[\"dead\",\"" D_CB "\"]}}]", &J, &E),
        "[{\"ok\":true,\"id\":\"conflicted\",\"rev\":\"3-dead\"}]");
    CHECK_JSON(cbl_doc_open_revs(c, "conflicted", "[\"" R_CA "\"]", "{\"conflicts\":true,\"deleted_conflicts\":true}", &J, &E),
               "[{\"ok\":{\"_id\":\"conflicted\",\"_rev\":\"" R_CA "\",\"_deleted_conflicts\":[\"3-dead\"],"
               "\"type\":\"conflicted\",\"value\":\"edited here\"}}]");
    CHECK_JSON(cbl_doc_open_revs(c, "conflicted", NULL, NULL, &J, &E),
               "[{\"ok\":{\"_id\":\"conflicted\",\"_rev\":\"3-dead\",\"_deleted\":true}}," OK_CA "]");
    /* attachments: inline data, or stubs for what the caller has (atts_since) */
    const char* inline_att =
        "[{\"ok\":{\"_id\":\"att-text\",\"_rev\":\"" R_ATT1 "\",\"_attachments\":{\"readme.txt\":{\"content_type\":\"text/plain\","
        "\"data\":\"aGVsbG8=\",\"digest\":\"" HELLO_DIGEST "\",\"length\":5,\"md5\":\"" HELLO_MD5 "\",\"revpos\":1}},\"type\":\"attachment\"}}]";
    const char* stub_att =
        "[{\"ok\":{\"_id\":\"att-text\",\"_rev\":\"" R_ATT1 "\",\"_attachments\":{\"readme.txt\":{\"content_type\":\"text/plain\","
        "\"digest\":\"" HELLO_DIGEST "\",\"length\":5,\"md5\":\"" HELLO_MD5 "\",\"revpos\":1,\"stub\":true}},\"type\":\"attachment\"}}]";
    CHECK_JSON(cbl_doc_open_revs(c, "att-text", NULL, "{\"attachments\":true}", &J, &E), inline_att);
    CHECK_JSON(cbl_doc_open_revs(c, "att-text", NULL, NULL, &J, &E), stub_att);
    CHECK_JSON(cbl_doc_open_revs(c, "att-text", NULL, "{\"attachments\":false}", &J, &E), stub_att);
    CHECK_JSON(cbl_doc_open_revs(c, "att-text", NULL, "{\"attachments\":true,\"atts_since\":[\"" R_ATT1 "\"]}", &J, &E), stub_att);
    CHECK_JSON(cbl_doc_open_revs(c, "att-text", NULL, "{\"attachments\":true,\"atts_since\":[\"1-unrelated\"]}", &J, &E), inline_att);
    /* rev 2 adds notes.txt: with atts_since rev 1 only the new one travels */
    CHECK_JSON(cbl_collection_docs_put_existing(c,
        "[{\"_id\":\"att-text\",\"_rev\":\"2-bbbb\",\"_revisions\":{\"start\":2,\"ids\":[\"bbbb\",\"" D_ATT1 "\"]},"
        "\"_attachments\":{\"readme.txt\":{\"stub\":true,\"revpos\":1},"
        "\"notes.txt\":{\"content_type\":\"text/plain\",\"data\":\"bm90ZXM=\"}}}]", &J, &E),
        "[{\"ok\":true,\"id\":\"att-text\",\"rev\":\"2-bbbb\"}]");
    CHECK_OUT(cbl_doc_open_revs(c, "att-text", "[\"2-bbbb\"]", "{\"attachments\":true,\"atts_since\":[\"" R_ATT1 "\"]}", &J, &E),
              CBL_OK, has(J, "\"notes.txt\":{\"content_type\":\"text/plain\",\"data\":\"bm90ZXM=\"")
                      && has(J, "\"readme.txt\":{\"content_type\":\"text/plain\",\"digest\":\"" HELLO_DIGEST "\",\"length\":5,\"md5\":\"" HELLO_MD5 "\",\"revpos\":1,\"stub\":true}")
                      && has(J, "\"revpos\":2"));
    /* an unknown document: 404 when all leaves are asked for, "missing" entries otherwise */
    CHECK_FAILS(cbl_doc_open_revs(c, "no-such-doc", NULL, NULL, &J, &E), CBL_NOT_FOUND);
    CHECK_FAILS(cbl_doc_open_revs(c, "no-such-doc", "\"all\"", NULL, &J, &E), CBL_NOT_FOUND);
    CHECK_JSON(cbl_doc_open_revs(c, "no-such-doc", "[\"1-a\",\"2-b\"]", NULL, &J, &E),
               "[{\"missing\":\"1-a\"},{\"missing\":\"2-b\"}]");
    /* hostile revision strings come back escaped */
    CHECK_JSON(cbl_doc_open_revs(c, "plain-01", "[\"zz\\\"\\\\\\u0001\"]", NULL, &J, &E),
               "[{\"missing\":\"zz\\\"\\\\\\u0001\"}]");
    /* bad input */
    CHECK_FAILS(cbl_doc_open_revs(c, NULL, NULL, NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "", NULL, NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "_design", NULL, NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "bad\xff", NULL, NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "ctl\x01", NULL, NULL, &J, &E), CBL_BAD_REQUEST);
    char longid[1100];
    memset(longid, 'i', 1025); longid[1025] = '\0';
    CHECK_FAILS(cbl_doc_open_revs(c, longid, NULL, NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "conflicted", "[", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "conflicted", "5", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "conflicted", "\"some\"", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "conflicted", "[5]", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "conflicted", "{\"revs\":[]}", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "conflicted", NULL, "[]", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "conflicted", NULL, "{", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "conflicted", NULL, "{\"bogus\":true}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "conflicted", NULL, "{\"revs\":1}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "conflicted", NULL, "{\"latest\":\"true\"}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "conflicted", NULL, "{\"atts_since\":\"1-a\"}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_open_revs(c, "conflicted", NULL, "{\"atts_since\":[1]}", &J, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_doc_open_revs(c, "conflicted", NULL, NULL, NULL, &E), CBL_BAD_REQUEST);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- cbl_collection_docs_bulk_get ---------------------------------------------------------------- */

static void test_bulk_get(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("bulk_get", dir, sizeof dir, &c);
    seed(c);
    /* client-shapes seq 9's mix: current revision, each leaf, a tombstone, a missing doc,
     * a missing revision, a bad ID, per-document atts_since */
    CHECK_JSON(cbl_collection_docs_bulk_get(c,
        "{\"docs\":[{\"id\":\"conflicted\"},{\"id\":\"conflicted\",\"rev\":\"" R_CB "\"},{\"id\":\"deleted\"},"
        "{\"id\":\"no-such-doc\"},{\"id\":\"plain-01\",\"rev\":\"" R_MISS "\"},{\"id\":\"_bad\"},"
        "{\"id\":\"att-text\",\"atts_since\":[\"" R_ATT1 "\"]}]}",
        "{\"revs\":true,\"attachments\":true}", &J, &E),
        "{\"results\":["
        "{\"id\":\"conflicted\",\"docs\":[" OK_CA_REVS "]},"
        "{\"id\":\"conflicted\",\"docs\":[" OK_CB_REVS "]},"
        "{\"id\":\"deleted\",\"docs\":[" OK_DEL_REVS "]},"
        "{\"id\":\"no-such-doc\",\"docs\":[{\"error\":{\"id\":\"no-such-doc\",\"rev\":\"undefined\",\"error\":\"not_found\",\"reason\":\"missing\"}}]},"
        "{\"id\":\"plain-01\",\"docs\":[{\"error\":{\"id\":\"plain-01\",\"rev\":\"" R_MISS "\",\"error\":\"not_found\",\"reason\":\"missing\"}}]},"
        "{\"id\":\"_bad\",\"docs\":[{\"error\":{\"id\":\"_bad\",\"rev\":\"undefined\",\"error\":\"bad_request\",\"reason\":\"document ID must not start with '_' (except \\\"_design/NAME\\\")\"}}]},"
        "{\"id\":\"att-text\",\"docs\":[{\"ok\":{\"_id\":\"att-text\",\"_rev\":\"" R_ATT1 "\",\"_revisions\":{\"ids\":[\"" D_ATT1 "\"],\"start\":1},"
        "\"_attachments\":{\"readme.txt\":{\"content_type\":\"text/plain\",\"digest\":\"" HELLO_DIGEST "\",\"length\":5,\"md5\":\"" HELLO_MD5 "\",\"revpos\":1,\"stub\":true}},"
        "\"type\":\"attachment\"}}]}"
        "]}");
    /* latest, without options, empty */
    CHECK_JSON(cbl_collection_docs_bulk_get(c, "{\"docs\":[{\"id\":\"conflicted\",\"rev\":\"" R_C1 "\"}]}", "{\"latest\":true}", &J, &E),
               "{\"results\":[{\"id\":\"conflicted\",\"docs\":[" OK_CA "," OK_CB "]}]}");
    CHECK_JSON(cbl_collection_docs_bulk_get(c, "{\"docs\":[{\"id\":\"plain-01\"}]}", NULL, &J, &E),
               "{\"results\":[{\"id\":\"plain-01\",\"docs\":[{\"ok\":{\"_id\":\"plain-01\",\"_rev\":\"" R_P1 "\","
               "\"n\":1,\"title\":\"Plain document 1\",\"type\":\"plain\"}}]}]}");
    CHECK_JSON(cbl_collection_docs_bulk_get(c, "{\"docs\":[]}", NULL, &J, &E), "{\"results\":[]}");
    /* hostile IDs: escaped */
    CHECK_JSON(cbl_collection_docs_bulk_get(c, "{\"docs\":[{\"id\":\"nul\\u0000\"},{\"id\":\"q\\\"\",\"rev\":\"x\\\\\"}]}", NULL, &J, &E),
        "{\"results\":[{\"id\":\"nul\\u0000\",\"docs\":[{\"error\":{\"id\":\"nul\\u0000\",\"rev\":\"undefined\",\"error\":\"bad_request\","
        "\"reason\":\"document ID must not contain control characters\"}}]},"
        "{\"id\":\"q\\\"\",\"docs\":[{\"error\":{\"id\":\"q\\\"\",\"rev\":\"x\\\\\",\"error\":\"not_found\",\"reason\":\"missing\"}}]}]}");
    /* bad requests */
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, NULL, NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, "", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, "[]", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, "{}", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, "{\"docs\":{}}", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, "{\"docs\":[{\"rev\":\"1-a\"}]}", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, "{\"docs\":[{\"id\":5}]}", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, "{\"docs\":[\"plain-01\"]}", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, "{\"docs\":[{\"id\":\"a\",\"rev\":1}]}", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, "{\"docs\":[{\"id\":\"a\",\"atts_since\":\"1-a\"}]}", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, "{\"docs\":[]}", "{\"revs\":\"yes\"}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, "{\"docs\":[]}", "{\"nope\":true}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_bulk_get(c, "{\"docs\":[]}", "nope", &J, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_collection_docs_bulk_get(c, "{\"docs\":[]}", NULL, NULL, &E), CBL_BAD_REQUEST);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- cbl_collection_docs_save -------------------------------------------------------------------- */

#define REV_V1 "1-6fe86833e77d459ae48447b1b12651c52445b4f6"   /* {"v":1} on no parent */

static void test_docs_save(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("docs_save", dir, sizeof dir, &c);
    /* revision IDs made here are deterministic digests */
    CHECK_JSON(cbl_collection_docs_save(c, "{\"docs\":[{\"_id\":\"a\",\"v\":1},{\"_id\":\"b\",\"v\":1}]}", &J, &E),
               "[{\"ok\":true,\"id\":\"a\",\"rev\":\"" REV_V1 "\"},{\"ok\":true,\"id\":\"b\",\"rev\":\"" REV_V1 "\"}]");
    CHECK(last_seq(c) == 2);
    /* per-document conflicts (client-shapes seq 36) and errors beside successes */
    CHECK_JSON(cbl_collection_docs_save(c,
        "[{\"_id\":\"a\",\"title\":\"no _rev: conflict\"},"
        "{\"_id\":\"a\",\"_rev\":\"1-zz\",\"v\":2},"
        "{\"_id\":\"a\",\"_rev\":\"" REV_V1 "\",\"v\":2},"
        "{\"_id\":\"a\",\"_rev\":\"" REV_V1 "\",\"v\":3},"
        "{\"_id\":\"_x\"},"
        "{\"_id\":\"r\",\"_foo\":1},"
        "{\"_id\":\"b\",\"_rev\":\"" REV_V1 "\",\"_deleted\":true}]", &J, &E),
        "[{\"id\":\"a\",\"error\":\"conflict\",\"reason\":\"Document update conflict.\"},"
        "{\"id\":\"a\",\"error\":\"conflict\",\"reason\":\"Document update conflict.\"},"
        "{\"ok\":true,\"id\":\"a\",\"rev\":\"2-cceba90c66c32c7cc39e66573f911ec05507d5e9\"},"
        "{\"id\":\"a\",\"error\":\"conflict\",\"reason\":\"Document update conflict.\"},"
        "{\"id\":\"_x\",\"error\":\"bad_request\",\"reason\":\"document ID must not start with '_' (except \\\"_design/NAME\\\")\"},"
        "{\"id\":\"r\",\"error\":\"bad_request\",\"reason\":\"property \\\"_foo\\\" is reserved: top-level names starting with '_' are metadata\"},"
        "{\"ok\":true,\"id\":\"b\",\"rev\":\"2-6c1be02df6e1ceb60eecf2187b22070b4840981a\"}]");
    CHECK(last_seq(c) == 4);
    CHECK_FAILS(cbl_doc_get(c, "b", 0, &J, &E), CBL_NOT_FOUND);           /* the tombstone */
    CHECK_OUT(cbl_doc_get(c, "a", 0, &J, &E), CBL_OK, has(J, "\"v\":2"));
    /* a tombstone is replaced by a new revision without "_rev" (as CouchDB) */
    CHECK_OUT(cbl_collection_docs_save(c, "[{\"_id\":\"b\",\"again\":true}]", &J, &E), CBL_OK,
              has(J, "[{\"ok\":true,\"id\":\"b\",\"rev\":\"3-"));
    /* no "_id": a UUID is made */
    CHECK_OUT(cbl_collection_docs_save(c, "[{\"made\":\"an id\"}]", &J, &E), CBL_OK,
              has(J, "[{\"ok\":true,\"id\":\"") && strlen(J) > 60 && has(J, "\",\"rev\":\"1-"));
    /* a parent on a document that does not exist is a conflict, as CouchDB's _bulk_docs
     * (the header: "conflict" for a stale or missing parent; fixed in 6d64062) */
    CHECK_OUT(cbl_collection_docs_save(c, "[{\"_id\":\"zz\",\"_rev\":\"1-zz\"},{\"_id\":\"zz\",\"_rev\":\"1-zz\",\"_deleted\":true}]", &J, &E),
              CBL_OK, has(J, "[{\"id\":\"zz\",\"error\":\"conflict\",\"reason\":\"")
                      && has(J, "},{\"id\":\"zz\",\"error\":\"conflict\",\"reason\":\""));
    CHECK_FAILS(cbl_doc_get(c, "zz", CBL_GET_DELETED, &J, &E), CBL_NOT_FOUND);
    /* a validator's refusal: "forbidden" */
    CHECK_ST(cbl_collection_set_validator(c, "no-evil", reject_evil, NULL, &E), CBL_OK);
    CHECK_JSON(cbl_collection_docs_save(c, "[{\"_id\":\"e\",\"evil\":true}]", &J, &E),
               "[{\"id\":\"e\",\"error\":\"forbidden\",\"reason\":\"no evil here\"}]");
    CHECK_ST(cbl_collection_set_validator(c, "no-evil", NULL, NULL, &E), CBL_OK);
    CHECK_JSON(cbl_collection_docs_save(c, "[]", &J, &E), "[]");
    /* bad requests: nothing written */
    uint64_t before = last_seq(c);
    CHECK_FAILS(cbl_collection_docs_save(c, NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_save(c, "{", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_save(c, "{}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_save(c, "[{\"_id\":\"new\"},[]]", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_docs_save(c, "[null]", &J, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_collection_docs_save(c, "[{\"_id\":\"new\"}]", NULL, &E), CBL_BAD_REQUEST);
    CHECK(last_seq(c) == before);
    CHECK_FAILS(cbl_doc_get(c, "new", 0, &J, &E), CBL_NOT_FOUND);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- cbl_doc_purge_revisions ---------------------------------------------------------- */

static void test_purge_revisions(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("purge", dir, sizeof dir, &c);
    seed(c);
    /* a losing leaf goes; the ancestor the winner shares stays; unknown and inner
     * revisions are ignored */
    CHECK_JSON(cbl_doc_purge_revisions(c, "conflicted", "[\"" R_CB "\",\"7-nope\",\"" R_C1 "\"]", &J, &E),
               "[\"" R_CB "\"]");
    CHECK_JSON(cbl_doc_conflicts(c, "conflicted", &J, &E), "[\"" R_CA "\"]");
    CHECK_JSON(cbl_doc_history(c, "conflicted", NULL, &J, &E), "[\"" R_CA "\",\"" R_C1 "\"]");
    CHECK_JSON(cbl_collection_revs_diff(c, "{\"conflicted\":[\"" R_CB "\"]}", &J, &E),
               "{\"conflicted\":{\"missing\":[\"" R_CB "\"]}}");
    CHECK_JSON(cbl_doc_purge_revisions(c, "conflicted", "[\"" R_CB "\"]", &J, &E), "[]");   /* again: nothing */
    CHECK_JSON(cbl_doc_purge_revisions(c, "no-such-doc", "[\"1-a\"]", &J, &E), "[]");
    CHECK_JSON(cbl_doc_purge_revisions(c, "plain-01", "[]", &J, &E), "[]");
    /* the last leaf: the document goes as by cbl_doc_purge, with its ancestors; only the
     * leaf is named, as CouchDB's _purge answers */
    CHECK_JSON(cbl_doc_purge_revisions(c, "deleted", "[\"" R_DEL "\"]", &J, &E), "[\"" R_DEL "\"]");
    CHECK_FAILS(cbl_doc_get(c, "deleted", CBL_GET_DELETED, &J, &E), CBL_NOT_FOUND);
    CHECK_FAILS(cbl_doc_open_revs(c, "deleted", NULL, NULL, &J, &E), CBL_NOT_FOUND);
    CHECK_OUT(cbl_collection_changes(c, 0, NULL, &J, &E), CBL_OK, !strstr(J, "\"deleted\""));
    /* out_json is optional */
    CHECK_ST(cbl_doc_purge_revisions(c, "plain-01", "[\"" R_P1 "\"]", NULL, &E), CBL_OK);
    CHECK_FAILS(cbl_doc_get(c, "plain-01", 0, &J, &E), CBL_NOT_FOUND);
    /* bad input */
    CHECK_FAILS(cbl_doc_purge_revisions(c, "conflicted", NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_purge_revisions(c, "conflicted", "\"all\"", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_purge_revisions(c, "conflicted", "null", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_purge_revisions(c, "conflicted", "[1]", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_purge_revisions(c, "conflicted", "{}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_purge_revisions(c, "conflicted", "[", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_purge_revisions(c, NULL, "[]", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_purge_revisions(c, "_x", "[]", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_doc_purge_revisions(c, "x\xff", "[]", &J, &E), CBL_BAD_REQUEST);
    CHECK_JSON(cbl_doc_conflicts(c, "conflicted", &J, &E), "[\"" R_CA "\"]");   /* untouched */
    RELEASE_AND_CLOSE(c, db);
}

/* ---- cbl_local_list -------------------------------------------------------------------- */

static void test_local_list(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("local_list", dir, sizeof dir, &c);
    CHECK_JSON(cbl_local_list(c, 0, &J, &E), "[]");
    CHECK_JSON(cbl_local_list(c, 1, &J, &E), "[]");
    char* rev = NULL;
    CHECK_ST(cbl_local_put(c, "client-checkpoint", "{\"session_id\":\"c0ffee\",\"history\":[]}", NULL, &rev, &E), CBL_OK);
    CHECK(rev && strcmp(rev, "0-1") == 0);
    char* rev2 = NULL;
    CHECK_ST(cbl_local_put(c, "client-checkpoint", "{\"session_id\":\"c0ffee2\",\"history\":[]}", rev, &rev2, &E), CBL_OK);
    CHECK(rev2 && strcmp(rev2, "0-2") == 0);
    cbl_free(rev); cbl_free(rev2);
    CHECK_ST(cbl_local_put(c, "a\"b/\xc3\xa9", "{\"x\":[1,2]}", NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_local_put(c, "gone", "{}", NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_local_delete(c, "gone", NULL, &E), CBL_OK);
    /* by ID (byte order), deleted ones absent; the documents not in the changes feed */
    CHECK_JSON(cbl_local_list(c, 0, &J, &E),
               "[{\"id\":\"a\\\"b/\xc3\xa9\",\"rev\":\"0-1\"},{\"id\":\"client-checkpoint\",\"rev\":\"0-2\"}]");
    CHECK_JSON(cbl_local_list(c, 1, &J, &E),
               "[{\"id\":\"a\\\"b/\xc3\xa9\",\"rev\":\"0-1\",\"doc\":{\"_id\":\"a\\\"b/\xc3\xa9\",\"_rev\":\"0-1\",\"x\":[1,2]}},"
               "{\"id\":\"client-checkpoint\",\"rev\":\"0-2\",\"doc\":{\"_id\":\"client-checkpoint\",\"_rev\":\"0-2\","
               "\"history\":[],\"session_id\":\"c0ffee2\"}}]");
    CHECK_JSON(cbl_local_list(c, 7, &J, &E),        /* any non-zero include_docs */
               "[{\"id\":\"a\\\"b/\xc3\xa9\",\"rev\":\"0-1\",\"doc\":{\"_id\":\"a\\\"b/\xc3\xa9\",\"_rev\":\"0-1\",\"x\":[1,2]}},"
               "{\"id\":\"client-checkpoint\",\"rev\":\"0-2\",\"doc\":{\"_id\":\"client-checkpoint\",\"_rev\":\"0-2\","
               "\"history\":[],\"session_id\":\"c0ffee2\"}}]");
    CHECK_JSON(cbl_collection_changes(c, 0, NULL, &J, &E), "{\"results\":[],\"last_seq\":0}");
    /* per collection */
    cbl_collection* other = NULL;
    CHECK_ST(cbl_db_create_collection(db, "s", "other", &other, &E), CBL_OK);
    CHECK_JSON(cbl_local_list(other, 1, &J, &E), "[]");
    cbl_collection_release(other);
    CHECK_ST(cbl_local_list(c, 0, NULL, &E), CBL_BAD_REQUEST);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- cbl_collection_changes: style, doc_ids ------------------------------------------ */

static void test_changes_options(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("changes", dir, sizeof dir, &c);
    seed(c);
    const char* conflicted_all = "{\"seq\":3,\"id\":\"conflicted\",\"changes\":[{\"rev\":\"" R_CA "\"},{\"rev\":\"" R_CB "\"}]}";
    const char* deleted_row = "{\"seq\":4,\"id\":\"deleted\",\"changes\":[{\"rev\":\"" R_DEL "\"}],\"deleted\":true}";
    const char* att_row = "{\"seq\":5,\"id\":\"att-text\",\"changes\":[{\"rev\":\"" R_ATT1 "\"}]}";
    const char* plain_row = "{\"seq\":6,\"id\":\"plain-01\",\"changes\":[{\"rev\":\"" R_P1 "\"}]}";
    char want[4096];
    /* style=all_docs: the winner first, then the other leaves (client-shapes seq 7) */
    snprintf(want, sizeof want, "{\"results\":[%s,%s,%s,%s],\"last_seq\":6}", conflicted_all, deleted_row, att_row, plain_row);
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"style\":\"all_docs\"}", &J, &E), want);
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"all_revs\":true}", &J, &E), want);
    snprintf(want, sizeof want, "{\"results\":[{\"seq\":3,\"id\":\"conflicted\",\"changes\":[{\"rev\":\"" R_CA "\"}]},%s,%s,%s],\"last_seq\":6}",
             deleted_row, att_row, plain_row);
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"style\":\"main_only\"}", &J, &E), want);
    /* doc_ids: only those, in sequence order; unknown IDs are simply absent */
    snprintf(want, sizeof want, "{\"results\":[%s,%s],\"last_seq\":6}", conflicted_all, plain_row);
    CHECK_JSON(cbl_collection_changes(c, 0,
        "{\"doc_ids\":[\"plain-01\",\"conflicted\",\"not-there\"],\"style\":\"all_docs\"}", &J, &E), want);
    /* with doc_ids the limit counts rows that pass; last_seq is the last examined */
    snprintf(want, sizeof want, "{\"results\":[%s],\"last_seq\":4}", deleted_row);
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"doc_ids\":[\"deleted\",\"plain-01\"],\"limit\":1}", &J, &E), want);
    snprintf(want, sizeof want, "{\"results\":[%s],\"last_seq\":6}", plain_row);
    CHECK_JSON(cbl_collection_changes(c, 4, "{\"doc_ids\":[\"deleted\",\"plain-01\"],\"limit\":1}", &J, &E), want);
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"doc_ids\":[\"none\"]}", &J, &E), "{\"results\":[],\"last_seq\":6}");
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"doc_ids\":[]}", &J, &E), "{\"results\":[],\"last_seq\":6}");
    CHECK_JSON(cbl_collection_changes(c, 6, "{\"doc_ids\":[\"plain-01\"]}", &J, &E), "{\"results\":[],\"last_seq\":6}");
    /* IDs this database cannot hold match nothing (engine commit 59f7c64) */
    snprintf(want, sizeof want, "{\"results\":[%s],\"last_seq\":6}", plain_row);
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"doc_ids\":[\"_design/x\",\"a\\u0000\",\"\",\"plain-01\"]}", &J, &E), want);
    /* include_docs with doc_ids */
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"doc_ids\":[\"deleted\"],\"include_docs\":true}", &J, &E),
               "{\"results\":[{\"seq\":4,\"id\":\"deleted\",\"changes\":[{\"rev\":\"" R_DEL "\"}],\"deleted\":true,"
               "\"doc\":{\"_id\":\"deleted\",\"_rev\":\"" R_DEL "\",\"_deleted\":true}}],\"last_seq\":6}");
    /* bad options */
    CHECK_FAILS(cbl_collection_changes(c, 0, "{\"style\":\"x\"}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_changes(c, 0, "{\"style\":true}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_changes(c, 0, "{\"doc_ids\":\"plain-01\"}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_changes(c, 0, "{\"doc_ids\":[1]}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_changes(c, 0, "{\"filter\":1}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_changes(c, 0, "{\"filter\":\"nobody\"}", &J, &E), CBL_NOT_FOUND);
    CHECK_FAILS(cbl_collection_changes(c, 0, "{\"filter_params\":[]}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_changes(c, 0, "{\"filter_params\":\"a=b\"}", &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_changes(c, 0, "{\"feed\":\"longpoll\"}", &J, &E), CBL_BAD_REQUEST);
    RELEASE_AND_CLOSE(c, db);
}

/* ---- filters --------------------------------------------------------------------------- */

typedef struct filter_ctx {
    pthread_mutex_t mu;
    int calls, deleted_seen, bad_args;
    char last_params[256];
    int sleep_ms;           /* a slow filter, for the "removal waits" test */
    int running;
    cbl_db* remove_from_inside;
} filter_ctx;

/* Passes documents whose "type" is the "type" parameter (all when none is given); a
 * parameter {"deleted": true} also passes tombstones. */
static int by_type(void* context, const char* doc_json, const char* params_json) {
    filter_ctx* f = (filter_ctx*)context;
    pthread_mutex_lock(&f->mu);
    f->calls++;
    f->running++;
    if (!doc_json || !params_json || !strstr(doc_json, "\"_id\":") || !strstr(doc_json, "\"_rev\":")) f->bad_args++;
    if (doc_json && strstr(doc_json, "\"_deleted\":true")) f->deleted_seen++;
    snprintf(f->last_params, sizeof f->last_params, "%s", params_json ? params_json : "(null)");
    int nap = f->sleep_ms;
    cbl_db* self_remove = f->remove_from_inside;
    f->remove_from_inside = NULL;
    pthread_mutex_unlock(&f->mu);
    if (nap) sleep_ms(nap);
    if (self_remove) {
        cbl_error e2;
        if (cbl_db_set_filter(self_remove, "by_type", NULL, NULL, &e2) != CBL_OK) {
            pthread_mutex_lock(&f->mu); f->bad_args++; pthread_mutex_unlock(&f->mu);
        }
    }
    int pass = 1;
    const char* p = params_json ? strstr(params_json, "\"type\":\"") : NULL;
    if (p) {
        char want[128];
        p += 8;
        size_t i = 0;
        while (p[i] && p[i] != '"' && i + 20 < sizeof want) i++;
        snprintf(want, sizeof want, "\"type\":\"%.*s\"", (int)i, p);
        pass = strstr(doc_json, want) != NULL;
    }
    if (doc_json && strstr(doc_json, "\"_deleted\":true"))
        pass = params_json && strstr(params_json, "\"deleted\":true") != NULL;
    pthread_mutex_lock(&f->mu);
    f->running--;
    pthread_mutex_unlock(&f->mu);
    return pass;
}

static int never(void* context, const char* doc_json, const char* params_json) {
    (void)context; (void)doc_json; (void)params_json;
    return 0;
}

typedef struct feed_arg { cbl_collection* c; cbl_status st; char* json; } feed_arg;

static int filter_running(void* p) {
    filter_ctx* f = (filter_ctx*)p;
    pthread_mutex_lock(&f->mu);
    int running = f->running > 0;
    pthread_mutex_unlock(&f->mu);
    return running;
}

static void* read_feed(void* p) {
    feed_arg* a = (feed_arg*)p;
    cbl_error e;
    a->st = cbl_collection_changes(a->c, 0, "{\"filter\":\"by_type\"}", &a->json, &e);
    return NULL;
}

static void test_filters(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("filters", dir, sizeof dir, &c);
    seed(c);
    filter_ctx f;
    memset(&f, 0, sizeof f);
    pthread_mutex_init(&f.mu, NULL);
    CHECK_ST(cbl_db_set_filter(db, "by_type", by_type, &f, &E), CBL_OK);

    /* with params: only what passes; the limit counts rows that pass */
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"filter\":\"by_type\",\"filter_params\":{\"type\":\"plain\"}}", &J, &E),
               "{\"results\":[{\"seq\":6,\"id\":\"plain-01\",\"changes\":[{\"rev\":\"" R_P1 "\"}]}],\"last_seq\":6}");
    CHECK(f.calls == 4 && f.bad_args == 0 && f.deleted_seen == 1);   /* one call per change */
    CHECK(strcmp(f.last_params, "{\"type\":\"plain\"}") == 0);
    CHECK_JSON(cbl_collection_changes(c, 0,
        "{\"filter\":\"by_type\",\"filter_params\":{\"type\":\"conflicted\"},\"style\":\"all_docs\",\"include_docs\":true}", &J, &E),
        "{\"results\":[{\"seq\":3,\"id\":\"conflicted\",\"changes\":[{\"rev\":\"" R_CA "\"},{\"rev\":\"" R_CB "\"}],"
        "\"doc\":{\"_id\":\"conflicted\",\"_rev\":\"" R_CA "\",\"type\":\"conflicted\",\"value\":\"edited here\"}}],\"last_seq\":6}");
    /* nothing passes: last_seq is still the last sequence examined */
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"filter\":\"by_type\",\"filter_params\":{\"type\":\"nothing\"}}", &J, &E),
               "{\"results\":[],\"last_seq\":6}");
    /* without params the filter sees "{}"; tombstones reach it with "_deleted" */
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"filter\":\"by_type\",\"limit\":2}", &J, &E),
               "{\"results\":[{\"seq\":3,\"id\":\"conflicted\",\"changes\":[{\"rev\":\"" R_CA "\"}]},"
               "{\"seq\":5,\"id\":\"att-text\",\"changes\":[{\"rev\":\"" R_ATT1 "\"}]}],\"last_seq\":5}");
    CHECK(strcmp(f.last_params, "{}") == 0);
    CHECK_JSON(cbl_collection_changes(c, 3, "{\"filter\":\"by_type\",\"filter_params\":{\"deleted\":true,\"n\":[1,{\"k\":\"\\u0000\"}]},\"limit\":1}", &J, &E),
               "{\"results\":[{\"seq\":4,\"id\":\"deleted\",\"changes\":[{\"rev\":\"" R_DEL "\"}],\"deleted\":true}],\"last_seq\":4}");
    CHECK(strcmp(f.last_params, "{\"deleted\":true,\"n\":[1,{\"k\":\"\\u0000\"}]}") == 0);
    /* filter and doc_ids together */
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"filter\":\"by_type\",\"doc_ids\":[\"att-text\",\"plain-01\"],"
                                             "\"filter_params\":{\"type\":\"attachment\"}}", &J, &E),
               "{\"results\":[{\"seq\":5,\"id\":\"att-text\",\"changes\":[{\"rev\":\"" R_ATT1 "\"}]}],\"last_seq\":6}");

    /* every handle of the database sees it */
    cbl_db* db2 = open_db("sync", dir);
    cbl_collection* c2 = default_coll(db2);
    CHECK_JSON(cbl_collection_changes(c2, 0, "{\"filter\":\"by_type\",\"filter_params\":{\"type\":\"plain\"}}", &J, &E),
               "{\"results\":[{\"seq\":6,\"id\":\"plain-01\",\"changes\":[{\"rev\":\"" R_P1 "\"}]}],\"last_seq\":6}");
    /* replaced; then removed: 404, and the old function is not called again */
    CHECK_ST(cbl_db_set_filter(db2, "by_type", never, NULL, &E), CBL_OK);
    int calls = f.calls;
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"filter\":\"by_type\"}", &J, &E), "{\"results\":[],\"last_seq\":6}");
    CHECK(f.calls == calls);
    CHECK_ST(cbl_db_set_filter(db, "by_type", NULL, NULL, &E), CBL_OK);
    CHECK_FAILS(cbl_collection_changes(c, 0, "{\"filter\":\"by_type\"}", &J, &E), CBL_NOT_FOUND);
    CHECK_FAILS(cbl_collection_changes(c2, 0, "{\"filter\":\"by_type\"}", &J, &E), CBL_NOT_FOUND);
    CHECK_ST(cbl_db_set_filter(db, "by_type", NULL, NULL, &E), CBL_OK);   /* removing twice: fine */
    CHECK(f.calls == calls);
    RELEASE_AND_CLOSE(c2, db2);

    /* a filter may remove itself from inside its call */
    CHECK_ST(cbl_db_set_filter(db, "by_type", by_type, &f, &E), CBL_OK);
    f.remove_from_inside = db;
    CHECK_OUT(cbl_collection_changes(c, 0, "{\"filter\":\"by_type\"}", &J, &E), CBL_OK, has(J, "\"last_seq\":6"));
    CHECK(f.bad_args == 0);
    CHECK_FAILS(cbl_collection_changes(c, 0, "{\"filter\":\"by_type\"}", &J, &E), CBL_NOT_FOUND);

    /* removal waits for a running call, so the caller may then free the context */
    CHECK_ST(cbl_db_set_filter(db, "by_type", by_type, &f, &E), CBL_OK);
    f.sleep_ms = 150;
    feed_arg a = {c, -1, NULL};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, read_feed, &a) == 0);
    CHECK(wait_until(filter_running, &f, 5000));
    CHECK_ST(cbl_db_set_filter(db, "by_type", NULL, NULL, &E), CBL_OK);
    pthread_mutex_lock(&f.mu);
    int running_after_removal = f.running;
    pthread_mutex_unlock(&f.mu);
    CHECK(running_after_removal == 0);
    pthread_join(t, NULL);
    CHECK(a.st == CBL_OK && a.json != NULL);   /* the feed that had it finishes with it */
    cbl_free(a.json);
    f.sleep_ms = 0;

    /* names */
    char name[300];
    memset(name, 'f', 255); name[255] = '\0';
    CHECK_ST(cbl_db_set_filter(db, name, never, NULL, &E), CBL_OK);
    char opts[400];
    snprintf(opts, sizeof opts, "{\"filter\":\"%s\"}", name);
    CHECK_JSON(cbl_collection_changes(c, 0, opts, &J, &E), "{\"results\":[],\"last_seq\":6}");
    CHECK_ST(cbl_db_set_filter(db, name, NULL, NULL, &E), CBL_OK);
    CHECK_ST(cbl_db_set_filter(db, "\"quoted\\name\xc3\xa9\"", never, NULL, &E), CBL_OK);
    CHECK_JSON(cbl_collection_changes(c, 0, "{\"filter\":\"\\\"quoted\\\\name\xc3\xa9\\\"\"}", &J, &E),
               "{\"results\":[],\"last_seq\":6}");
    CHECK_ST(cbl_db_set_filter(db, "\"quoted\\name\xc3\xa9\"", NULL, NULL, &E), CBL_OK);
    name[255] = 'f'; name[256] = '\0';
    CHECK_ST(cbl_db_set_filter(db, name, never, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_filter(db, "", never, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_filter(db, NULL, never, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_filter(db, "tab\there", never, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_filter(db, "del\x7f", never, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_filter(db, "bad\xff", never, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_filter(db, "", NULL, NULL, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_collection_changes(c, 0, "{\"filter\":\"\"}", &J, &E), CBL_NOT_FOUND);
    RELEASE_AND_CLOSE(c, db);
    pthread_mutex_destroy(&f.mu);
}

/* ---- cbl_collection_changes_wait ------------------------------------------------------------------ */

/* True once kernel thread `*tid` (0: not known yet) of this process sleeps (state S). A
 * thread in cbl_changes_wait sleeps only on the commit condition (no other thread of
 * these tests holds a lock it needs), so a commit from then on must wake it: the tests
 * of the wake-up wait for this instead of sleeping for a time a slow machine outlasts. */
static int thread_sleeps(void* tid) {
    int id = __atomic_load_n((int*)tid, __ATOMIC_ACQUIRE);
    if (id == 0) return 0;
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", id);
    FILE* f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    const char* name_end = strrchr(line, ')');   /* "tid (name) S ...": the name may hold ')' */
    return name_end && name_end[1] == ' ' && name_end[2] == 'S';
}

typedef struct writer_arg {
    cbl_collection* c;       /* of another handle of the same database */
    int waiter_tid;          /* writes once this thread waits */
    int waited;              /* it did, within 20 s */
    double wrote_at;
    cbl_status st;
} writer_arg;

static void* writer(void* p) {
    writer_arg* w = (writer_arg*)p;
    w->waited = wait_until(thread_sleeps, &w->waiter_tid, 20000);
    cbl_error e;
    w->st = cbl_doc_put(w->c, "woken", "{\"by\":\"writer\"}", NULL, 0, NULL, NULL, &e);
    w->wrote_at = now_ms();
    return NULL;
}

typedef struct waiter_arg {
    cbl_collection* c;
    uint64_t since;
    int32_t timeout;
    int changed;
    cbl_status st;
    double returned_at;
    int tid;                 /* set before it calls cbl_changes_wait */
} waiter_arg;

static void* waiter(void* p) {
    waiter_arg* w = (waiter_arg*)p;
    cbl_error e;
    __atomic_store_n(&w->tid, (int)gettid(), __ATOMIC_RELEASE);
    w->changed = 77;
    w->st = cbl_collection_changes_wait(w->c, w->since, w->timeout, &w->changed, &e);
    w->returned_at = now_ms();
    return NULL;
}

static void test_changes_wait(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("wait", dir, sizeof dir, &c);
    seed(c);
    int changed = 77;
    /* already changed after `since`: 1 at once */
    double t0 = now_ms();
    CHECK_ST(cbl_collection_changes_wait(c, 5, 10000, &changed, &E), CBL_OK);
    CHECK(changed == 1 && now_ms() - t0 < 1000);
    changed = 77;
    CHECK_ST(cbl_collection_changes_wait(c, 0, 0, &changed, &E), CBL_OK);
    CHECK(changed == 1);
    /* nothing after `since`: 0 once the timeout passes, not before */
    changed = 77;
    t0 = now_ms();
    CHECK_ST(cbl_collection_changes_wait(c, 6, 300, &changed, &E), CBL_OK);
    double waited = now_ms() - t0;
    CHECK(changed == 0);
    CHECK(waited >= 280 && waited < 3000);
    changed = 77;
    t0 = now_ms();
    CHECK_ST(cbl_collection_changes_wait(c, 6, 0, &changed, &E), CBL_OK);
    CHECK(changed == 0 && now_ms() - t0 < 1000);
    changed = 77;
    CHECK_ST(cbl_collection_changes_wait(c, 6, -5, &changed, &E), CBL_OK);       /* negative: no wait */
    CHECK(changed == 0);
    changed = 77;
    CHECK_ST(cbl_collection_changes_wait(c, UINT64_MAX, 10, &changed, &E), CBL_OK);
    CHECK(changed == 0);

    /* a write from another thread (through another handle) wakes it promptly: well
     * before the half-second another process's commit may take */
    cbl_db* db2 = open_db("sync", dir);
    cbl_collection* c2 = default_coll(db2);
    writer_arg w = {c2, (int)getpid(), 0, 0, -1};     /* getpid(): this, the main thread */
    pthread_t t;
    t0 = now_ms();
    CHECK(pthread_create(&t, NULL, writer, &w) == 0);
    changed = 77;
    CHECK_ST(cbl_collection_changes_wait(c, 6, 10000, &changed, &E), CBL_OK);
    double woke = now_ms();
    pthread_join(t, NULL);
    CHECK(w.waited && w.st == CBL_OK);
    CHECK(changed == 1);
    CHECK(woke - t0 < 5000);
    CHECK(woke - w.wrote_at < 300);     /* not a 500 ms poll */
    if (woke - w.wrote_at >= 300) fprintf(stderr, "  woke %.0f ms after the write\n", woke - w.wrote_at);
    CHECK(last_seq(c) == 7);

    /* the waiter on another thread, the write on this one */
    waiter_arg wa = {c2, 7, 10000, 77, -1, 0, 0};
    CHECK(pthread_create(&t, NULL, waiter, &wa) == 0);
    CHECK(wait_until(thread_sleeps, &wa.tid, 5000));
    CHECK_ST(cbl_doc_put(c, "second", "{}", NULL, 0, NULL, NULL, &E), CBL_OK);
    double wrote = now_ms();
    pthread_join(t, NULL);
    CHECK(wa.st == CBL_OK && wa.changed == 1);
    CHECK(wa.returned_at - wrote < 300);
    RELEASE_AND_CLOSE(c2, db2);

    /* closing the database while a call waits: that call returns 400 */
    cbl_db* db3 = open_db("sync", dir);
    cbl_collection* c3 = default_coll(db3);
    waiter_arg wc = {c3, 1000, 20000, 77, -1, 0, 0};
    CHECK(pthread_create(&t, NULL, waiter, &wc) == 0);
    CHECK(wait_until(thread_sleeps, &wc.tid, 5000));
    t0 = now_ms();
    CHECK_ST(cbl_db_close(db3, &E), CBL_OK);
    pthread_join(t, NULL);
    CHECK(wc.st == CBL_BAD_REQUEST);
    CHECK(wc.changed == 0);
    CHECK(wc.returned_at - t0 < 2000);
    changed = 77;
    CHECK_ST(cbl_collection_changes_wait(c3, 0, 10, &changed, &E), CBL_BAD_REQUEST);
    CHECK(changed == 0);
    cbl_collection_release(c3);

    /* NULL out_changed */
    CHECK_ST(cbl_collection_changes_wait(c, 0, 10, NULL, &E), CBL_BAD_REQUEST);
    RELEASE_AND_CLOSE(c, db);
}

/* Child mode: another process writes one document to the database in `dir`
 * (--writer-child), or purges the document "to-purge" (--purger-child). */
static int other_process_child(const char* mode, const char* dir) {
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    if (cbl_db_open("sync", dir, NULL, &db, NULL) != CBL_OK) return 3;
    if (cbl_db_default_collection(db, &c, NULL) != CBL_OK) return 4;
    sleep_ms(100);
    if (strcmp(mode, "--purger-child") == 0) {
        if (cbl_doc_purge(c, "to-purge", NULL) != CBL_OK) return 5;
    } else if (cbl_doc_put(c, "from-child", "{\"process\":\"other\"}", NULL, 0, NULL, NULL, NULL) != CBL_OK) {
        return 5;
    }
    cbl_collection_release(c);
    return cbl_db_close(db, NULL) == CBL_OK ? 0 : 6;
}

typedef struct child_arg {
    const char* dir;
    int status;
    double exited_at;
    const char* mode;
    int waiter_tid;          /* non-zero: starts the child once this thread waits */
    int waited;
} child_arg;

static void* run_child(void* p) {
    child_arg* a = (child_arg*)p;
    if (a->waiter_tid) a->waited = wait_until(thread_sleeps, &a->waiter_tid, 20000);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test_sync", a->mode ? a->mode : "--writer-child", a->dir, (char*)NULL);
        _exit(2);
    }
    a->status = -1;
    if (pid > 0) waitpid(pid, &a->status, 0);
    a->exited_at = now_ms();
    return NULL;
}

/* Another process's commit wakes a waiter within about half a second (the header). */
static void test_changes_wait_other_process(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("wait_process", dir, sizeof dir, &c);
    CHECK_ST(cbl_doc_put(c, "first", "{}", NULL, 0, NULL, NULL, &E), CBL_OK);
    child_arg a = {dir, -1, 0, NULL, (int)getpid(), 0};
    pthread_t t;
    double t0 = now_ms();
    CHECK(pthread_create(&t, NULL, run_child, &a) == 0);
    int changed = 77;
    CHECK_ST(cbl_collection_changes_wait(c, 1, 20000, &changed, &E), CBL_OK);
    double woke = now_ms();
    pthread_join(t, NULL);
    CHECK(a.waited && WIFEXITED(a.status) && WEXITSTATUS(a.status) == 0);
    CHECK(changed == 1);
    CHECK(woke - t0 < 10000);
    CHECK(woke - a.exited_at < 1500);    /* the child's commit precedes its exit */
    if (woke - a.exited_at >= 1500) fprintf(stderr, "  woke %.0f ms after the child exited\n", woke - a.exited_at);
    CHECK_OUT(cbl_doc_get(c, "from-child", 0, &J, &E), CBL_OK, has(J, "\"process\":\"other\""));
    RELEASE_AND_CLOSE(c, db);
}

/* A purge allocates no sequence: another process's purge reaches this process's listeners
 * through the purge log, as a purge (no revision, deleted), marked external. */
typedef struct purge_seen { pthread_mutex_t mu; int count, external, deleted, empty_rev; } purge_seen;

static void on_purge_change(void* context, const cbl_change* changes, size_t count) {
    purge_seen* p = context;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < count; i++) {
        if (!changes[i].doc_id || strcmp(changes[i].doc_id, "to-purge") != 0) continue;
        p->count++;
        p->external += changes[i].external ? 1 : 0;
        p->deleted += changes[i].deleted ? 1 : 0;
        p->empty_rev += changes[i].rev_id && !changes[i].rev_id[0] ? 1 : 0;
    }
    pthread_mutex_unlock(&p->mu);
}

static int purge_seen_once(void* p) {
    purge_seen* seen = (purge_seen*)p;
    pthread_mutex_lock(&seen->mu);
    int count = seen->count;
    pthread_mutex_unlock(&seen->mu);
    return count > 0;
}

static void test_purge_by_other_process(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("purge_process", dir, sizeof dir, &c);
    CHECK_ST(cbl_doc_put(c, "to-purge", "{}", NULL, 0, NULL, NULL, &E), CBL_OK);
    purge_seen seen;
    memset(&seen, 0, sizeof seen);
    pthread_mutex_init(&seen.mu, NULL);
    cbl_listener_token* token = NULL;
    CHECK_ST(cbl_collection_add_change_listener(c, on_purge_change, &seen, &token, &E), CBL_OK);
    child_arg a = {dir, -1, 0, "--purger-child", 0, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, run_child, &a) == 0);
    pthread_join(t, NULL);
    CHECK(WIFEXITED(a.status) && WEXITSTATUS(a.status) == 0);
    CHECK(wait_until(purge_seen_once, &seen, 5000));   /* up to 5 s on a loaded machine */
    sleep_ms(600);                                      /* and only once */
    pthread_mutex_lock(&seen.mu);
    CHECK(seen.count == 1 && seen.external == 1 && seen.deleted == 1 && seen.empty_rev == 1);
    pthread_mutex_unlock(&seen.mu);
    CHECK_FAILS(cbl_doc_get(c, "to-purge", CBL_GET_DELETED, &J, &E), CBL_NOT_FOUND);
    cbl_listener_token_remove(token);
    RELEASE_AND_CLOSE(c, db);
    pthread_mutex_destroy(&seen.mu);
}

/* ---- cbl_db_uuid ---------------------------------------------------------------------- */

static void test_uuid(void) {
    char dir[512];
    cbl_collection* c; cbl_db* db = setup("uuid", dir, sizeof dir, &c);
    char first[128] = "";
    CHECK_OUT(cbl_db_uuid(db, &J, &E), CBL_OK, strlen(J) >= 16 && strlen(J) < sizeof first && snprintf(first, sizeof first, "%s", J) > 0);
    for (const char* p = first; *p; p++) CHECK(*p > 0x20 && *p < 0x7f);
    CHECK_OUT(cbl_db_uuid(db, &J, &E), CBL_OK, json_eq(J, first));
    cbl_db* db2 = open_db("sync", dir);                 /* another handle: the same */
    CHECK_OUT(cbl_db_uuid(db2, &J, &E), CBL_OK, json_eq(J, first));
    CHECK_ST(cbl_db_close(db2, &E), CBL_OK);
    RELEASE_AND_CLOSE(c, db);
    db = open_db("sync", dir);                          /* kept in the file */
    CHECK_OUT(cbl_db_uuid(db, &J, &E), CBL_OK, json_eq(J, first));
    cbl_db* other = open_db("other", dir);              /* another database: different */
    CHECK_OUT(cbl_db_uuid(other, &J, &E), CBL_OK, strcmp(J, first) != 0);
    CHECK_ST(cbl_db_close(other, &E), CBL_OK);
    CHECK_ST(cbl_db_uuid(db, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    CHECK_FAILS(cbl_db_uuid(db, &J, &E), CBL_BAD_REQUEST);   /* closed */
}

/* ---- bad handles ---------------------------------------------------------------------- */

/* Every new collection function with handle `h`, expecting `st`. */
static void all_coll_calls(cbl_collection* h, cbl_status st) {
    CHECK_FAILS(cbl_local_list(h, 1, &J, &E), st);
    CHECK_FAILS(cbl_collection_revs_diff(h, "{}", &J, &E), st);
    CHECK_FAILS(cbl_collection_docs_put_existing(h, "[]", &J, &E), st);
    CHECK_FAILS(cbl_collection_docs_save(h, "[]", &J, &E), st);
    CHECK_FAILS(cbl_doc_open_revs(h, "a", "[\"1-a\"]", NULL, &J, &E), st);
    /* The whole call fails (nothing was read), with or without requests: never CBL_OK
     * with per-document errors a caller would take for missing documents. */
    CHECK_FAILS(cbl_collection_docs_bulk_get(h, "{\"docs\":[]}", NULL, &J, &E), st);
    CHECK_FAILS(cbl_collection_docs_bulk_get(h, "{\"docs\":[{\"id\":\"a\"}]}", NULL, &J, &E), st);
    CHECK_FAILS(cbl_doc_purge_revisions(h, "a", "[]", &J, &E), st);
    CHECK_FAILS(cbl_collection_changes(h, 0, "{\"style\":\"all_docs\",\"doc_ids\":[\"a\"]}", &J, &E), st);
    int changed = 77;
    CHECK_ST(cbl_collection_changes_wait(h, 0, 10, &changed, &E), st);
    CHECK(changed == 0);
}

static void test_bad_handles(void) {
    long long junk[16];
    memset(junk, 0, sizeof junk);
    cbl_db* fake = (cbl_db*)(void*)junk;
    cbl_collection* fake_c = (cbl_collection*)(void*)&junk[4];
    all_coll_calls(NULL, CBL_BAD_REQUEST);
    all_coll_calls(fake_c, CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_filter(NULL, "f", never, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_filter(fake, "f", never, NULL, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_db_uuid(NULL, &J, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_db_uuid(fake, &J, &E), CBL_BAD_REQUEST);
    CHECK(junk[0] == 0 && junk[4] == 0);   /* not written to */

    char dir[512];
    cbl_collection* c; cbl_db* db = setup("badh", dir, sizeof dir, &c);
    seed(c);
    /* foreign handles: a database is not a collection and the reverse */
    all_coll_calls((cbl_collection*)(void*)db, CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_filter((cbl_db*)(void*)c, "f", never, NULL, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_db_uuid((cbl_db*)(void*)c, &J, &E), CBL_BAD_REQUEST);
    /* a released collection handle */
    cbl_collection* rel = default_coll(db);
    cbl_collection_release(rel);
    all_coll_calls(rel, CBL_BAD_REQUEST);
    /* a deleted collection: 404 (its database still open) */
    cbl_collection* gone = NULL;
    CHECK_ST(cbl_db_create_collection(db, "s", "gone", &gone, &E), CBL_OK);
    CHECK_JSON(cbl_collection_docs_put_existing(gone, "[{\"_id\":\"a\",\"_rev\":\"1-a\"}]", &J, &E),
               "[{\"ok\":true,\"id\":\"a\",\"rev\":\"1-a\"}]");
    CHECK_ST(cbl_db_delete_collection(db, "s", "gone", &E), CBL_OK);
    all_coll_calls(gone, CBL_NOT_FOUND);
    cbl_collection_release(gone);
    /* the database handle closed: its collections and itself, 400 */
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    all_coll_calls(c, CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_filter(db, "f", never, NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_db_set_filter(db, "f", NULL, NULL, &E), CBL_BAD_REQUEST);
    CHECK_FAILS(cbl_db_uuid(db, &J, &E), CBL_BAD_REQUEST);
    cbl_collection_release(c);
    /* the data is intact for the next handle */
    db = open_db("sync", dir);
    c = default_coll(db);
    CHECK_JSON(cbl_doc_conflicts(c, "conflicted", &J, &E), "[\"" R_CA "\",\"" R_CB "\"]");
    RELEASE_AND_CLOSE(c, db);
}

/* ---- main ------------------------------------------------------------------------------- */

int main(int argc, char** argv) {
    if (argc == 3 && (strcmp(argv[1], "--writer-child") == 0 || strcmp(argv[1], "--purger-child") == 0))
        return other_process_child(argv[1], argv[2]);
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(g_root, sizeof g_root, "/tmp/cblite-sync-test-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 2; }
    int64_t instances = cbl_instance_count();

    test_put_existing();
    test_couchdb_fidelity();
    test_revs_diff();
    test_open_revs();
    test_bulk_get();
    test_docs_save();
    test_purge_revisions();
    test_local_list();
    test_changes_options();
    test_filters();
    test_changes_wait();
    test_changes_wait_other_process();
    test_purge_by_other_process();
    test_uuid();
    test_bad_handles();

    return finish_tests(instances);
}
