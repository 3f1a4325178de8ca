/*
 * test_server.c — the listener through the real .so (cbl_server_*): started from a JSON
 * configuration, spoken to over a real socket with plain HTTP/1.1, a given handle
 * served and unserved, TLS identity fingerprint, bad configurations and handles, stop.
 */
#define _POSIX_C_SOURCE 200809L
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* An `Authorization` header value sent with every request while set. */
static const char* g_authorization = NULL;

/* One request on a new connection ("Connection: close"); returns the status and copies
 * the body (NUL-terminated, truncated to size) into `body`. -1 when nothing answered. */
static int http(uint16_t port, const char* method, const char* path, const char* json, char* body, size_t size) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr*)&a, sizeof a) != 0) { if (fd >= 0) close(fd); return -1; }
    char req[1024];
    size_t blen = json ? strlen(json) : 0;
    /* CouchDB answers open_revs as multipart unless the client takes JSON only. */
    const char* accept = strstr(path, "open_revs=") ? "Accept: application/json\r\n" : "";
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s%s%s"
                     "%sContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     method, path, g_authorization ? "Authorization: " : "", g_authorization ? g_authorization : "",
                     g_authorization ? "\r\n" : "", accept, blen, json ? json : "");
    if (write(fd, req, (size_t)n) != n) { close(fd); return -1; }
    static char resp[65536];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof resp - 1 && (r = read(fd, resp + len, sizeof resp - 1 - len)) > 0) len += (size_t)r;
    resp[len] = 0;
    close(fd);
    if (len < 12 || strncmp(resp, "HTTP/1.1 ", 9) != 0) return -1;
    const char* start = strstr(resp, "\r\n\r\n");
    if (body && size) {
        snprintf(body, size, "%s", start ? start + 4 : "");
    }
    return atoi(resp + 9);
}

/* The ABI's stubs name content by our digest ("digest": "sha1-…", CouchDB's MD5 beside it
 * as "md5"); over HTTP the digest is CouchDB's: rewrites `abi` in place into that form. */
static void couch_digests(char* abi) {
    char* d;
    while (abi && (d = strstr(abi, "\"digest\":\"sha1-")) != NULL) {
        char* v = d + 10;                                   /* the value, after "digest":" */
        char* ve = strchr(v, '"');
        char* m = ve ? strstr(ve, ",\"md5\":\"") : NULL;
        char* mv = m ? m + 8 : NULL;
        char* mve = mv ? strchr(mv, '"') : NULL;
        if (!mve) return;
        size_t md5len = (size_t)(mve - mv), between = (size_t)(m - ve);
        char tmp[64];
        if (md5len >= sizeof tmp) return;
        memcpy(tmp, mv, md5len);
        memmove(v + md5len, ve, between);                   /* the members between digest and md5 */
        memcpy(v, tmp, md5len);
        memmove(v + md5len + between, mve + 1, strlen(mve + 1) + 1);
    }
}

/* The same request through the C ABI (`abi`, which the caller frees) and over HTTP
 * gives the same body, byte for byte (HTTP's ends with a newline) once the ABI's digests
 * are in CouchDB's form: the listener and the ABI answer with one implementation of
 * CouchDB's shapes. */
static void check_same_answer(uint16_t port, const char* method, const char* path, const char* json, char* abi) {
    static char body[65536];
    int status = http(port, method, path, json, body, sizeof body);
    size_t n = strlen(body);
    if (n > 0 && body[n - 1] == '\n') body[--n] = 0;
    couch_digests(abi);
    CHECK(status == 200 || status == 201);
    CHECK(abi != NULL && strcmp(abi, body) == 0);
    if (!abi || strcmp(abi, body) != 0) fprintf(stderr, "  %s %s\n  ABI:  %s\n  HTTP: %s\n", method, path, abi ? abi : "(null)", body);
    cbl_free(abi);
}

