/*
 * bench_listener.c — the listener phase of `make bench` (issue 10): the same documents
 * written and read back through the C API and through the listener over HTTP, in one
 * process, so the two are measured in the same run on the same machine.
 *
 *   write: N documents in batches of 1,000 — cbl_collection_docs_save / POST /{db}/_bulk_docs
 *   read:  every document by ID, in the workload's shuffled order — cbl_doc_get /
 *          GET /{db}/{id} on one keep-alive connection
 *
 * Usage: bench_listener --n N --dir DIR [--runs R]
 * Prints per run, then the medians:
 *   listener <what> <ms> <docs_per_s>
 * and "listener overhead_us <µs per request above the C API>", the loopback round trip
 * of a do-nothing server in the same run, and the overhead above both.
 * The HTTP client is a small blocking one written here (no library in the way of what
 * is measured): requests with Content-Length, responses with Content-Length or chunked.
 */
#define _GNU_SOURCE     /* memmem */
#include "bench_common.h"
#include "cblite.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <pthread.h>
#include <unistd.h>

static cbl_error err;

static void ck(cbl_status st, const char* call) {
    if (st != CBL_OK) bench_die("%s: %d %s", call, err.code, err.message);
}

/* ---- a minimal HTTP/1.1 client on one keep-alive connection ------------------------ */
typedef struct conn {
    int fd;
    char* buf;          /* received, not yet consumed */
    size_t len, cap;
} conn;

static void conn_open(conn* c, uint16_t port) {
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0) bench_die("socket failed");
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr*)&a, sizeof a) != 0) bench_die("connect to the listener failed");
    c->cap = 1 << 16;
    c->buf = malloc(c->cap);
    c->len = 0;
}

static void send_all(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) bench_die("write to the listener failed");
        p += w;
        n -= (size_t)w;
    }
}

/* Reads more bytes into the buffer (growing it). */
static void fill(conn* c) {
    if (c->cap - c->len < 4096) {
        c->cap *= 2;
        c->buf = realloc(c->buf, c->cap);
    }
    ssize_t r = read(c->fd, c->buf + c->len, c->cap - c->len);
    if (r <= 0) bench_die("the listener closed the connection");
    c->len += (size_t)r;
}

static void consume(conn* c, size_t n) {
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

/* Finds "\r\n" from `from`; returns its offset or -1. */
static long find_crlf(const conn* c, size_t from) {
    for (size_t i = from; i + 1 < c->len; i++)
        if (c->buf[i] == '\r' && c->buf[i + 1] == '\n') return (long)i;
    return -1;
}

/* Sends one request and reads the whole response; returns the status. The body goes
 * to *out_body (NUL-terminated; the caller frees) unless out_body is NULL. */
static int request(conn* c, const char* method, const char* path, const char* body, size_t body_len,
                   char** out_body, size_t* out_len) {
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                     method, path, body_len);
    send_all(c->fd, head, (size_t)n);
    if (body_len) send_all(c->fd, body, body_len);
    /* headers */
    long end;
    size_t scan = 0;
    while (1) {
        end = -1;
        for (size_t i = scan; i + 3 < c->len; i++)
            if (memcmp(c->buf + i, "\r\n\r\n", 4) == 0) { end = (long)i; break; }
        if (end >= 0) break;
        scan = c->len > 3 ? c->len - 3 : 0;
        fill(c);
    }
    int status = atoi(c->buf + 9);
    long long content_length = -1;
    int chunked = 0;
    for (char* p = c->buf; p < c->buf + end; ) {
        char* eol = memchr(p, '\r', (size_t)(c->buf + end - p));
        if (!eol) eol = c->buf + end;
        if (strncasecmp(p, "Content-Length:", 15) == 0) content_length = atoll(p + 15);
        if (strncasecmp(p, "Transfer-Encoding:", 18) == 0 && strstr(p, "chunked") && strstr(p, "chunked") < eol) chunked = 1;
        p = eol + 2;
    }
    consume(c, (size_t)end + 4);
    size_t got = 0;
    char* out = NULL;
    if (content_length >= 0) {
        while (c->len < (size_t)content_length) fill(c);
        if (out_body) { out = malloc((size_t)content_length + 1); memcpy(out, c->buf, (size_t)content_length); }
        got = (size_t)content_length;
        consume(c, (size_t)content_length);
    } else if (chunked) {
        size_t cap = 4096;
        if (out_body) out = malloc(cap);
        while (1) {
            long eol;
            while ((eol = find_crlf(c, 0)) < 0) fill(c);
            size_t size = strtoul(c->buf, NULL, 16);
            consume(c, (size_t)eol + 2);
            while (c->len < size + 2) fill(c);
            if (out_body && size) {
                while (got + size + 1 > cap) cap *= 2;
                out = realloc(out, cap);
                memcpy(out + got, c->buf, size);
            }
            got += size;
            consume(c, size + 2);
            if (size == 0) break;
        }
    } else {
        bench_die("response without a length (status %d)", status);
    }
    if (out_body) { out[got] = 0; *out_body = out; if (out_len) *out_len = got; }
    return status;
}

