/*
 * test_replicator.c — the replicator through the real .so (cbl_replicator_*): two
 * databases, one served by a listener on a real socket, pushed to and pulled from;
 * status and document callbacks, wait, pending documents, failed documents kept for a
 * retry and cleared, a continuous replication
 * stopped from its own callback, closing the database under a running replicator, and
 * bad arguments, configurations and handles.
 */
#define _GNU_SOURCE
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct events {
    pthread_mutex_t lock;
    int statuses, stopped_seen, documents, document_errors;
    char last_status[1024];
    int stop_on_idle;          /* call cbl_replicator_stop from the callback when idle */
    cbl_replicator* self;
} events;

static void on_status(void* ctx, const char* json) {
    events* e = ctx;
    pthread_mutex_lock(&e->lock);
    e->statuses++;
    snprintf(e->last_status, sizeof e->last_status, "%s", json);
    if (strstr(json, "\"activity\":\"stopped\"")) e->stopped_seen++;
    cbl_replicator* self = (e->stop_on_idle && strstr(json, "\"activity\":\"idle\"")) ? e->self : NULL;
    if (self) e->stop_on_idle = 0;
    pthread_mutex_unlock(&e->lock);
    if (self) cbl_replicator_stop(self);          /* returns at once from a callback */
}

static void on_documents(void* ctx, const char* json) {
    events* e = ctx;
    pthread_mutex_lock(&e->lock);
    for (const char* p = json; (p = strstr(p, "\"id\":")) != NULL; p++) e->documents++;
    for (const char* p = json; (p = strstr(p, "\"error\":")) != NULL; p++) e->document_errors++;
    pthread_mutex_unlock(&e->lock);
}

static int even_only(void* ctx, const char* doc_json, const char* params_json) {
    (void)ctx; (void)params_json;
    return strstr(doc_json, "\"even\":true") != NULL;
}

static long count_of(cbl_collection* c) {
    uint64_t n = 0;
    CHECK_ST(cbl_collection_count(c, &n, &E), CBL_OK);
    return (long)n;
}

/* A peer that refuses one revision in _bulk_docs (as a validate_doc_update would) and
 * keeps its checkpoints: just enough of CouchDB's API for a push, on 127.0.0.1. */
typedef struct refusing_peer {
    int fd;
    uint16_t port;
    pthread_t thread;
    const char *doc_id, *rev;
    char checkpoint[8192];                 /* the one _local document, "" when none */
    int bulk_docs;                         /* _bulk_docs requests seen (atomic: two threads) */
} refusing_peer;

static void answer(int c, int status, const char* body) {
    char head[256];
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                     status, strlen(body));
    if (write(c, head, (size_t)n) < 0 || write(c, body, strlen(body)) < 0) return;
}

static void* refusing_peer_main(void* arg) {
    refusing_peer* p = arg;
    for (;;) {
        int c = accept(p->fd, NULL, NULL);
        if (c < 0) return NULL;
        static char buf[65536];
        size_t have = 0;
        for (;;) {                                          /* requests on a keep-alive connection */
            char* end;
            while ((end = memmem(buf, have, "\r\n\r\n", 4)) == NULL) {
                ssize_t n = read(c, buf + have, sizeof buf - 1 - have);
                if (n <= 0) goto closed;
                have += (size_t)n;
            }
            *end = '\0';
            const char* cl = strcasestr(buf, "content-length:");
            size_t length = cl ? (size_t)strtoul(cl + 15, NULL, 10) : 0, head = (size_t)(end + 4 - buf);
            while (have < head + length) {
                ssize_t n = read(c, buf + have, sizeof buf - 1 - have);
                if (n <= 0) goto closed;
                have += (size_t)n;
            }
            char method[8] = "", path[512] = "", body[8192] = "";
            sscanf(buf, "%7s %511s", method, path);
            memcpy(body, buf + head, length < sizeof body ? length : sizeof body - 1);
            char* q = strchr(path, '?');
            if (q) *q = '\0';
            char reply[512];
            if (strcmp(path, "/db/") == 0) answer(c, 200, "{\"db_name\":\"db\",\"update_seq\":\"0\"}");
            else if (strncmp(path, "/db/_local/", 11) == 0 && strcmp(method, "GET") == 0)
                answer(c, p->checkpoint[0] ? 200 : 404, p->checkpoint[0] ? p->checkpoint : "{\"error\":\"not_found\",\"reason\":\"missing\"}");
            else if (strncmp(path, "/db/_local/", 11) == 0) {
                if (strstr(body, "\"_rev\"")) snprintf(p->checkpoint, sizeof p->checkpoint, "%s", body);   /* "0-1" again */
                else snprintf(p->checkpoint, sizeof p->checkpoint, "%.*s,\"_rev\":\"0-1\"}", (int)strlen(body) - 1, body);
                answer(c, 201, "{\"ok\":true,\"rev\":\"0-1\"}");
            } else if (strcmp(path, "/db/_revs_diff") == 0) {
                snprintf(reply, sizeof reply, "{\"%s\":{\"missing\":[\"%s\"]}}", p->doc_id, p->rev);
                answer(c, 200, reply);
            } else if (strcmp(path, "/db/_bulk_docs") == 0) {
                __atomic_add_fetch(&p->bulk_docs, 1, __ATOMIC_SEQ_CST);
                snprintf(reply, sizeof reply, "[{\"id\":\"%s\",\"rev\":\"%s\",\"error\":\"forbidden\",\"reason\":\"not here\"}]",
                         p->doc_id, p->rev);
                answer(c, 201, reply);
            } else answer(c, 404, "{\"error\":\"not_found\",\"reason\":\"missing\"}");
            memmove(buf, buf + head + length, have - head - length);
            have -= head + length;
        }
    closed:
        close(c);
    }
}

