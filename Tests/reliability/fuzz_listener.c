/*
 * fuzz_listener.c — libFuzzer target over the listener's HTTP parsing (SwiftNIO's HTTP/1.1
 * decoder, then CouchWire / CBLiteListener: request targets and query parameters, JSON
 * bodies, multipart/related documents with gzip parts, chunked and gzip request bodies,
 * _bulk_docs / _revs_diff / _bulk_get / _changes / _session / _local / attachments).
 *
 * Set-up (LLVMFuzzerInitialize): a database in a temporary folder ($FUZZ_TMPDIR, else
 * /tmp) with four seeded documents — "seed-plain" (three generations), "seed-att" (two
 * attachments, one binary), "seed-conflict" (three leaves, one deleted, inserted with
 * cbl_collection_docs_put_existing) and "seed-deleted" (a tombstone) —, a local document and a
 * scratch document "doc"; two listeners (cbl_server_start, port 0) serve it by handle
 * (cbl_server_serve) as "db": one without users, one with the user fuzz:secret. A
 * validator makes every "seed-*" document read-only (403 over HTTP), so a request can
 * add, change and delete other documents but never legitimately change a seeded one.
 *
 * Each input is the raw bytes of one or more HTTP requests, written to a new TCP
 * connection (to the listener with users when it mentions Authorization:, Cookie: or
 * /_session), then shutdown(SHUT_WR); the answer is read until the server closes or
 * FUZZ_LISTENER_TIMEOUT_MS (1000) pass, then the connection is closed (reset when the
 * server had not closed). An input without "HTTP/1." anywhere gets a request head chosen
 * by its first byte (selector, below) and the rest as the body (Content-Length exact) or,
 * for two selectors, as the query string.
 *
 * Invariants (abort() = a finding libFuzzer records):
 *   - every answer starts with an HTTP/1.x status line;
 *   - every 16 inputs the listener still answers a GET of a seeded document (15 s);
 *   - every 128 inputs (and at exit) the seeded documents are exactly as stored: current
 *     revision with _conflicts/_revisions, every leaf with its history and attachment
 *     data (cbl_doc_open_revs), the revision tree's IDs, attachment bytes (digest
 *     checked by the library), and cbl_db_integrity_check passes; open file descriptors
 *     and threads return near their level after start-up (connections, feeds and
 *     workers are not leaked) and the live heap stays within 256 MB of its level at the
 *     first check;
 *   - an input whose request target may name _purge (the one write the validator cannot
 *     refuse) is checked at once: a seeded leaf is either intact or purged, no unknown
 *     revision appeared; a purged seed is then re-created identically;
 *   - every 1024 inputs the scratch documents are purged and extra collections deleted:
 *     the document count must come back to the seeded one, and no other "seed-*"
 *     document may exist (one would mean a write path that skipped the validator).
 * Memory: ASan on every access; leaks: LeakSanitizer at exit (the listeners are stopped
 * and the database closed first) and libFuzzer's -rss_limit_mb.
 * Feedback: besides SanitizerCoverage of the library (the .build-fuzz variant), each
 * answer's status code, CouchDB error name, reason prefix and content type feed
 * libFuzzer's extra counters, so inputs that make the listener answer differently are
 * kept even when the library is not instrumented.
 *
 * Environment: FUZZ_TMPDIR, FUZZ_LISTENER_TIMEOUT_MS, FUZZ_LISTENER_5XX_DIR (inputs
 * answered 500 are copied there), FUZZ_LISTENER_STRICT_5XX=1 (a 500 answer aborts),
 * FUZZ_LISTENER_VERBOSE=1 (one line per input).
 * Seed corpus: Tests/reliability/corpus_listener/ (make_listener_corpus.py); inputs that
 * once crashed: corpus_listener/regressions/, replayed first by `make fuzz-listener`.
 */
#define _GNU_SOURCE
#include "cblite.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sanitizer/allocator_interface.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROBE_EVERY 16
#define CHECK_EVERY 128
#define RESET_EVERY 1024
#define FD_SLACK 64
#define THREAD_SLACK 64
#define HEAP_SLACK_MB 256

/* ---- state ----------------------------------------------------------------------------- */

static cbl_db* g_db;
static cbl_collection* g_coll;
static cbl_server* g_server;          /* no users: loopback clients are served */
static cbl_server* g_auth_server;     /* users {"fuzz": "secret"} */
static uint16_t g_port, g_auth_port;
static char g_dir[512];
static int g_timeout_ms = 1000;
static int g_verbose, g_strict_5xx;
static const char* g_5xx_dir;
static unsigned long g_iter, g_checks, g_resets, g_reseeds, g_purge_suspects;
static unsigned long g_timeouts, g_conn_errors, g_no_answer, g_answers[6];
static unsigned long g_rejected;      /* validator refusals (atomic) */
static int g_base_fds, g_base_threads, g_max_fds, g_max_threads;
static size_t g_base_heap, g_max_heap, g_last_heap;   /* ASan's live heap bytes at the checks (base: the first) */
static __thread int t_seeding;        /* the harness itself writes seeded documents */

/* libFuzzer's extra counters: answer signatures as coverage features. */
__attribute__((section("__libfuzzer_extra_counters"), used)) static uint8_t g_extra[1 << 12];

static void feature(uint32_t h) {
    uint8_t* c = &g_extra[h & ((1u << 12) - 1)];
    if (*c < 255) (*c)++;
}

static uint32_t fnv(uint32_t h, const void* p, size_t n) {
    const uint8_t* b = p;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 16777619u; }
    return h;
}

/* A status the fuzzer does not need (a purge of what may be gone, a write a request left
 * behind may race with: the loop around it checks the outcome). The header marks every
 * status warn-unused, and GCC before C23 does not take a (void) cast as an answer. */