/* ---- the loopback baseline: the same client against a server that does nothing ------- */
/* A thread answering every request on one connection with a fixed 200, so the report can
 * separate the listener's own cost from the machine's TCP round trip. */
static int echo_listen_fd;

static void* echo_serve(void* arg) {
    (void)arg;
    int fd = accept(echo_listen_fd, NULL, NULL);
    if (fd < 0) return NULL;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    char buf[8192];
    size_t len = 0;
    while (1) {
        ssize_t r = read(fd, buf + len, sizeof buf - len);
        if (r <= 0) break;
        len += (size_t)r;
        char* end;
        while ((end = memmem(buf, len, "\r\n\r\n", 4)) != NULL) {     /* GETs: no body */
            size_t used = (size_t)(end + 4 - buf);
            send_all(fd, resp, sizeof resp - 1);
            memmove(buf, buf + used, len - used);
            len -= used;
        }
    }
    close(fd);
    return NULL;
}

/* Per-request milliseconds of `n` GETs against the do-nothing server. */
static double loopback_ms(long n) {
    echo_listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    if (bind(echo_listen_fd, (struct sockaddr*)&a, sizeof a) != 0 || listen(echo_listen_fd, 1) != 0 ||
        getsockname(echo_listen_fd, (struct sockaddr*)&a, &alen) != 0) bench_die("loopback baseline: bind failed");
    pthread_t t;
    pthread_create(&t, NULL, echo_serve, NULL);
    conn c;
    conn_open(&c, ntohs(a.sin_port));
    double t0 = bench_now_ms();
    for (long k = 0; k < n; k++) {
        if (request(&c, "GET", "/x", NULL, 0, NULL, NULL) != 200) bench_die("loopback baseline: bad answer");
    }
    double ms = bench_now_ms() - t0;
    close(c.fd);
    free(c.buf);
    pthread_join(t, NULL);
    close(echo_listen_fd);
    return ms;
}

/* ---- the measured work ------------------------------------------------------------- */

/* The JSON array of documents lo..hi-1 (with their IDs). */



