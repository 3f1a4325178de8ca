/*
 * bench_listener.c — the listener phase of `make bench` (issue 10): the same documents
 * written and read back through the C API and through the listener over HTTP, in one
 * process, so the two are measured in the same run on the same machine.
 *
 *   write: N documents in batches of 1,000 — cbl_collection_docs_save / POST /{db}/_bulk_docs
 *   read:  every document by ID, in the workload's shuffled order — cbl_doc_get /
 *          GET /{db}/{id} on one keep-alive connection
 *
 *   concurrent: 1, 8 and 64 keep-alive clients at once (threads, one connection each), each
 *          doing GETs of random documents with one _bulk_docs of 10 new documents in every
 *          10 requests; CONCURRENT_REQUESTS requests in all per level, split evenly.
 *          Requests/s and GET / _bulk_docs p50 and p99 latencies, beside the same clients
 *          against the do-nothing server (the machine's ceiling at that concurrency).
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

enum {
    BENCH_MAX_CLIENTS = 64,
    BENCH_CONCURRENT_REQUESTS = 12800,  /* per concurrency level and run: divisible by 1, 8, 64 */
    BENCH_LOAD_BULK = 10,               /* documents per _bulk_docs of the concurrent load */
};
static const int bench_client_counts[] = { 1, 8, 64 };
#define BENCH_LEVELS ((int)(sizeof bench_client_counts / sizeof bench_client_counts[0]))

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
/* Threads answering every request (bodies read by their Content-Length) with a fixed 200,
 * one per connection, so the report can separate the listener's own cost from the
 * machine's TCP round trip at the same concurrency. */
static void* echo_connection(void* arg) {
    int fd = (int)(intptr_t)arg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    size_t cap = 1 << 16, len = 0;
    char* buf = malloc(cap);
    while (1) {
        if (cap - len < 4096) buf = realloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + len, cap - len);
        if (r <= 0) break;
        len += (size_t)r;
        char* end;
        while ((end = memmem(buf, len, "\r\n\r\n", 4)) != NULL) {
            size_t head = (size_t)(end + 4 - buf), body = 0;
            char* cl = memmem(buf, head, "Content-Length:", 15);
            if (cl) body = (size_t)atol(cl + 15);
            if (len < head + body) break;                 /* the body is still coming */
            send_all(fd, resp, sizeof resp - 1);
            memmove(buf, buf + head + body, len - head - body);
            len -= head + body;
        }
    }
    free(buf);
    close(fd);
    return NULL;
}

typedef struct echo_server {
    int fd, connections;
    uint16_t port;
    pthread_t acceptor, threads[BENCH_MAX_CLIENTS];
} echo_server;

static void* echo_accept(void* arg) {
    echo_server* e = arg;
    for (int k = 0; k < e->connections; k++) {
        int fd = accept(e->fd, NULL, NULL);
        if (fd < 0) bench_die("loopback baseline: accept failed");
        pthread_create(&e->threads[k], NULL, echo_connection, (void*)(intptr_t)fd);
    }
    return NULL;
}

/* Starts a do-nothing server for `connections` connections on a free loopback port. */
static void echo_start(echo_server* e, int connections) {
    e->connections = connections;
    e->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    if (bind(e->fd, (struct sockaddr*)&a, sizeof a) != 0 || listen(e->fd, 128) != 0 ||
        getsockname(e->fd, (struct sockaddr*)&a, &alen) != 0) bench_die("loopback baseline: bind failed");
    e->port = ntohs(a.sin_port);
    pthread_create(&e->acceptor, NULL, echo_accept, e);
}

/* After the clients closed their connections. */
static void echo_stop(echo_server* e) {
    pthread_join(e->acceptor, NULL);
    for (int k = 0; k < e->connections; k++) pthread_join(e->threads[k], NULL);
    close(e->fd);
}

