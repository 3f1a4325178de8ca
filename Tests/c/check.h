/*
 * check.h — the assertion conventions shared by the C test programs of libcblite.
 *
 * CHECK(cond) counts a pass or prints file:line and the last error. CHECK_ST(call, status)
 * poisons the error struct E first, then checks the status and — when the call was given
 * &E — that E was filled as the header's conventions say (same code; empty message on
 * success, a message on failure). CHECK_OUT(call, status, cond) does the same for a call
 * returning a string through `&J`: `cond` on success, J set to NULL on failure; J freed.
 * Each program prints "N passed, N failed" from g_pass / g_fail. wait_until(cond, arg, ms)
 * is the one way a test waits for a state another thread or process brings about.
 */
#ifndef CBLITE_TEST_CHECK_H
#define CBLITE_TEST_CHECK_H

#include "cblite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_pass, g_fail;
static cbl_error E;          /* the error most calls fill */
static char g_root[256];     /* the mkdtemp directory of this run */

static inline void check_(int ok, const char* what, const char* file, int line) {
    if (ok) { g_pass++; return; }
    g_fail++;
    fprintf(stderr, "%s:%d: FAILED: %s  [last cbl_error %d: %s]\n", file, line, what,
            (int)E.code, E.message);
}
#define CHECK(cond) check_((cond) ? 1 : 0, #cond, __FILE__, __LINE__)

static inline void poison(void) {
    E.code = -777;
    E.detail = -777;
    strcpy(E.message, "<poison: error not filled>");
}

static inline void check_st_(cbl_status got, cbl_status want, const char* what, const char* file,
                             int line) {
    int ok = (got == want);
    if (ok && strstr(what, "&E") != NULL) {
        if (E.code != got) ok = 0;
        else if (got == CBL_OK && E.message[0] != '\0') ok = 0;
        else if (got != CBL_OK && (E.message[0] == '\0' || strstr(E.message, "<poison") != NULL)) ok = 0;
    }
    if (ok) { g_pass++; return; }
    g_fail++;
    fprintf(stderr, "%s:%d: FAILED: %s -> %d, expected %d  [cbl_error %d: %s]\n", file, line,
            what, (int)got, (int)want, (int)E.code, E.message);
}
#define CHECK_ST(expr, want) \
    do { poison(); cbl_status st_ = (expr); check_st_(st_, (want), #expr, __FILE__, __LINE__); } while (0)

/* Poisoned out-pointers, to prove the library sets them on failure paths too. */
static char g_poison_byte __attribute__((unused));
#define POISON_PTR ((char*)&g_poison_byte)

#define CHECK_OUT(expr, want, cond) \
    do { char* J = POISON_PTR; CHECK_ST(expr, want); \
         if ((want) == CBL_OK) check_(J != NULL && J != POISON_PTR && (cond), #cond, __FILE__, __LINE__); \
         else check_(J == NULL, "out-parameter set to NULL: " #expr, __FILE__, __LINE__); \
         if (J != POISON_PTR) cbl_free(J); } while (0)

/* Milliseconds on the monotonic clock. */
static inline double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static inline void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

/* Polls cond(arg) every 2 ms until it holds (returns 1) or timeout_ms passes (returns 0):
 * a test waits for the state it needs, not for a guessed time a slow machine outlasts. */
static inline int wait_until(int (*cond)(void*), void* arg, long timeout_ms) {
    double deadline = now_ms() + timeout_ms;
    while (!cond(arg)) {
        if (now_ms() >= deadline) return cond(arg);
        sleep_ms(2);
    }
    return 1;
}

/* Opens (creating) a database / its default collection, checking the call. */
static inline cbl_db* open_db(const char* name, const char* dir) {
    cbl_db* db = NULL;
    CHECK_ST(cbl_db_open(name, dir, NULL, &db, &E), CBL_OK);
    return db;
}

static inline cbl_collection* default_coll(cbl_db* db) {
    cbl_collection* c = NULL;
    CHECK_ST(cbl_db_default_collection(db, &c, &E), CBL_OK);
    return c;
}

/* The end of every test program: no handle leaked since `instances` was read, the
 * run's directory removed, the closing line printed. Returns the exit status. */
static inline int finish_tests(int64_t instances) {
    CHECK(cbl_instance_count() == instances); /* nothing leaked */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    CHECK(system(cmd) == 0);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}

#endif