static void start_refusing_peer(refusing_peer* p, const char* doc_id, const char* rev) {
    memset(p, 0, sizeof *p);
    p->doc_id = doc_id;
    p->rev = rev;
    p->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    CHECK(bind(p->fd, (struct sockaddr*)&addr, len) == 0 && listen(p->fd, 8) == 0);
    CHECK(getsockname(p->fd, (struct sockaddr*)&addr, &len) == 0);
    p->port = ntohs(addr.sin_port);
    CHECK(pthread_create(&p->thread, NULL, refusing_peer_main, p) == 0);
}

static void stop_refusing_peer(refusing_peer* p) {
    shutdown(p->fd, SHUT_RDWR);                /* accept fails: the thread ends */
    close(p->fd);
    pthread_join(p->thread, NULL);
}

/* Runs a one-shot replication to its end; returns its final status (caller frees). */
static char* run(cbl_collection* c, const char* config, events* ev) {
    cbl_replicator* r = NULL;
    CHECK_ST(cbl_replicator_start(c, config, ev ? on_status : NULL, ev ? on_documents : NULL, ev, &r, &E), CBL_OK);
    CHECK_ST(cbl_replicator_wait(r, 60000, &E), CBL_OK);
    char* status = NULL;
    CHECK_ST(cbl_replicator_status(r, &status, &E), CBL_OK);
    cbl_replicator_stop(r);
    return status;
}