/* Per-request milliseconds of `n` GETs against the do-nothing server. */
static double loopback_ms(long n) {
    echo_server e;
    echo_start(&e, 1);
    conn c;
    conn_open(&c, e.port);
    double t0 = bench_now_ms();
    for (long k = 0; k < n; k++) {
        if (request(&c, "GET", "/x", NULL, 0, NULL, NULL) != 200) bench_die("loopback baseline: bad answer");
    }
    double ms = bench_now_ms() - t0;
    close(c.fd);
    free(c.buf);
    echo_stop(&e);
    return ms;
}

/* ---- concurrent keep-alive clients ----------------------------------------------------- */
typedef struct load_client {
    uint16_t port;
    long first_new;             /* the first ID number of its new documents (its own range) */
    long n_docs, requests;
    int against_listener;       /* 0: the do-nothing server (answers 200 to everything) */
    pthread_barrier_t* start;
    double *get_us, *bulk_us;   /* latencies, one per request of each kind */
    long gets, bulks;
} load_client;

static void* load_run(void* arg) {
    load_client* l = arg;
    char* json = malloc((size_t)BENCH_LOAD_BULK * (BENCH_BODY_SIZE + BENCH_ID_SIZE + 16) + 64);
    conn c;
    conn_open(&c, l->port);
    uint64_t lcg = 42 + (uint64_t)l->first_new;
    long next_new = l->first_new;
    int ok_bulk = l->against_listener ? 201 : 200;           /* the do-nothing server answers 200 */
    pthread_barrier_wait(l->start);
    for (long r = 0; r < l->requests; r++) {
        double t = bench_now_ms();
        if (r % 10 == 9) {
            size_t len = bench_batch_json(json + 8, next_new, next_new + BENCH_LOAD_BULK);
            next_new += BENCH_LOAD_BULK;
            memcpy(json, "{\"docs\":", 8);
            json[8 + len] = '}';
            char* body = NULL;
            int st = request(&c, "POST", "/http/_bulk_docs", json, 9 + len, &body, NULL);
            if (st != ok_bulk || strstr(body, "\"error\"")) bench_die("concurrent _bulk_docs: %d %.200s", st, body);
            free(body);
            l->bulk_us[l->bulks++] = (bench_now_ms() - t) * 1000.0;
        } else {
            lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
            char id[BENCH_ID_SIZE], path[64];
            bench_doc_id(id, (long)((lcg >> 33) % (uint64_t)l->n_docs));
            snprintf(path, sizeof path, "/http/%s", id);
            int st = request(&c, "GET", path, NULL, 0, NULL, NULL);
            if (st != 200) bench_die("concurrent GET %s: %d", path, st);
            l->get_us[l->gets++] = (bench_now_ms() - t) * 1000.0;
        }
    }
    close(c.fd);
    free(c.buf);
    free(json);
    return NULL;
}

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of v[0..n-1] (sorts v). */
static double quantile(double* v, long n, double q) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    long i = (long)(q * (double)(n - 1) + 0.5);
    return v[i];
}

typedef struct load_result { double rps, get_p50, get_p99, bulk_p50, bulk_p99; } load_result;

/* `clients` threads, CONCURRENT_REQUESTS requests in all, against `port`; their new
 * documents are numbered from `first_new` (a range no other level uses). */