#define IGNORE_STATUS(expr) do { if ((expr) != CBL_OK) { /* deliberately ignored */ } } while (0)

static void die(const char* fmt, const char* a, const char* b) {
    fprintf(stderr, "FUZZ INVARIANT VIOLATED (input #%lu): ", g_iter);
    fprintf(stderr, fmt, a ? a : "", b ? b : "");
    fprintf(stderr, "\n");
    abort();
}

static void sleep_ms(int ms) {
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- seeded documents ---------------------------------------------------------------- */

/* The validator: "seed-*" documents are read-only except while the harness seeds them. */
static int starts_with_seed(const char* json) {
    const char* p = json ? strstr(json, "\"_id\":\"") : NULL;
    return p && strncmp(p + 7, "seed-", 5) == 0;
}
static int protect_seeds(void* ctx, const char* new_json, const char* current_json, char* msg, size_t size) {
    (void)ctx;
    if (t_seeding) return 1;
    if (starts_with_seed(new_json) || starts_with_seed(current_json)) {
        __atomic_fetch_add(&g_rejected, 1, __ATOMIC_RELAXED);
        snprintf(msg, size, "the fuzz harness keeps seed-* documents read-only");
        return 0;
    }
    return 1;
}

typedef struct {
    char* get;            /* cbl_doc_get with DELETED|CONFLICTS|REVISIONS, or "<404>" */
    char* leaf[4];        /* cbl_doc_open_revs of each leaf: revs + attachment data */
    char* tree;           /* the revision IDs of the kept tree, in order */
    void* att[2];
    size_t att_len[2];
} snap_t;

typedef struct {
    const char* id;
    void (*seed)(void);
    char* leaves[4];      /* known leaf revision IDs */
    int nleaves;
    const char* atts[2];
    int natts;
    snap_t orig;
} prot_t;

static void seed_plain(void);
static void seed_att(void);
static void seed_conflict(void);
static void seed_deleted(void);
static prot_t g_prot[4] = {
    { "seed-plain", seed_plain, {0}, 0, {0}, 0, {0} },
    { "seed-att", seed_att, {0}, 0, { "hello.txt", "blob.bin" }, 2, {0} },
    { "seed-conflict", seed_conflict, {0}, 0, {0}, 0, {0} },
    { "seed-deleted", seed_deleted, {0}, 0, {0}, 0, {0} },
};
#define NPROT 4
#define LIVE_SEEDS 3      /* seed-deleted is a tombstone */

static void must(cbl_status st, const cbl_error* e, const char* what) {
    if (st != CBL_OK) { fprintf(stderr, "fuzz_listener init: %s: %d %s\n", what, (int)st, e->message); exit(2); }
}

static void set_leaves(prot_t* p, int n, char** revs) {
    for (int i = 0; i < 4; i++) { free(p->leaves[i]); p->leaves[i] = NULL; }
    for (int i = 0; i < n; i++) p->leaves[i] = strdup(revs[i]);
    p->nleaves = n;
}

static void seed_plain(void) {
    cbl_error e;
    char *r1 = NULL, *r2 = NULL, *r3 = NULL;
    must(cbl_doc_put(g_coll, "seed-plain", "{\"title\":\"plain\",\"n\":1}", NULL, 0, NULL, &r1, &e), &e, "seed-plain 1");
    must(cbl_doc_put(g_coll, "seed-plain", "{\"title\":\"plain\",\"n\":2,\"tags\":[\"a\",\"b\"],\"s\":\"caf\\u00e9 \\ud83d\\ude00\"}",
                     r1, 0, NULL, &r2, &e), &e, "seed-plain 2");
    must(cbl_doc_put(g_coll, "seed-plain", "{\"title\":\"plain\",\"n\":3,\"nested\":{\"deep\":[1,2.5,{\"x\":null}],\"t\":true}}",
                     r2, 0, NULL, &r3, &e), &e, "seed-plain 3");
    set_leaves(&g_prot[0], 1, &r3);
    cbl_free(r1); cbl_free(r2); cbl_free(r3);
}

static void seed_att(void) {
    cbl_error e;
    char *r1 = NULL, *r2 = NULL, *digest = NULL;
    must(cbl_doc_put(g_coll, "seed-att", "{\"kind\":\"attachments\",\"_attachments\":{\"hello.txt\":"
                     "{\"content_type\":\"text/plain\",\"data\":\"aGVsbG8gd29ybGQK\"}}}", NULL, 0, NULL, &r1, &e), &e, "seed-att 1");
    unsigned char bin[777];
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof bin; i++) { x ^= x << 13; x ^= x >> 17; x ^= x << 5; bin[i] = (unsigned char)x; }
    must(cbl_db_blob_put(g_db, bin, sizeof bin, &digest, &e), &e, "seed-att blob");
    must(cbl_doc_set_attachment(g_coll, "seed-att", r1, "blob.bin", "application/octet-stream", digest, &r2, &e), &e, "seed-att 2");
    set_leaves(&g_prot[1], 1, &r2);
    cbl_free(r1); cbl_free(r2); cbl_free(digest);
}