int main(void) {
    int64_t instances = cbl_instance_count();
    snprintf(g_root, sizeof g_root, "/tmp/cblite-replicator-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 1; }
    cbl_db* a = open_db("a", g_root);
    cbl_db* b = open_db("b", g_root);
    cbl_db* c = open_db("c", g_root);
    cbl_collection* ac = default_coll(a);
    cbl_collection* bc = default_coll(b);
    cbl_collection* cc = default_coll(c);
    cbl_server* server = NULL;
    CHECK_ST(cbl_server_start("{\"port\":0}", &server, &E), CBL_OK);
    CHECK_ST(cbl_server_serve(server, "b", b, &E), CBL_OK);
    uint16_t port = 0;
    CHECK_ST(cbl_server_port(server, &port, &E), CBL_OK);
    char url[128], config[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/b", (unsigned)port);

    for (int i = 0; i < 20; i++) {
        char id[16], json[64];
        snprintf(id, sizeof id, "d%02d", i);
        snprintf(json, sizeof json, "{\"i\":%d,\"even\":%s}", i, i % 2 ? "false" : "true");
        CHECK_ST(cbl_doc_put(ac, id, json, NULL, 0, NULL, NULL, &E), CBL_OK);
    }

    /* Push with callbacks: every document reported, the final status "stopped". */
    events ev;
    memset(&ev, 0, sizeof ev);
    pthread_mutex_init(&ev.lock, NULL);
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"direction\":\"push\",\"document_events\":true}", url);
    char* st = run(ac, config, &ev);
    /* The callbacks ran before wait returned: the last status delivered is "stopped". */
    CHECK(st && strstr(st, "\"activity\":\"stopped\"") && strstr(st, "\"documents_pushed\":20") && !strstr(st, "\"error\""));
    cbl_free(st);
    CHECK(count_of(bc) == 20);
    pthread_mutex_lock(&ev.lock);
    CHECK(ev.documents == 20 && ev.document_errors == 0);
    CHECK(ev.stopped_seen == 1 && ev.statuses >= 2);
    pthread_mutex_unlock(&ev.lock);

    /* Pending documents: none after the push; one after a change; then sent. */
    cbl_replicator* r = NULL;
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"direction\":\"push\",\"continuous\":true}", url);
    CHECK_ST(cbl_doc_put(ac, "late", "{}", NULL, 0, NULL, NULL, &E), CBL_OK);
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"direction\":\"push\"}", url);
    CHECK_ST(cbl_replicator_start(ac, config, NULL, NULL, NULL, &r, &E), CBL_OK);
    CHECK_ST(cbl_replicator_wait(r, 60000, &E), CBL_OK);
    CHECK_OUT(cbl_replicator_pending_documents(r, &J, &E), CBL_OK, strcmp(J, "[]") == 0);
    CHECK_ST(cbl_doc_put(ac, "later", "{}", NULL, 0, NULL, NULL, &E), CBL_OK);
    CHECK_OUT(cbl_replicator_pending_documents(r, &J, &E), CBL_OK, strcmp(J, "[\"later\"]") == 0);
    int pending = -1;
    CHECK_ST(cbl_replicator_is_document_pending(r, "later", &pending, &E), CBL_OK);
    CHECK(pending == 1);
    CHECK_ST(cbl_replicator_is_document_pending(r, "d01", &pending, &E), CBL_OK);
    CHECK(pending == 0);
    CHECK_ST(cbl_replicator_is_document_pending(r, NULL, &pending, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_replicator_is_document_pending(r, "x", NULL, &E), CBL_BAD_REQUEST);
    cbl_replicator_stop(r);
    cbl_replicator_stop(r);                       /* twice: ignored */

    /* Pull into a third database, filtered by doc_ids. */
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"direction\":\"pull\",\"doc_ids\":[\"d03\",\"late\"]}", url);
    st = run(cc, config, NULL);
    CHECK(st && strstr(st, "\"documents_pulled\":2"));
    cbl_free(st);
    CHECK(count_of(cc) == 2);

    /* An empty attachment pulled from the listener (which sends it inline, "data": "",
     * rather than as a zero-length part; the wire is checked by the Swift and Python
     * suites) arrives, stored empty. */
    char *empty_digest = NULL, *empty_rev = NULL;
    CHECK_ST(cbl_db_blob_put(b, "", 0, &empty_digest, &E), CBL_OK);
    CHECK_ST(cbl_doc_set_attachment(bc, "empty-att", NULL, "empty.txt", "text/plain", empty_digest, &empty_rev, &E), CBL_OK);
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"direction\":\"pull\",\"doc_ids\":[\"empty-att\"]}", url);
    st = run(cc, config, NULL);
    CHECK(st && strstr(st, "\"documents_pulled\":1") && strstr(st, "\"document_failures\":0"));
    cbl_free(st);
    void* empty_bytes = NULL;
    size_t empty_length = 99;
    CHECK_ST(cbl_doc_get_attachment(cc, "empty-att", "empty.txt", &empty_bytes, &empty_length, &E), CBL_OK);
    CHECK(empty_bytes != NULL && empty_length == 0);
    cbl_free(empty_bytes); cbl_free(empty_digest); cbl_free(empty_rev);

    /* A named push filter registered on the database. */
    CHECK_ST(cbl_db_set_filter(a, "evens", even_only, NULL, &E), CBL_OK);
    cbl_db* d = open_db("d", g_root);
    CHECK_ST(cbl_server_serve(server, "d", d, &E), CBL_OK);
    snprintf(config, sizeof config, "{\"url\":\"http://127.0.0.1:%u/d\",\"direction\":\"push\",\"filter\":\"evens\"}", (unsigned)port);
    st = run(ac, config, NULL);
    CHECK(st && strstr(st, "\"documents_pushed\":10"));
    cbl_free(st);
    cbl_collection* dc = default_coll(d);                /* the ten even documents, no more */
    CHECK(count_of(dc) == 10);
    cbl_collection_release(dc);

    /* Continuous, stopped from its own status callback once idle. */
    memset(&ev, 0, sizeof ev);
    pthread_mutex_init(&ev.lock, NULL);
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"continuous\":true}", url);
    pthread_mutex_lock(&ev.lock);
    ev.stop_on_idle = 1;
    CHECK_ST(cbl_replicator_start(ac, config, on_status, NULL, &ev, &ev.self, &E), CBL_OK);
    pthread_mutex_unlock(&ev.lock);
    for (int i = 0; i < 600; i++) {
        pthread_mutex_lock(&ev.lock);
        int done = ev.stopped_seen;
        pthread_mutex_unlock(&ev.lock);
        if (done) break;
        usleep(20000);
    }
    CHECK(ev.stopped_seen == 1);
    if (ev.stopped_seen != 1) fprintf(stderr, "last status: %s (%d statuses)\n", ev.last_status, ev.statuses);
    cbl_replicator_stop(ev.self);                  /* already released by the callback: ignored */

    /* A continuous replication: wait times out with 503; closing its database stops it. */
    cbl_db* a2 = open_db("a", g_root);
    cbl_collection* a2c = default_coll(a2);
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"continuous\":true}", url);
    CHECK_ST(cbl_replicator_start(a2c, config, NULL, NULL, NULL, &r, &E), CBL_OK);
    CHECK_ST(cbl_replicator_wait(r, 300, &E), CBL_BUSY);
    cbl_collection_release(a2c);
    CHECK_ST(cbl_db_close(a2, &E), CBL_OK);
    CHECK_ST(cbl_replicator_wait(r, 10000, &E), CBL_OK);
    CHECK_OUT(cbl_replicator_status(r, &J, &E), CBL_OK, strstr(J, "\"activity\":\"stopped\"") != NULL);
    cbl_replicator_stop(r);

    /* A wrong password: 401 in the status, not retried. */
    cbl_server* locked = NULL;
    CHECK_ST(cbl_server_start("{\"port\":0,\"users\":{\"u\":\"right\"}}", &locked, &E), CBL_OK);
    CHECK_ST(cbl_server_serve(locked, "b", b, &E), CBL_OK);
    uint16_t lport = 0;
    CHECK_ST(cbl_server_port(locked, &lport, &E), CBL_OK);
    snprintf(config, sizeof config, "{\"url\":\"http://u:wrong@127.0.0.1:%u/b\"}", (unsigned)lport);
    st = run(cc, config, NULL);
    CHECK(st && strstr(st, "\"status\":401") && strstr(st, "\"activity\":\"stopped\""));
    cbl_free(st);
    cbl_server_stop(locked, 1000);

    /* A revision the peer refuses waits with the checkpoint: listed and counted, tried
     * again by the next run (which has no new change), then cleared for good. */
    char* refused_rev = NULL;
    CHECK_ST(cbl_doc_put(ac, "refused", "{}", NULL, 0, NULL, &refused_rev, &E), CBL_OK);
    refusing_peer peer;
    start_refusing_peer(&peer, "refused", refused_rev);
    snprintf(config, sizeof config, "{\"url\":\"http://127.0.0.1:%u/db\",\"direction\":\"push\",\"doc_ids\":[\"refused\"]}",
             (unsigned)peer.port);
    char expected[256];
    snprintf(expected, sizeof expected, "[{\"direction\":\"push\",\"id\":\"refused\",\"rev\":\"%s\"}]", refused_rev);
    st = run(ac, config, NULL);
    CHECK(st && strstr(st, "\"document_failures\":1") && strstr(st, "\"documents_to_retry\":1") && !strstr(st, "\"error\":{"));
    cbl_free(st);
    CHECK_ST(cbl_replicator_start(ac, config, NULL, NULL, NULL, &r, &E), CBL_OK);
    CHECK_ST(cbl_replicator_wait(r, 60000, &E), CBL_OK);
    CHECK(__atomic_load_n(&peer.bulk_docs, __ATOMIC_SEQ_CST) == 2);   /* offered again: the feed was past it */
    CHECK_OUT(cbl_replicator_status(r, &J, &E), CBL_OK, strstr(J, "\"documents_to_retry\":1") && strstr(J, "\"document_failures\":1"));
    CHECK_OUT(cbl_replicator_failed_documents(r, &J, &E), CBL_OK, strcmp(J, expected) == 0);
    CHECK_ST(cbl_replicator_clear_failed(r, &E), CBL_OK);
    CHECK_OUT(cbl_replicator_failed_documents(r, &J, &E), CBL_OK, strcmp(J, "[]") == 0);
    CHECK_OUT(cbl_replicator_status(r, &J, &E), CBL_OK, strstr(J, "\"documents_to_retry\":0") != NULL);
    cbl_replicator_stop(r);
    st = run(ac, config, NULL);                    /* cleared: not offered again */
    CHECK(st && strstr(st, "\"document_failures\":0") && strstr(st, "\"documents_to_retry\":0") && !strstr(st, "\"error\""));
    cbl_free(st);
    CHECK(__atomic_load_n(&peer.bulk_docs, __ATOMIC_SEQ_CST) == 2);
    stop_refusing_peer(&peer);
    cbl_free(refused_rev);
    CHECK_OUT(cbl_replicator_failed_documents(NULL, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_ST(cbl_replicator_clear_failed(NULL, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_replicator_clear_failed((cbl_replicator*)(void*)a, &E), CBL_BAD_REQUEST);

    /* Bad arguments and configurations: clear statuses, no handle. */
    r = (cbl_replicator*)(void*)POISON_PTR;
    CHECK_ST(cbl_replicator_start(NULL, config, NULL, NULL, NULL, &r, &E), CBL_BAD_REQUEST);
    CHECK(r == NULL);
    CHECK_ST(cbl_replicator_start(ac, NULL, NULL, NULL, NULL, &r, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_replicator_start(ac, config, NULL, NULL, NULL, NULL, &E), CBL_BAD_REQUEST);
    const char* bad[] = {"", "{", "[]", "{\"url\":1}", "{\"url\":\"gopher://x/db\"}", "{\"url\":\"http://x\"}",
                         "{\"url\":\"http://x/db\",\"unknown\":true}", "{\"url\":\"http://x/db\",\"continuous\":\"yes\"}",
                         "{\"url\":\"http://x/db\",\"tls\":{\"ca_file\":\"/nonexistent\"}}",
                         "{\"url\":\"https://x/db\",\"tls\":{\"ca_file\":\"/nonexistent/ca.pem\"}}",
                         "{\"url\":\"http://x/db\",\"headers\":{\"Bad Name\":\"v\"}}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_ST(cbl_replicator_start(ac, bad[i], NULL, NULL, NULL, &r, &E), CBL_BAD_REQUEST);
        CHECK(r == NULL);
    }
    CHECK_ST(cbl_replicator_start((cbl_collection*)(void*)a, config, NULL, NULL, NULL, &r, &E), CBL_BAD_REQUEST);
    CHECK_OUT(cbl_replicator_status(NULL, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_OUT(cbl_replicator_status((cbl_replicator*)(void*)a, &J, &E), CBL_BAD_REQUEST, 1);
    CHECK_ST(cbl_replicator_wait(NULL, 0, &E), CBL_BAD_REQUEST);
    CHECK_OUT(cbl_replicator_pending_documents(NULL, &J, &E), CBL_BAD_REQUEST, 1);
    cbl_replicator_stop(NULL);
    cbl_replicator_stop((cbl_replicator*)(void*)a);   /* not a replicator: ignored, a still open */
    CHECK(count_of(ac) == 24);
    /* A pull replicator has no pending documents. */
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"direction\":\"pull\"}", url);
    CHECK_ST(cbl_replicator_start(cc, config, NULL, NULL, NULL, &r, &E), CBL_OK);
    CHECK_OUT(cbl_replicator_pending_documents(r, &J, &E), CBL_BAD_REQUEST, 1);
    cbl_replicator_stop(r);

    cbl_server_stop(server, 2000);
    cbl_collection_release(ac);
    cbl_collection_release(bc);
    cbl_collection_release(cc);
    CHECK_ST(cbl_db_close(a, &E), CBL_OK);
    CHECK_ST(cbl_db_close(b, &E), CBL_OK);
    CHECK_ST(cbl_db_close(c, &E), CBL_OK);
    CHECK_ST(cbl_db_close(d, &E), CBL_OK);
    return finish_tests(instances);
}