static load_result load(uint16_t port, int clients, long n_docs, long first_new, int against_listener) {
    load_client ls[BENCH_MAX_CLIENTS];
    pthread_t threads[BENCH_MAX_CLIENTS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)clients + 1);
    long per = BENCH_CONCURRENT_REQUESTS / clients;
    for (int k = 0; k < clients; k++) {
        ls[k] = (load_client){ .port = port, .first_new = first_new + k * 1000000L, .n_docs = n_docs, .requests = per,
                               .against_listener = against_listener, .start = &start,
                               .get_us = malloc(sizeof(double) * (size_t)per),
                               .bulk_us = malloc(sizeof(double) * (size_t)per) };
        pthread_create(&threads[k], NULL, load_run, &ls[k]);
    }
    pthread_barrier_wait(&start);
    double t0 = bench_now_ms();
    for (int k = 0; k < clients; k++) pthread_join(threads[k], NULL);
    double ms = bench_now_ms() - t0;
    pthread_barrier_destroy(&start);
    double* gets = malloc(sizeof(double) * (size_t)(per * clients));
    double* bulks = malloc(sizeof(double) * (size_t)(per * clients));
    long ng = 0, nb = 0;
    for (int k = 0; k < clients; k++) {
        memcpy(gets + ng, ls[k].get_us, sizeof(double) * (size_t)ls[k].gets);
        memcpy(bulks + nb, ls[k].bulk_us, sizeof(double) * (size_t)ls[k].bulks);
        ng += ls[k].gets;
        nb += ls[k].bulks;
        free(ls[k].get_us);
        free(ls[k].bulk_us);
    }
    load_result r = { .rps = (double)(per * clients) / ms * 1000.0,
                      .get_p50 = quantile(gets, ng, 0.50), .get_p99 = quantile(gets, ng, 0.99),
                      .bulk_p50 = quantile(bulks, nb, 0.50), .bulk_p99 = quantile(bulks, nb, 0.99) };
    free(gets);
    free(bulks);
    return r;
}

/* The same clients against the do-nothing server. */
static load_result load_loopback(int clients) {
    echo_server e;
    echo_start(&e, clients);
    load_result r = load(e.port, clients, 1, 0, 0);
    echo_stop(&e);
    return r;
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
    load_result served_load[BENCH_LEVELS][99], echo_load[BENCH_LEVELS][99];

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

        /* concurrent: the listener then the do-nothing server, at each level */
        for (int lv = 0; lv < BENCH_LEVELS; lv++) {
            served_load[lv][run] = load(port, bench_client_counts[lv], n, 100000000L * (lv + 1), 1);
            echo_load[lv][run] = load_loopback(bench_client_counts[lv]);
            printf("run %d: %d clients: %.0f req/s (loopback %.0f), GET p99 %.0f us, _bulk_docs p99 %.0f us\n",
                   run + 1, bench_client_counts[lv], served_load[lv][run].rps, echo_load[lv][run].rps,
                   served_load[lv][run].get_p99, served_load[lv][run].bulk_p99);
        }

        uint64_t count = 0;
        ck(cbl_collection_count(served, &count, &err), "cbl_collection_count");
        long added = BENCH_LEVELS * (BENCH_CONCURRENT_REQUESTS / 10) * BENCH_LOAD_BULK;   /* the concurrent load's */
        if ((long)count != n + added) bench_check("listener", "served database holds %llu documents, expected %ld", (unsigned long long)count, n + added);
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
    /* Medians of each figure over the runs; "ceiling" is the same clients against the
     * do-nothing server in the same run (what the machine's loopback allows). */
    for (int lv = 0; lv < BENCH_LEVELS; lv++) {
        double v[6][99];
        for (int r = 0; r < runs; r++) {
            load_result a = served_load[lv][r];
            v[0][r] = a.rps; v[1][r] = a.get_p50; v[2][r] = a.get_p99; v[3][r] = a.bulk_p50; v[4][r] = a.bulk_p99;
            v[5][r] = echo_load[lv][r].rps;
        }
        double rps = bench_median(v[0], runs), ceiling = bench_median(v[5], runs);
        printf("listener concurrent_%d_rps %.0f\n", bench_client_counts[lv], rps);
        printf("listener concurrent_%d_get_p50_us %.0f\n", bench_client_counts[lv], bench_median(v[1], runs));
        printf("listener concurrent_%d_get_p99_us %.0f\n", bench_client_counts[lv], bench_median(v[2], runs));
        printf("listener concurrent_%d_bulk_p50_us %.0f\n", bench_client_counts[lv], bench_median(v[3], runs));
        printf("listener concurrent_%d_bulk_p99_us %.0f\n", bench_client_counts[lv], bench_median(v[4], runs));
        printf("listener concurrent_%d_loopback_rps %.0f\n", bench_client_counts[lv], ceiling);
        printf("listener concurrent_%d_share_of_loopback %.3f\n", bench_client_counts[lv], rps / ceiling);
    }
    bench_remove_tree(dir);
    free(json);
    free(order);
    return 0;
}