static void seed_conflict(void) {
    cbl_error e;
    char* out = NULL;
    must(cbl_collection_docs_put_existing(g_coll,
        "[{\"_id\":\"seed-conflict\",\"_rev\":\"3-c3\",\"_revisions\":{\"start\":3,\"ids\":[\"c3\",\"c2\",\"a1\"]},\"branch\":\"c\"},"
        "{\"_id\":\"seed-conflict\",\"_rev\":\"2-b2\",\"_revisions\":{\"start\":2,\"ids\":[\"b2\",\"a1\"]},\"branch\":\"b\","
        "\"_attachments\":{\"note\":{\"content_type\":\"text/plain\",\"data\":\"YnJhbmNoIGI=\"}}},"
        "{\"_id\":\"seed-conflict\",\"_rev\":\"2-d2\",\"_revisions\":{\"start\":2,\"ids\":[\"d2\",\"a1\"]},\"_deleted\":true}]",
        &out, &e), &e, "seed-conflict");
    if (strstr(out, "\"error\"")) { fprintf(stderr, "fuzz_listener init: seed-conflict: %s\n", out); exit(2); }
    cbl_free(out);
    char* revs[3] = { "3-c3", "2-b2", "2-d2" };
    set_leaves(&g_prot[2], 3, revs);
}

static void seed_deleted(void) {
    cbl_error e;
    char *r1 = NULL, *r2 = NULL;
    must(cbl_doc_put(g_coll, "seed-deleted", "{\"gone\":false}", NULL, 0, NULL, &r1, &e), &e, "seed-deleted 1");
    must(cbl_doc_delete(g_coll, "seed-deleted", r1, &r2, &e), &e, "seed-deleted 2");
    set_leaves(&g_prot[3], 1, &r2);
    cbl_free(r1); cbl_free(r2);
}

/* The revision IDs of cbl_doc_revision_tree, "rev1,rev2,..." ("" when the document is gone). */
static char* tree_revs(const char* id) {
    cbl_error e;
    char* tree = NULL;
    if (cbl_doc_revision_tree(g_coll, id, &tree, &e) != CBL_OK) return strdup("");
    size_t cap = strlen(tree) + 2, len = 0;
    char* out = malloc(cap);
    out[0] = 0;
    for (const char* p = tree; (p = strstr(p, "\"rev\":\"")) != NULL;) {
        p += 7;
        const char* q = strchr(p, '"');
        if (!q) break;
        len += (size_t)snprintf(out + len, cap - len, "%.*s,", (int)(q - p), p);
        p = q;
    }
    cbl_free(tree);
    return out;
}

static void snapshot(const prot_t* p, snap_t* s) {
    cbl_error e;
    memset(s, 0, sizeof *s);
    char* j = NULL;
    s->get = cbl_doc_get(g_coll, p->id, CBL_GET_DELETED | CBL_GET_CONFLICTS | CBL_GET_REVISIONS, &j, &e) == CBL_OK
           ? strdup(j) : strdup("<404>");
    cbl_free(j);
    for (int i = 0; i < p->nleaves; i++) {
        char revs[160];
        snprintf(revs, sizeof revs, "[\"%s\"]", p->leaves[i]);
        j = NULL;
        cbl_status st = cbl_doc_open_revs(g_coll, p->id, revs, "{\"revs\":true,\"attachments\":true}", &j, &e);
        if (st == CBL_OK) s->leaf[i] = strdup(j);
        else { char b[64]; snprintf(b, sizeof b, "<status %d>", (int)st); s->leaf[i] = strdup(b); }
        cbl_free(j);
    }
    s->tree = tree_revs(p->id);
    for (int i = 0; i < p->natts; i++) {
        void* bytes = NULL;
        size_t len = 0;
        if (cbl_doc_get_attachment(g_coll, p->id, p->atts[i], &bytes, &len, &e) == CBL_OK) {
            s->att[i] = malloc(len + 1);
            memcpy(s->att[i], bytes, len);
            s->att_len[i] = len;
            cbl_free(bytes);
        } else {
            s->att_len[i] = (size_t)-1;
        }
    }
}

static void snap_free(snap_t* s) {
    free(s->get);
    for (int i = 0; i < 4; i++) free(s->leaf[i]);
    free(s->tree);
    for (int i = 0; i < 2; i++) free(s->att[i]);
    memset(s, 0, sizeof *s);
}

/* NULL when equal, else what differs (with both versions printed). */
static const char* snap_diff(const prot_t* p, const snap_t* a, const snap_t* b, int print) {
    const char* what = NULL;
    if (strcmp(a->get, b->get) != 0) what = "current revision (cbl_doc_get)";
    for (int i = 0; !what && i < p->nleaves; i++) if (strcmp(a->leaf[i], b->leaf[i]) != 0) what = "a leaf (cbl_doc_open_revs)";
    if (!what && strcmp(a->tree, b->tree) != 0) what = "the revision tree";
    for (int i = 0; !what && i < p->natts; i++) {
        if (a->att_len[i] != b->att_len[i] || (a->att_len[i] != (size_t)-1 && memcmp(a->att[i], b->att[i], a->att_len[i]) != 0))
            what = "attachment content";
    }
    if (what && print) {
        fprintf(stderr, "seeded document %s: %s differs\n  stored:  %s | %s\n  now:     %s | %s\n",
                p->id, what, a->get, a->tree, b->get, b->tree);
        for (int i = 0; i < p->nleaves; i++) fprintf(stderr, "  leaf %s\n    stored: %.400s\n    now:    %.400s\n", p->leaves[i], a->leaf[i], b->leaf[i]);
    }
    return what;
}

static void reseed(prot_t* p) {
    cbl_error e;
    t_seeding = 1;
    IGNORE_STATUS(cbl_doc_purge(g_coll, p->id, &e));   /* seed() checks what it writes */
    p->seed();
    t_seeding = 0;
    snap_t s;
    snapshot(p, &s);
    if (snap_diff(p, &p->orig, &s, 1)) die("re-creating the purged seed %s gave a different document", p->id, NULL);
    snap_free(&s);
    g_reseeds++;
}

/* Strict: every seeded document exactly as stored. Tolerant (after a possible _purge):
 * each leaf intact or purged, no unknown revision; purged seeds are re-created. */
