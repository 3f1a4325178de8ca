/*
 * test_discovery.c — DNS-SD through the real .so (cbl_browser_*, cbl_server_start's
 * "advertise", cbl_server_advertisement).
 *
 *   test_discovery                    without an Avahi daemon (the bus pointed nowhere):
 *                                     the 503 statuses, argument checks, a listener that
 *                                     is not left running, nothing leaked
 *   test_discovery advertise NAME     with a daemon (Tests/discovery, in a network
 *                                     namespace): serves a database and advertises it as
 *                                     NAME, prints the advertisement's JSON once
 *                                     established; a line on stdin serves another
 *                                     database by handle ("given"); stops (withdrawing
 *                                     the advertisement) when stdin closes
 *   test_discovery browse NAME        with a daemon: browses until NAME appears, until it
 *                                     is updated with "given" among its databases, and
 *                                     until it disappears (printing each event); exit 1
 *                                     when one does not happen within 30 s
 */
#define _POSIX_C_SOURCE 200809L
#include "check.h"

#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

/* What the browser saw of the peer it waits for. */
static struct {
    pthread_mutex_t lock;
    const char* name;
    int appeared, updated, disappeared, events;
} seen = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0};

static void on_event(void* context, const char* json) {
    CHECK(context == &seen);
    pthread_mutex_lock(&seen.lock);
    seen.events++;
    char quoted[200];
    snprintf(quoted, sizeof quoted, "\"name\":\"%s\"", seen.name);
    if (strstr(json, quoted)) {
        if (strstr(json, "\"event\":\"appeared\"")) { seen.appeared++; printf("%s\n", json); }
        if (strstr(json, "\"event\":\"updated\"") && strstr(json, "\"given\"")) { seen.updated++; printf("%s\n", json); }
        if (strstr(json, "\"event\":\"disappeared\"")) { seen.disappeared++; printf("%s\n", json); }
        fflush(stdout);
    }
    pthread_mutex_unlock(&seen.lock);
}

static int appeared(void* arg) { (void)arg; pthread_mutex_lock(&seen.lock); int n = seen.appeared; pthread_mutex_unlock(&seen.lock); return n > 0; }
static int updated(void* arg) { (void)arg; pthread_mutex_lock(&seen.lock); int n = seen.updated; pthread_mutex_unlock(&seen.lock); return n > 0; }
static int disappeared(void* arg) { (void)arg; pthread_mutex_lock(&seen.lock); int n = seen.disappeared; pthread_mutex_unlock(&seen.lock); return n > 0; }

/* A callback that stops its own browser: the stop returns at once, and no event follows. */
static cbl_browser* g_self_stopping;
static int g_self_calls;
static void stop_from_callback(void* context, const char* json) {
    (void)context; (void)json;
    __atomic_add_fetch(&g_self_calls, 1, __ATOMIC_SEQ_CST);
    cbl_browser_stop(g_self_stopping);
}
static int self_stopped(void* arg) { (void)arg; return __atomic_load_n(&g_self_calls, __ATOMIC_SEQ_CST) > 0; }

static int browse(const char* name) {
    int64_t instances = cbl_instance_count();
    seen.name = name;
    cbl_browser* b = NULL;
    CHECK_ST(cbl_browser_start(NULL, on_event, &seen, &b, &E), CBL_OK);
    CHECK(wait_until(appeared, NULL, 30000));
    CHECK_OUT(cbl_browser_peers(b, &J, &E), CBL_OK, strstr(J, name) != NULL && strstr(J, "\"databases\":[\"notes\"]") != NULL);
    /* A second browser, stopped from inside its first event (the peer already there). */
    CHECK_ST(cbl_browser_start(NULL, stop_from_callback, NULL, &g_self_stopping, &E), CBL_OK);
    CHECK(wait_until(self_stopped, NULL, 30000));
    sleep_ms(200);
    CHECK(__atomic_load_n(&g_self_calls, __ATOMIC_SEQ_CST) == 1);
    cbl_browser_stop(g_self_stopping);        /* released already: ignored */
    /* The advertiser serves another database (the test tells it to): its TXT follows. */
    CHECK(wait_until(updated, NULL, 30000));
    CHECK_OUT(cbl_browser_peers(b, &J, &E), CBL_OK, strstr(J, "\"databases\":[\"given\",\"notes\"]") != NULL
                                                    || strstr(J, "\"databases\":[\"notes\",\"given\"]") != NULL);
    CHECK(wait_until(disappeared, NULL, 30000));
    CHECK_OUT(cbl_browser_peers(b, &J, &E), CBL_OK, strstr(J, name) == NULL);
    cbl_browser_stop(b);
    CHECK(cbl_instance_count() == instances);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}