int main(void) {
    int64_t instances = cbl_instance_count();
    snprintf(g_root, sizeof g_root, "/tmp/cblite-server-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 1; }
    char dir[300], other[300];
    snprintf(dir, sizeof dir, "%s/served", g_root);
    snprintf(other, sizeof other, "%s/other", g_root);
    char body[4096];

    /* A database of the served directory, and one elsewhere given by handle. */
    cbl_db* db = open_db("notes", dir);
    cbl_collection* c = default_coll(db);
    CHECK_ST(cbl_doc_put(c, "n1", "{\"title\":\"hello\"}", NULL, 0, NULL, NULL, &E), CBL_OK);
    cbl_db* given = open_db("given", other);
    cbl_collection* gc = default_coll(given);
    CHECK_ST(cbl_doc_put(gc, "g1", "{\"n\":1}", NULL, 0, NULL, NULL, &E), CBL_OK);

    char config[512];
    snprintf(config, sizeof config, "{\"directory\":\"%s\",\"port\":0}", dir);
    cbl_server* server = NULL;
    CHECK_ST(cbl_server_start(config, &server, &E), CBL_OK);
    uint16_t port = 0;
    CHECK_ST(cbl_server_port(server, &port, &E), CBL_OK);
    CHECK(port != 0);
    char want_url[64];
    snprintf(want_url, sizeof want_url, "http://127.0.0.1:%u/", (unsigned)port);
    CHECK_OUT(cbl_server_url(server, &J, &E), CBL_OK, strcmp(J, want_url) == 0);
    CHECK_OUT(cbl_server_tls_fingerprint(server, &J, &E), CBL_NOT_FOUND, 1);   /* plain HTTP */

    CHECK(http(port, "GET", "/", NULL, body, sizeof body) == 200);
    CHECK(strstr(body, "\"couchdb\":\"Welcome\"") != NULL);
    CHECK(http(port, "GET", "/notes/n1", NULL, body, sizeof body) == 200);
    CHECK(strstr(body, "\"title\":\"hello\"") != NULL);
    CHECK(http(port, "GET", "/given/g1", NULL, body, sizeof body) == 404);

    /* A given handle, served and written through, then unserved. */
    CHECK_ST(cbl_server_serve(server, "given", given, &E), CBL_OK);
    CHECK(http(port, "GET", "/given/g1", NULL, body, sizeof body) == 200);
    CHECK(http(port, "PUT", "/given/g2", "{\"n\":2}", body, sizeof body) == 201);
    char* json = NULL;
    CHECK_ST(cbl_doc_get(gc, "g2", 0, &json, &E), CBL_OK);     /* the write reached the handle */
    CHECK(json && strstr(json, "\"n\":2"));
    cbl_free(json);
    CHECK_ST(cbl_server_serve(server, "given", NULL, &E), CBL_OK);
    CHECK(http(port, "GET", "/given/g1", NULL, body, sizeof body) == 404);

    /* Bad arguments: clear statuses, the server still serving. */
    CHECK_ST(cbl_server_serve(server, "../escape", given, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_server_serve(server, NULL, given, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_server_serve(server, "x", (cbl_db*)(void*)c, &E), CBL_BAD_REQUEST);   /* a collection as a db */
    CHECK_ST(cbl_server_serve((cbl_server*)(void*)db, "x", given, &E), CBL_BAD_REQUEST); /* a db as a server */
    CHECK_ST(cbl_server_port(server, NULL, &E), CBL_BAD_REQUEST);
    CHECK_OUT(cbl_server_url(NULL, &J, &E), CBL_BAD_REQUEST, 1);

    /* Bad configurations: 400 with *out_server NULL; the port in use is refused. */
    const char* bad[] = {"{", "[]", "{\"port\":70000}", "{\"colour\":\"blue\"}", "{\"port\":\"80\"}",
                         "{\"tls\":{\"cert_pem_file\":\"/nonexistent.pem\",\"key_pem_file\":\"/nonexistent.key\"}}",
                         "{\"directory\":\"/tmp/a\\u0000b\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cbl_server* s = (cbl_server*)(void*)POISON_PTR;
        CHECK_ST(cbl_server_start(bad[i], &s, &E), CBL_BAD_REQUEST);
        CHECK(s == NULL);
    }
    snprintf(config, sizeof config, "{\"port\":%u}", (unsigned)port);
    cbl_server* clash = (cbl_server*)(void*)POISON_PTR;
    CHECK_ST(cbl_server_start(config, &clash, &E), CBL_BAD_REQUEST);
    CHECK(clash == NULL);
    CHECK_ST(cbl_server_start("{}", NULL, &E), CBL_BAD_REQUEST);

    /* TLS with the anonymous identity: a fingerprint of 64 hex digits, kept across starts. */
    char tls_config[512];
    snprintf(tls_config, sizeof tls_config, "{\"directory\":\"%s\",\"tls\":{\"anonymous\":true}}", dir);
    cbl_server* tls = NULL;
    CHECK_ST(cbl_server_start(tls_config, &tls, &E), CBL_OK);
    char* fp1 = NULL;
    CHECK_ST(cbl_server_tls_fingerprint(tls, &fp1, &E), CBL_OK);
    CHECK(fp1 && strlen(fp1) == 64 && strspn(fp1, "0123456789abcdef") == 64);
    CHECK_OUT(cbl_server_url(tls, &J, &E), CBL_OK, strncmp(J, "https://127.0.0.1:", 18) == 0);
    cbl_server_stop(tls, 1000);
    CHECK_ST(cbl_server_start(tls_config, &tls, &E), CBL_OK);
    CHECK_OUT(cbl_server_tls_fingerprint(tls, &J, &E), CBL_OK, fp1 && strcmp(J, fp1) == 0);
    cbl_free(fp1);
    cbl_server_stop(tls, 1000);

    /* The hardening limits through the ABI: a header-field cap (431 past it), and an
     * attachment limit apart from the body limit — an attachment larger than
     * max_body_bytes is stored, one larger than max_attachment_bytes refused (413). */
    char limited_dir[320];
    snprintf(limited_dir, sizeof limited_dir, "%s/limited", g_root);
    CHECK(mkdir(limited_dir, 0755) == 0);
    snprintf(config, sizeof config, "{\"directory\":\"%s\",\"limits\":{\"max_header_count\":4,"
             "\"max_body_bytes\":16,\"max_attachment_bytes\":32}}", limited_dir);
    cbl_server* limited = NULL;
    CHECK_ST(cbl_server_start(config, &limited, &E), CBL_OK);
    uint16_t lport = 0;
    CHECK_ST(cbl_server_port(limited, &lport, &E), CBL_OK);
    CHECK(http(lport, "PUT", "/db", NULL, body, sizeof body) == 201);       /* 4 header fields: within */
    CHECK(http(lport, "PUT", "/db/doc", "{\"over\":\"sixteen\"}", body, sizeof body) == 413);
    CHECK(http(lport, "PUT", "/db/doc/att", "{\"twenty\":\"bytes!\"}", body, sizeof body) == 201);
    CHECK(http(lport, "PUT", "/db/doc2/att", "{\"forty\":\"bytes, more than the limit\"}", body, sizeof body) == 413);
    cbl_server_stop(limited, 1000);
    snprintf(config, sizeof config, "{\"directory\":\"%s\",\"limits\":{\"max_header_count\":3}}", limited_dir);
    CHECK_ST(cbl_server_start(config, &limited, &E), CBL_OK);
    CHECK_ST(cbl_server_port(limited, &lport, &E), CBL_OK);
    CHECK(http(lport, "GET", "/", NULL, body, sizeof body) == 431);
    cbl_server_stop(limited, 1000);
    const char* bad_limits[] = {"{\"limits\":{\"max_header_count\":0}}", "{\"limits\":{\"max_attachment_bytes\":-1}}",
                                "{\"limits\":{\"max_attachment_size\":5}}"};
    for (size_t i = 0; i < sizeof bad_limits / sizeof bad_limits[0]; i++) {
        cbl_server* s = NULL;
        CHECK_ST(cbl_server_start(bad_limits[i], &s, &E), CBL_BAD_REQUEST);
    }

    /* Stop: the handle is gone, the port free, a second stop and garbage are ignored. */
    cbl_server_stop(server, 2000);
    uint16_t stale = 77;
    CHECK_ST(cbl_server_port(server, &stale, &E), CBL_BAD_REQUEST);
    CHECK(stale == 0);                                     /* out-parameter reset on failure */
    cbl_server_stop(server, 0);
    cbl_server_stop(NULL, 0);
    cbl_server_stop((cbl_server*)(void*)db, 0);          /* not a server: ignored, db still open */
    CHECK_ST(cbl_collection_count(c, &(uint64_t){0}, &E), CBL_OK);
    snprintf(config, sizeof config, "{\"directory\":\"%s\",\"port\":%u}", dir, (unsigned)port);
    CHECK_ST(cbl_server_start(config, &server, &E), CBL_OK);  /* the same port again */
    CHECK(http(port, "GET", "/notes/n1", NULL, body, sizeof body) == 200);
    /* Parity: the replication surface through the ABI and over HTTP. */
    char* r1 = NULL;
    char* ans = NULL;                                   /* each answer is freed by check_same_answer */
    CHECK_ST(cbl_doc_put(c, "p1", "{\"v\":1,\"_attachments\":{\"a.txt\":{\"content_type\":\"text/plain\","
                         "\"data\":\"aGVsbG8=\"}}}", NULL, 0, NULL, &r1, &E), CBL_OK);
    char p1v2[256];
    snprintf(p1v2, sizeof p1v2, "{\"v\":2,\"_attachments\":{\"a.txt\":{\"stub\":true,\"digest\":\"sha1-qvTGHdzF6KLavt4PO0gs2a6pQ00=\"}}}");
    CHECK_ST(cbl_doc_put(c, "p1", p1v2, r1, 0, NULL, NULL, &E), CBL_OK);
    const char* diff = "{\"p1\":[\"1-x\",\"3-abc\"],\"zz\":[\"1-a\"],\"n1\":[]}";
    CHECK_ST(cbl_collection_revs_diff(c, diff, &ans, &E), CBL_OK);
    check_same_answer(port, "POST", "/notes/_revs_diff", diff, ans);
    char since[512];
    snprintf(since, sizeof since, "{\"docs\":[{\"id\":\"p1\"},{\"id\":\"nope\"},{\"id\":\"p1\",\"rev\":\"9-x\"},"
             "{\"id\":\"_bad\"},{\"id\":\"p1\",\"atts_since\":[\"%s\"]},{\"id\":\"p1\",\"rev\":\"%s\"}]}", r1, r1);
    CHECK_ST(cbl_collection_docs_bulk_get(c, since, "{\"revs\":true}", &ans, &E), CBL_OK);
    CHECK(ans && strstr(ans, "\"data\":\"aGVsbG8=\"") == NULL);   /* atts_since names the revision that added it */
    check_same_answer(port, "POST", "/notes/_bulk_get?revs=true", since, ans);
    const char* older = "{\"docs\":[{\"id\":\"p1\",\"atts_since\":[\"1-0\"]}]}";
    CHECK_ST(cbl_collection_docs_bulk_get(c, older, NULL, &ans, &E), CBL_OK);
    CHECK(ans && strstr(ans, "\"data\":\"aGVsbG8=\"") != NULL);   /* a document's own atts_since implies attachments */
    check_same_answer(port, "POST", "/notes/_bulk_get", older, ans);
    CHECK_ST(cbl_doc_open_revs(c, "p1", NULL, "{\"revs\":true,\"meta\":true,\"atts_since\":[\"1-0\"]}", &ans, &E), CBL_OK);
    check_same_answer(port, "GET", "/notes/p1?open_revs=all&revs=true&meta=true&atts_since=%5B%221-0%22%5D", NULL, ans);
    const char* save = "{\"docs\":[{\"_id\":\"n1\",\"v\":1},{\"_id\":\"p1\",\"_rev\":\"1-zz\"}]}";
    CHECK_ST(cbl_collection_docs_save(c, save, &ans, &E), CBL_OK);                /* conflicts only: nothing written */
    check_same_answer(port, "POST", "/notes/_bulk_docs", save, ans);
    /* An illegal ID: the ABI answers that document's error; over HTTP, as CouchDB, the whole
     * request fails with 400 illegal_docid and nothing is written. */
    const char* illegal = "{\"docs\":[{\"_id\":\"n2\",\"v\":1},{\"_id\":\"_bad\"}]}";
    static char illegal_body[4096];
    CHECK(http(port, "POST", "/notes/_bulk_docs", illegal, illegal_body, sizeof illegal_body) == 400);
    CHECK(strstr(illegal_body, "\"illegal_docid\"") != NULL);
    CHECK(http(port, "GET", "/notes/n2", NULL, illegal_body, sizeof illegal_body) == 404);
    cbl_free(r1);

    cbl_server_stop(server, 2000);

    /* Users and _security: bob (role "staff", not a server admin) may use a database only
     * once its _security object, set through the ABI, makes "staff" its members. */
    snprintf(config, sizeof config, "{\"port\":0,\"users\":{\"admin\":\"pw\","
             "\"bob\":{\"password\":\"b0b\",\"roles\":[\"staff\"]}}}");
    CHECK_ST(cbl_server_start(config, &server, &E), CBL_OK);
    CHECK_ST(cbl_server_port(server, &port, &E), CBL_OK);
    CHECK_ST(cbl_server_serve(server, "given", given, &E), CBL_OK);
    CHECK(http(port, "GET", "/given/g1", NULL, body, sizeof body) == 401);              /* anonymous */
    g_authorization = "Basic Ym9iOmIwYg==";                                             /* bob:b0b */
    CHECK(http(port, "GET", "/given/g1", NULL, body, sizeof body) == 403);
    CHECK(strstr(body, "You are not allowed to access this db.") != NULL);
    CHECK_ST(cbl_db_set_security(given, "{\"members\":{\"roles\":[\"staff\"]}}", &E), CBL_OK);
    CHECK(http(port, "GET", "/given/g1", NULL, body, sizeof body) == 200);
    CHECK(http(port, "PUT", "/given/_design/d", "{}", body, sizeof body) == 403);      /* not a database admin */
    CHECK(http(port, "PUT", "/given/_security", "{}", body, sizeof body) == 403);
    CHECK_ST(cbl_db_security(given, &json, &E), CBL_OK);
    check_same_answer(port, "GET", "/given/_security", NULL, json);                      /* frees json */
    g_authorization = "Basic YWRtaW46cHc=";                                             /* admin:pw */
    CHECK(http(port, "PUT", "/given/_security", "{\"admins\":{\"names\":[\"bob\"]}}", body, sizeof body) == 200);
    CHECK_OUT(cbl_db_security(given, &J, &E), CBL_OK, strcmp(J, "{\"admins\":{\"names\":[\"bob\"]}}") == 0);
    g_authorization = NULL;
    cbl_server_stop(server, 2000);

    cbl_collection_release(c);
    cbl_collection_release(gc);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    CHECK_ST(cbl_db_close(given, &E), CBL_OK);
    return finish_tests(instances);
}