static void check_seeds(int tolerant) {
    for (int k = 0; k < NPROT; k++) {
        prot_t* p = &g_prot[k];
        snap_t s;
        snapshot(p, &s);
        const char* what = NULL;
        if (!tolerant) {
            what = snap_diff(p, &p->orig, &s, 1);
            if (what) die("seeded document %s damaged: %s", p->id, what);
        } else if (snap_diff(p, &p->orig, &s, 0)) {
            for (int i = 0; i < p->nleaves; i++) {
                if (strcmp(s.leaf[i], p->orig.leaf[i]) != 0 && !strstr(s.leaf[i], "\"missing\"") && strncmp(s.leaf[i], "<status 404>", 12) != 0)
                    die("seeded document %s: leaf damaged (neither intact nor purged): %s", p->id, s.leaf[i]);
            }
            size_t hl = strlen(p->orig.tree) + 2;
            char* hay = malloc(hl + 1);
            snprintf(hay, hl + 1, ",%s", p->orig.tree);
            for (char* r = s.tree; *r;) {
                char* c = strchr(r, ',');
                if (!c) break;
                char needle[200];
                snprintf(needle, sizeof needle, ",%.*s,", (int)(c - r), r);
                if (!strstr(hay, needle)) die("seeded document %s gained an unknown revision: %s", p->id, needle + 1);
                r = c + 1;
            }
            free(hay);
            reseed(p);
        }
        snap_free(&s);
    }
}

/* ---- resources ------------------------------------------------------------------------- */

static int count_dir(const char* path) {
    DIR* d = opendir(path);
    if (!d) return -1;
    int n = 0;
    struct dirent* ent;
    while ((ent = readdir(d)) != NULL) if (ent->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static void check_resources(void) {
    /* Live heap (ASan's count, not RSS: ASan's allocator keeps freed memory): the first
     * check sets the level, after libFuzzer's own tables are made. */
    g_last_heap = __sanitizer_get_current_allocated_bytes();
    if (!g_base_heap) g_base_heap = g_last_heap;
    if (g_last_heap > g_max_heap) g_max_heap = g_last_heap;
    if (g_last_heap > g_base_heap + ((size_t)HEAP_SLACK_MB << 20)) {
        char a[64], b[64];
        snprintf(a, sizeof a, "%.1f MB", g_last_heap / 1048576.0);
        snprintf(b, sizeof b, "%.1f MB", g_base_heap / 1048576.0);
        die("live heap grew to %s (%s at the first check): memory kept per request", a, b);
    }
    int fds = 0, threads = 0;
    for (int waited = 0;; waited += 100) {
        fds = count_dir("/proc/self/fd");
        threads = count_dir("/proc/self/task");
        if (fds > g_max_fds) g_max_fds = fds;
        if (threads > g_max_threads) g_max_threads = threads;
        if (fds <= g_base_fds + FD_SLACK && threads <= g_base_threads + THREAD_SLACK) return;
        if (waited >= 15000) break;     /* requests the fuzzer left behind get 15 s to end */
        sleep_ms(100);
    }
    char a[96], b[96];
    snprintf(a, sizeof a, "%d file descriptors, %d threads", fds, threads);
    snprintf(b, sizeof b, "%d and %d after start-up", g_base_fds, g_base_threads);
    die("resources not released: %s (%s)", a, b);
}

/* ---- HTTP -------------------------------------------------------------------------------- */

static int connect_to(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = { 2, 0 };
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr*)&a, sizeof a) == 0) return fd;
    if (errno == EINTR) {               /* libFuzzer's SIGALRM: the connect goes on; wait for it */
        struct pollfd pfd = { fd, POLLOUT, 0 };
        int r, err = 0;
        socklen_t len = sizeof err;
        do r = poll(&pfd, 1, 5000); while (r < 0 && errno == EINTR);
        if (r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) return fd;
        errno = r == 1 ? err : ETIMEDOUT;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

static void send_all(int fd, const uint8_t* p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;          /* the server closed early or stopped reading: read what it said */
        p += w;
        n -= (size_t)w;
    }
}

/* Reads until EOF (0), the deadline (1) or an error such as a reset (2). Keeps the first
 * `cap` bytes; *total counts them all. */