static int advertise(const char* name) {
    int64_t instances = cbl_instance_count();
    snprintf(g_root, sizeof g_root, "/tmp/cblite-discovery-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 1; }
    cbl_db* db = open_db("notes", g_root);
    CHECK_ST(cbl_db_close(db, &E), CBL_OK);
    char config[600];
    snprintf(config, sizeof config, "{\"directory\":\"%s\",\"host\":\"0.0.0.0\",\"port\":0,"
             "\"allow_remote_without_auth\":true,\"advertise\":{\"name\":\"%s\"}}", g_root, name);
    cbl_server* server = NULL;
    CHECK_ST(cbl_server_start(config, &server, &E), CBL_OK);
    char* json = NULL;
    double deadline = now_ms() + 30000;
    while (now_ms() < deadline) {
        CHECK_ST(cbl_server_advertisement(server, &json, &E), CBL_OK);
        if (json && !strstr(json, "\"registering\"")) break;
        cbl_free(json);
        json = NULL;
        sleep_ms(20);
    }
    CHECK(json && strstr(json, "\"state\":\"established\"") && strstr(json, "\"db=notes\""));
    printf("%s\n", json ? json : "null");
    fflush(stdout);
    cbl_free(json);
    char line[64];
    cbl_db* given = NULL;
    while (fgets(line, sizeof line, stdin)) {         /* until the test closes stdin */
        char other[300];
        snprintf(other, sizeof other, "%s/other", g_root);
        given = open_db("given", other);
        CHECK_ST(cbl_server_serve(server, "given", given, &E), CBL_OK);
        CHECK_OUT(cbl_server_advertisement(server, &J, &E), CBL_OK, strstr(J, "\"db=") && strstr(J, "given"));
        printf("served\n");
        fflush(stdout);
    }
    cbl_server_stop(server, 1000);
    if (given) CHECK_ST(cbl_db_close(given, &E), CBL_OK);
    return finish_tests(instances);
}

static int without_daemon(void) {
    int64_t instances = cbl_instance_count();
    snprintf(g_root, sizeof g_root, "/tmp/cblite-discovery-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 1; }
    /* A system bus nobody listens on: no Avahi daemon can be reached. */
    setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/cblite-no-bus", 1);

    cbl_browser* b = (cbl_browser*)POISON_PTR;
    CHECK_ST(cbl_browser_start(NULL, on_event, NULL, &b, &E), CBL_BUSY);
    CHECK(b == NULL);
    CHECK(strstr(E.message, "avahi-daemon") != NULL);
    CHECK_ST(cbl_browser_start("not-a-type", on_event, NULL, &b, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_browser_start(NULL, NULL, NULL, &b, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_browser_start(NULL, on_event, NULL, NULL, &E), CBL_BAD_REQUEST);
    CHECK_OUT(cbl_browser_peers(NULL, &J, &E), CBL_BAD_REQUEST, 1);
    cbl_browser_stop(NULL);

    /* A listener told to advertise is not left running unadvertised. */
    char config[400];
    snprintf(config, sizeof config, "{\"directory\":\"%s\",\"port\":0,\"advertise\":{\"name\":\"tablet\"}}", g_root);
    cbl_server* s = NULL;
    CHECK_ST(cbl_server_start(config, &s, &E), CBL_BUSY);
    CHECK(s == NULL);
    CHECK(strstr(E.message, "not reachable") != NULL);
    CHECK_ST(cbl_server_start("{\"advertise\":{\"name\":\"\"}}", &s, &E), CBL_BAD_REQUEST);
    CHECK_ST(cbl_server_start("{\"advertise\":{\"name\":\"x\",\"type\":\"http\"}}", &s, &E), CBL_BAD_REQUEST);
    /* Without "advertise" it runs as ever, and says it is not advertised. */
    CHECK_ST(cbl_server_start("{\"port\":0}", &s, &E), CBL_OK);
    CHECK_OUT(cbl_server_advertisement(s, &J, &E), CBL_NOT_FOUND, 1);
    cbl_server_stop(s, 0);
    CHECK_OUT(cbl_server_advertisement(NULL, &J, &E), CBL_BAD_REQUEST, 1);
    return finish_tests(instances);
}

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "browse") == 0) return browse(argv[2]);
    if (argc == 3 && strcmp(argv[1], "advertise") == 0) return advertise(argv[2]);
    if (argc != 1) { fprintf(stderr, "usage: test_discovery [browse NAME | advertise NAME]\n"); return 64; }
    return without_daemon();
}