int main(int argc, char** argv) {
    long n = 20000;
    int runs = 3;
    const char* dir = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--n") == 0) n = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
        else if (strcmp(argv[i], "--runs") == 0) runs = atoi(argv[i + 1]);
        else bench_die("usage: %s --n N --dir DIR [--runs R]", argv[0]);
    }
    if (!dir || n < 1 || runs < 1 || runs > 99) bench_die("usage: %s --n N --dir DIR [--runs R]", argv[0]);
    char* json = malloc((size_t)BENCH_BATCH * (BENCH_BODY_SIZE + BENCH_ID_SIZE + 16) + 16);
    long* order = bench_read_order(n);
    double capi_w[99], http_w[99], capi_r[99], http_r[99], echo_r[99];

    for (int run = 0; run < runs; run++) {
        bench_remove_tree(dir);
        bench_mkdirs(dir);
        cbl_db *api_db, *http_db;
        cbl_collection *api, *served;
        ck(cbl_db_open("capi", dir, NULL, &api_db, &err), "cbl_db_open");
        ck(cbl_db_open("http", dir, NULL, &http_db, &err), "cbl_db_open");
        ck(cbl_db_default_collection(api_db, &api, &err), "cbl_db_default_collection");
        ck(cbl_db_default_collection(http_db, &served, &err), "cbl_db_default_collection");
        cbl_server* server;
        ck(cbl_server_start("{\"port\":0}", &server, &err), "cbl_server_start");
        ck(cbl_server_serve(server, "http", http_db, &err), "cbl_server_serve");
        uint16_t port;
        ck(cbl_server_port(server, &port, &err), "cbl_server_port");
        conn c;
        conn_open(&c, port);

        /* write: C API */
        double t = bench_now_ms();
        for (long lo = 0; lo < n; lo += BENCH_BATCH) {
            long hi = lo + BENCH_BATCH < n ? lo + BENCH_BATCH : n;
            bench_batch_json(json, lo, hi);
            char* results = NULL;
            ck(cbl_collection_docs_save(api, json, &results, &err), "cbl_collection_docs_save");
            if (strstr(results, "\"error\"")) bench_die("cbl_collection_docs_save: %.200s", results);
            cbl_free(results);
        }
        capi_w[run] = bench_now_ms() - t;

        /* write: HTTP _bulk_docs */
        t = bench_now_ms();
        for (long lo = 0; lo < n; lo += BENCH_BATCH) {
            long hi = lo + BENCH_BATCH < n ? lo + BENCH_BATCH : n;
            size_t len = bench_batch_json(json + 8, lo, hi);      /* {"docs": [...] } */
            memcpy(json, "{\"docs\":", 8);
            json[8 + len] = '}';
            json[9 + len] = 0;
            char* body = NULL;
            int st = request(&c, "POST", "/http/_bulk_docs", json, 9 + len, &body, NULL);
            if (st != 201 || strstr(body, "\"error\"")) bench_die("_bulk_docs: %d %.200s", st, body);
            free(body);
        }
        http_w[run] = bench_now_ms() - t;

        /* read: C API */
        t = bench_now_ms();
        for (long k = 0; k < n; k++) {
            char id[BENCH_ID_SIZE];
            bench_doc_id(id, order[k]);
            char* doc = NULL;
            ck(cbl_doc_get(api, id, 0, &doc, &err), "cbl_doc_get");
            cbl_free(doc);
        }
        capi_r[run] = bench_now_ms() - t;

        /* read: HTTP GET on one keep-alive connection */
        t = bench_now_ms();
        for (long k = 0; k < n; k++) {
            char id[BENCH_ID_SIZE], path[64];
            bench_doc_id(id, order[k]);
            snprintf(path, sizeof path, "/http/%s", id);
            int st = request(&c, "GET", path, NULL, 0, NULL, NULL);
            if (st != 200) bench_die("GET %s: %d", path, st);
        }
        http_r[run] = bench_now_ms() - t;

        echo_r[run] = loopback_ms(n);

        uint64_t count = 0;
        ck(cbl_collection_count(served, &count, &err), "cbl_collection_count");
        if ((long)count != n) bench_check("listener", "served database holds %llu documents, expected %ld", (unsigned long long)count, n);
        close(c.fd);
        free(c.buf);
        cbl_server_stop(server, 5000);
        cbl_collection_release(api);
        cbl_collection_release(served);
        ck(cbl_db_close(api_db, &err), "cbl_db_close");
        ck(cbl_db_close(http_db, &err), "cbl_db_close");
        printf("run %d: write capi %.0f ms, http %.0f ms; read capi %.0f ms, http %.0f ms, loopback %.0f ms\n",
               run + 1, capi_w[run], http_w[run], capi_r[run], http_r[run], echo_r[run]);
    }
    double cw = bench_median(capi_w, runs), hw = bench_median(http_w, runs), cr = bench_median(capi_r, runs), hr = bench_median(http_r, runs);
    double er = bench_median(echo_r, runs);
    printf("listener write_capi %.1f %.0f\n", cw, n / cw * 1000);
    printf("listener write_http %.1f %.0f\n", hw, n / hw * 1000);
    printf("listener read_capi %.1f %.0f\n", cr, n / cr * 1000);
    printf("listener read_http %.1f %.0f\n", hr, n / hr * 1000);
    printf("listener write_ratio %.2f\n", hw / cw);
    printf("listener read_ratio %.2f\n", hr / cr);
    printf("listener overhead_us %.1f\n", (hr - cr) * 1000.0 / n);
    /* The machine's own cost of one HTTP round trip on loopback (a server that does
     * nothing), and what the listener adds above it and above the C API's read. */
    printf("listener loopback_roundtrip_us %.1f\n", er * 1000.0 / n);
    printf("listener overhead_above_loopback_us %.1f\n", (hr - cr - er) * 1000.0 / n);
    bench_remove_tree(dir);
    free(json);
    free(order);
    return 0;
}