static int read_answer(int fd, uint8_t* buf, size_t cap, size_t* kept, size_t* total, int timeout_ms) {
    *kept = *total = 0;
    long deadline = now_ms() + timeout_ms;
    uint8_t sink[16384];
    for (;;) {
        long left = deadline - now_ms();
        if (left <= 0) return 1;
        struct pollfd pfd = { fd, POLLIN, 0 };
        int r = poll(&pfd, 1, (int)left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 1;
        uint8_t* dst = *kept < cap ? buf + *kept : sink;
        size_t room = *kept < cap ? cap - *kept : sizeof sink;
        ssize_t n = recv(fd, dst, room, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) return 0;
        if (n < 0) return 2;
        if (dst != sink) *kept += (size_t)n;
        *total += (size_t)n;
    }
}

static void close_conn(int fd, int reset) {
    if (reset) {
        struct linger l = { 1, 0 };
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    close(fd);
}

/* One request on its own connection for the harness's own checks; the status, or -1. */
static int probe(uint16_t port, const char* req, const char* must_contain, int timeout_ms) {
    int fd = connect_to(port);
    if (fd < 0) return -1;
    send_all(fd, (const uint8_t*)req, strlen(req));
    shutdown(fd, SHUT_WR);
    static uint8_t buf[65536];
    size_t kept, total;
    int how = read_answer(fd, buf, sizeof buf - 1, &kept, &total, timeout_ms);
    close_conn(fd, how != 0);
    buf[kept] = 0;
    if (kept < 12 || memcmp(buf, "HTTP/1.1 ", 9) != 0) return -1;
    if (must_contain && !strstr((char*)buf, must_contain)) return -2;
    return atoi((char*)buf + 9);
}

static void check_alive(void) {
    char req[256], want[160];
    snprintf(req, sizeof req, "GET /db/seed-plain HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    snprintf(want, sizeof want, "\"_rev\":\"%s\"", g_prot[0].leaves[0]);
    int st = probe(g_port, req, want, 15000);
    if (st != 200) {
        char s[32];
        snprintf(s, sizeof s, "%d", st);
        die("the listener no longer answers GET /db/seed-plain with 200 and its revision within 15 s (got %s)", s, NULL);
    }
    if (g_iter % (PROBE_EVERY * 8) == 0) {
        st = probe(g_auth_port, "GET /db HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic ZnV6ejpzZWNyZXQ=\r\n"
                                "Connection: close\r\n\r\n", "\"db_name\":\"db\"", 15000);
        if (st != 200) {
            char s[32];
            snprintf(s, sizeof s, "%d", st);
            die("the listener with users no longer answers an authenticated GET /db with 200 (got %s)", s, NULL);
        }
    }
}

/* ---- building the request ---------------------------------------------------------------- */

static int has_ci(const uint8_t* d, size_t n, const char* needle) {
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++) {
        size_t k = 0;
        while (k < m && (d[i + k] | 0x20) == (uint8_t)(needle[k] | 0x20)) k++;
        if (k == m) return 1;
    }
    return 0;
}

static int hexv(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
    return -1;
}

/* Whether the bytes may hold a path segment that decodes to "_purge" (each character
 * literal or percent-escaped, as RequestPath decodes it). */
static int may_name_purge(const uint8_t* d, size_t n) {
    static const char word[] = "_purge";
    for (size_t i = 0; i < n; i++) {
        size_t j = i, k = 0;
        while (k < 6 && j < n) {
            if (d[j] == (uint8_t)word[k]) { j++; k++; continue; }
            if (d[j] == '%' && j + 2 < n && hexv(d[j + 1]) >= 0 && hexv(d[j + 2]) >= 0
                && hexv(d[j + 1]) * 16 + hexv(d[j + 2]) == word[k]) { j += 3; k++; continue; }
            break;
        }
        if (k == 6) return 1;
    }
    return 0;
}

/* Percent-escapes what a request target may not hold; keeps '%' (malformed escapes are
 * part of what is fuzzed). */
static size_t escape_query(const uint8_t* d, size_t n, char* out) {
    static const char ok[] = "-._~!$&'()*+,;=:@/?%[]\"";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = d[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c && strchr(ok, c))) out[o++] = (char)c;
        else o += (size_t)sprintf(out + o, "%%%02X", c);
    }
    out[o] = 0;
    return o;
}

/* Selector (first byte & 7) for inputs that hold no "HTTP/1.": the rest is the body of
 *   0 POST /db/_bulk_docs          1 PUT /db/doc?new_edits=false (multipart/related; boundary=abc)
 *   2 POST /db/_revs_diff          3 POST /db/_bulk_get?revs=true&attachments=true
 *   5 POST /_session (form)        7 POST /db/_all_docs?include_docs=true
 * or the query string of
 *   4 GET /db/_changes?<rest>      6 GET /db/<a seed, bits 3-4>?<rest>
 * Bit 6: Accept: multipart/mixed. Bit 7: Content-Encoding: gzip on bodies. */
static uint8_t* build_request(const uint8_t* data, size_t size, size_t* out_len, int* to_auth, int* sel_out) {
    static const char* const seeds[4] = { "seed-conflict", "seed-att", "seed-plain", "seed-deleted" };
    *to_auth = 0;
    if (memmem(data, size, "HTTP/1.", 7)) {
        *sel_out = 8;
        *to_auth = has_ci(data, size, "authorization:") || has_ci(data, size, "cookie:") || memmem(data, size, "/_session", 9) != NULL;
        uint8_t* r = malloc(size ? size : 1);
        memcpy(r, data, size);
        *out_len = size;
        return r;
    }
    uint8_t b0 = size ? data[0] : 0;
    const uint8_t* rest = size ? data + 1 : data;
    size_t n = size ? size - 1 : 0;
    int sel = b0 & 7;
    *sel_out = sel;
    const char* accept = (b0 & 0x40) ? "Accept: multipart/mixed\r\n" : "Accept: application/json\r\n";
    const char* gzip = (b0 & 0x80) ? "Content-Encoding: gzip\r\n" : "";
    char head[512];
    int hl;
    if (sel == 4 || sel == 6) {
        char* q = malloc(n * 3 + 1);
        escape_query(rest, n, q);
        size_t cap = strlen(q) + 256;
        uint8_t* r = malloc(cap);
        int l = snprintf((char*)r, cap, "GET /db/%s?%s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n",
                         sel == 4 ? "_changes" : seeds[(b0 >> 3) & 3], q, accept);
        free(q);
        *out_len = (size_t)l;
        return r;
    }
    const char* line = "POST /db/_bulk_docs";
    const char* type = "application/json";
    switch (sel) {
    case 1: line = "PUT /db/doc?new_edits=false"; type = "multipart/related; boundary=\"abc\""; break;
    case 2: line = "POST /db/_revs_diff"; break;
    case 3: line = "POST /db/_bulk_get?revs=true&attachments=true"; break;
    case 5: line = "POST /_session"; type = "application/x-www-form-urlencoded"; *to_auth = 1; break;
    case 7: line = "POST /db/_all_docs?include_docs=true"; break;
    default: break;
    }
    hl = snprintf(head, sizeof head, "%s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: %s\r\n%s%s"
                  "Content-Length: %zu\r\n\r\n", line, type, accept, gzip, n);
    uint8_t* r = malloc((size_t)hl + n + 1);
    memcpy(r, head, (size_t)hl);
    if (n) memcpy(r + hl, rest, n);
    *out_len = (size_t)hl + n;
    return r;
}

/* ---- answers ------------------------------------------------------------------------------ */

/* Walks the status lines in what came back: checks the first is HTTP, feeds the answer
 * signatures to libFuzzer, counts statuses. Returns 1 when a 500 was seen. */
static int digest_answer(const uint8_t* buf, size_t len, int how, int sel) {
    if (len >= 9 && memcmp(buf, "HTTP/1.", 7) != 0) {
        char first[64];
        snprintf(first, sizeof first, "%.40s", (const char*)buf);
        die("the answer does not start with an HTTP/1.x status line: \"%s\"", first, NULL);
    }
    int saw500 = 0, answers = 0;
    uint32_t base = fnv(2166136261u, &sel, sizeof sel);
    for (size_t i = 0; i + 12 <= len && answers < 8; i++) {
        if (!(i == 0 || buf[i - 1] == '\n') || memcmp(buf + i, "HTTP/1.", 7) != 0 || buf[i + 8] != ' ') continue;
        int status = atoi((const char*)buf + i + 9);
        answers++;
        if (status >= 100 && status < 600) g_answers[status / 100]++;
        if (status == 500) saw500 = 1;
        /* The end of this answer's window: the next status line, or 4 KB. */
        size_t end = i + 9, lim = i + 4096 < len ? i + 4096 : len;
        while (end + 7 < lim && !(buf[end - 1] == '\n' && memcmp(buf + end, "HTTP/1.", 7) == 0)) end++;
        if (end + 7 >= lim) end = lim;
        uint32_t h = fnv(base, &status, sizeof status);
        h = fnv(h, &answers, sizeof answers);
        const uint8_t* e = memmem(buf + i, end - i, "\"error\":\"", 9);
        if (e) {
            const uint8_t* s = e + 9;
            size_t k = 0;
            while (s + k < buf + end && k < 32 && s[k] != '"') k++;
            h = fnv(h, s, k);
            const uint8_t* rs = memmem(s, (size_t)(buf + end - s), "\"reason\":\"", 10);
            if (rs) {
                rs += 10;
                k = 0;
                while (rs + k < buf + end && k < 20 && rs[k] != '"' && rs[k] != '\'' && rs[k] != ':' && rs[k] != '\\'
                       && !(rs[k] >= '0' && rs[k] <= '9')) k++;
                feature(fnv(h, rs, k));
            }
        }
        feature(h);
        const uint8_t* ct = memmem(buf + i, end - i, "Content-Type: ", 14);
        if (ct) {
            ct += 14;
            size_t k = 0;
            while (ct + k < buf + end && k < 40 && ct[k] != ';' && ct[k] != '\r') k++;
            feature(fnv(h, ct, k));
        }
    }
    feature(fnv(base ^ 0x5bd1e995u, &how, sizeof how) + (uint32_t)answers);
    return saw500;
}

static void save_5xx(const uint8_t* data, size_t size) {
    if (!g_5xx_dir) return;
    uint32_t h = fnv(2166136261u, data, size);
    char path[1024];
    snprintf(path, sizeof path, "%s/500-%08x", g_5xx_dir, h);
    FILE* f = fopen(path, "wb");
    if (!f) return;
    fwrite(data, 1, size, f);
    fclose(f);
}

/* ---- scratch reset ---------------------------------------------------------------------- */

/* Decodes the JSON string at p (after its opening quote); returns a malloc'd copy and
 * sets *end after the closing quote. */
static char* json_string(const char* p, const char** end) {
    size_t cap = strlen(p) + 1, o = 0;
    char* out = malloc(cap);
    while (*p && *p != '"') {
        if (*p != '\\') { out[o++] = *p++; continue; }
        p++;
        char c = *p ? *p++ : 0;
        switch (c) {
        case 'n': out[o++] = '\n'; break;
        case 't': out[o++] = '\t'; break;
        case 'r': out[o++] = '\r'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'u': {
            unsigned cp = 0;
            for (int i = 0; i < 4 && *p; i++) cp = cp * 16 + (unsigned)hexv((uint8_t)*p++);
            if (cp >= 0xD800 && cp < 0xDC00 && p[0] == '\\' && p[1] == 'u') {
                unsigned lo = 0;
                p += 2;
                for (int i = 0; i < 4 && *p; i++) lo = lo * 16 + (unsigned)hexv((uint8_t)*p++);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp < 0x80) out[o++] = (char)cp;
            else if (cp < 0x800) { out[o++] = (char)(0xC0 | (cp >> 6)); out[o++] = (char)(0x80 | (cp & 0x3F)); }
            else if (cp < 0x10000) { out[o++] = (char)(0xE0 | (cp >> 12)); out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[o++] = (char)(0x80 | (cp & 0x3F)); }
            else { out[o++] = (char)(0xF0 | (cp >> 18)); out[o++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                   out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[o++] = (char)(0x80 | (cp & 0x3F)); }
            break;
        }
        default: out[o++] = c; break;
        }
    }
    out[o] = 0;
    *end = *p ? p + 1 : p;
    return out;
}

static int is_protected(const char* id) {
    for (int k = 0; k < NPROT; k++) if (strcmp(id, g_prot[k].id) == 0) return 1;
    return 0;
}

/* Purges every document the inputs wrote, deletes the collections they made, and checks
 * the count comes back to the seeded documents (+ the scratch "doc"). */
static void reset_scratch(void) {
    cbl_error e;
    uint64_t count = 0;
    for (int attempt = 0; attempt < 6; attempt++) {
        char* all = NULL;
        if (cbl_collection_all_docs(g_coll, "{\"all_docs_mode\":\"by_sequence\"}", &all, &e) != CBL_OK)
            die("cbl_collection_all_docs failed: %s", e.message, NULL);
        for (const char* p = all; (p = strstr(p, "{\"id\":\"")) != NULL;) {
            char* id = json_string(p + 7, &p);
            if (strncmp(id, "seed-", 5) == 0) {
                if (!is_protected(id)) die("document %s exists although the validator refuses every seed-* write", id, NULL);
            } else if (strcmp(id, "doc") != 0) {
                IGNORE_STATUS(cbl_doc_purge(g_coll, id, &e));
            }
            free(id);
        }
        cbl_free(all);
        IGNORE_STATUS(cbl_doc_purge(g_coll, "doc", &e));
        IGNORE_STATUS(cbl_doc_put(g_coll, "doc", "{\"scratch\":true}", NULL, 0, NULL, NULL, &e));
        if (cbl_db_count(g_db, &count, &e) != CBL_OK) die("cbl_db_count failed: %s", e.message, NULL);
        if (count == LIVE_SEEDS + 1) break;
        sleep_ms(250);                  /* a request left behind may still be writing */
    }
    if (count != LIVE_SEEDS + 1) {
        char c[32];
        snprintf(c, sizeof c, "%llu", (unsigned long long)count);
        die("after purging the scratch documents the count is %s, not the seeded 4", c, NULL);
    }
    /* Collections made with PUT /db.scope.collection. */
    char* scopes = NULL;
    if (cbl_db_scope_names(g_db, &scopes, &e) == CBL_OK) {
        for (const char* p = scopes; (p = strchr(p, '"')) != NULL;) {
            char* scope = json_string(p + 1, &p);
            char* colls = NULL;
            if (cbl_db_collection_names(g_db, scope, &colls, &e) == CBL_OK) {
                for (const char* q = colls; (q = strchr(q, '"')) != NULL;) {
                    char* name = json_string(q + 1, &q);
                    if ((strcmp(scope, "_default") != 0 || strcmp(name, "_default") != 0) &&
                        cbl_db_delete_collection(g_db, scope, name, &e) != CBL_OK)
                        die("cbl_db_delete_collection failed: %s", e.message, NULL);
                    free(name);
                }
                cbl_free(colls);
            }
            free(scope);
        }
        cbl_free(scopes);
    }
    if (cbl_local_put(g_coll, "seed-ckpt", "{\"lastSequence\":\"3\"}", NULL, NULL, &e) != CBL_OK)
        die("cbl_local_put of the checkpoint failed: %s", e.message, NULL);
    if (++g_resets % 4 == 0 && cbl_db_compact(g_db, &e) != CBL_OK && e.code != CBL_BUSY)
        die("cbl_db_compact failed: %s", e.message, NULL);
}

static void integrity(void) {
    cbl_error e;
    char* rep = NULL;
    if (cbl_db_integrity_check(g_db, &rep, &e) != CBL_OK) die("integrity check: %s %s", e.message, rep);
    cbl_free(rep);
}

/* ---- set-up and tear-down ------------------------------------------------------------ */

static void rm_tree(const char* path) {
    DIR* d = opendir(path);
    if (d) {
        struct dirent* ent;
        while ((ent = readdir(d)) != NULL) {
            if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, ent->d_name);
            struct stat st;
            if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) rm_tree(sub); else unlink(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

static void finish(void) {
    if (!g_db) return;
    check_alive();
    check_seeds(0);
    integrity();
    fprintf(stderr, "fuzz_listener: %lu inputs; answers 1xx %lu, 2xx %lu, 3xx %lu, 4xx %lu, 5xx %lu; no answer %lu, "
            "timed out %lu, connection errors %lu; validator refusals %lu; possible purges %lu (seeds re-created %lu); "
            "checks %lu, resets %lu; fds %d..%d, threads %d..%d; live heap %.1f MB at the first check, %.1f MB at most, %.1f MB at the last%s\n",
            g_iter, g_answers[1], g_answers[2], g_answers[3], g_answers[4], g_answers[5], g_no_answer, g_timeouts,
            g_conn_errors, __atomic_load_n(&g_rejected, __ATOMIC_RELAXED), g_purge_suspects, g_reseeds, g_checks,
            g_resets, g_base_fds, g_max_fds, g_base_threads, g_max_threads, g_base_heap / 1048576.0, g_max_heap / 1048576.0,
            g_last_heap / 1048576.0, g_checks ? "" : " (no check ran)");
    cbl_server_stop(g_server, 2000);
    cbl_server_stop(g_auth_server, 2000);
    g_server = g_auth_server = NULL;
    for (int k = 0; k < NPROT; k++) {
        snap_free(&g_prot[k].orig);
        for (int i = 0; i < 4; i++) { free(g_prot[k].leaves[i]); g_prot[k].leaves[i] = NULL; }
    }
    cbl_collection_release(g_coll);
    cbl_error e;
    if (cbl_db_close(g_db, &e) != CBL_OK) die("cbl_db_close failed: %s", e.message, NULL);
    g_db = NULL;
    rm_tree(g_dir);
}

int LLVMFuzzerInitialize(int* argc, char*** argv) {
    (void)argc; (void)argv;
    signal(SIGPIPE, SIG_IGN);
    const char* base = getenv("FUZZ_TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/cblite-fzl-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(g_dir)) { perror("mkdtemp"); exit(2); }
    const char* t = getenv("FUZZ_LISTENER_TIMEOUT_MS");
    if (t && atoi(t) > 0) g_timeout_ms = atoi(t);
    g_verbose = getenv("FUZZ_LISTENER_VERBOSE") && atoi(getenv("FUZZ_LISTENER_VERBOSE"));
    g_strict_5xx = getenv("FUZZ_LISTENER_STRICT_5XX") && atoi(getenv("FUZZ_LISTENER_STRICT_5XX"));
    g_5xx_dir = getenv("FUZZ_LISTENER_5XX_DIR");
    if (g_5xx_dir && !*g_5xx_dir) g_5xx_dir = NULL;
    if (!g_verbose)
        for (int d = 0; d < CBL_LOG_DOMAIN_COUNT; d++)
            if (cbl_log_set_level((cbl_log_domain)d, CBL_LOG_NONE, NULL) != CBL_OK) die("cbl_log_set_level failed%s%s", NULL, NULL);

    cbl_error e;
    must(cbl_db_open("fuzz", g_dir, NULL, &g_db, &e), &e, "open");
    must(cbl_db_default_collection(g_db, &g_coll, &e), &e, "default collection");
    t_seeding = 1;
    for (int k = 0; k < NPROT; k++) g_prot[k].seed();
    t_seeding = 0;
    must(cbl_collection_set_validator(g_coll, "seeds-read-only", protect_seeds, NULL, &e), &e, "validator");
    must(cbl_local_put(g_coll, "seed-ckpt", "{\"lastSequence\":\"3\"}", NULL, NULL, &e), &e, "local");
    must(cbl_doc_put(g_coll, "doc", "{\"scratch\":true}", NULL, 0, NULL, NULL, &e), &e, "doc");
    for (int k = 0; k < NPROT; k++) snapshot(&g_prot[k], &g_prot[k].orig);
    if (g_prot[1].orig.att_len[1] != 777 || strstr(g_prot[0].orig.get, "\"_rev\":\"3-") == NULL) {
        fprintf(stderr, "fuzz_listener init: unexpected seeds: %s\n", g_prot[0].orig.get);
        exit(2);
    }

    const char* limits = "\"limits\":{\"max_body_bytes\":1048576,\"max_document_bytes\":262144,\"header_timeout_ms\":5000}";
    char cfg[512];
    snprintf(cfg, sizeof cfg, "{\"port\":0,%s}", limits);
    must(cbl_server_start(cfg, &g_server, &e), &e, "cbl_server_start");
    snprintf(cfg, sizeof cfg, "{\"port\":0,\"users\":{\"fuzz\":\"secret\"},%s}", limits);
    must(cbl_server_start(cfg, &g_auth_server, &e), &e, "cbl_server_start (users)");
    must(cbl_server_serve(g_server, "db", g_db, &e), &e, "cbl_server_serve");
    must(cbl_server_serve(g_auth_server, "db", g_db, &e), &e, "cbl_server_serve (users)");
    must(cbl_server_port(g_server, &g_port, &e), &e, "port");
    must(cbl_server_port(g_auth_server, &g_auth_port, &e), &e, "port (users)");
    check_alive();
    g_iter = PROBE_EVERY * 8;
    check_alive();                       /* both listeners */
    g_iter = 0;
    g_base_fds = g_max_fds = count_dir("/proc/self/fd");
    g_base_threads = g_max_threads = count_dir("/proc/self/task");
    atexit(finish);
    fprintf(stderr, "fuzz_listener: ports %u and %u (users), database in %s, %d ms per input at most\n",
            (unsigned)g_port, (unsigned)g_auth_port, g_dir, g_timeout_ms);
    return 0;
}

/* ---- one input ------------------------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    g_iter++;
    size_t len;
    int to_auth, sel;
    uint8_t* req = build_request(data, size, &len, &to_auth, &sel);
    int purge = may_name_purge(req, len);
    static uint8_t buf[1 << 16];
    size_t kept = 0, total = 0;
    int how = 3;
    long t0 = now_ms();
    int fd = connect_to(to_auth ? g_auth_port : g_port);
    if (fd < 0) {
        if (++g_conn_errors <= 5) fprintf(stderr, "fuzz_listener: input #%lu: connect failed after %ld ms: %s\n", g_iter, now_ms() - t0, strerror(errno));
    } else {
        send_all(fd, req, len);
        shutdown(fd, SHUT_WR);
        how = read_answer(fd, buf, sizeof buf - 1, &kept, &total, g_timeout_ms);
        close_conn(fd, how != 0);
        if (how == 1) g_timeouts++;
        if (total == 0) g_no_answer++;
    }
    buf[kept] = 0;
    if (digest_answer(buf, kept, how, sel)) {
        save_5xx(data, size);
        if (g_strict_5xx) die("the listener answered 500 (FUZZ_LISTENER_STRICT_5XX): %.200s", (const char*)buf, NULL);
    }
    if (g_verbose) {
        const char* reason = strstr((const char*)buf, "\"reason\":");
        fprintf(stderr, "#%lu sel %d %s: %zu bytes answered (%s): %.*s %.*s\n", g_iter, sel, to_auth ? "users" : "open", total,
                how == 0 ? "closed" : how == 1 ? "timeout" : how == 2 ? "reset" : "no connection",
                (int)strcspn((const char*)buf, "\r\n"), (const char*)buf, reason ? (int)strcspn(reason, "}") : 0, reason ? reason : "");
    }
    free(req);

    if (purge) { g_purge_suspects++; check_seeds(1); }
    if (g_iter % PROBE_EVERY == 0) check_alive();
    if (g_iter % CHECK_EVERY == 0) {
        g_checks++;
        check_seeds(0);
        integrity();
        check_resources();
    }
    if (g_iter % RESET_EVERY == 0) reset_scratch();
    return 0;
}
