/*
 * rel_common.h — small helpers shared by the reliability programs (Tests/reliability).
 * Everything is `static inline` so each program uses what it needs without warnings.
 */
#ifndef REL_COMMON_H
#define REL_COMMON_H

#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include "cblite.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- pass / fail accounting ---------------------------------------------------------- */

static int g_pass, g_fail;

static inline void rel_check_(int ok, const char* what, const char* file, int line) {
    if (ok) { g_pass++; return; }
    g_fail++;
    fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what);
    fflush(stderr);
}
#define CHECK(cond) rel_check_((cond) ? 1 : 0, #cond, __FILE__, __LINE__)

/* A call whose status the program does not need: cleanup of what may not exist, a
 * call inside a callback that is only there to prove nothing crashes. The header marks
 * every status warn-unused, and GCC before C23 does not take a (void) cast as an answer. */
#define IGNORE_STATUS(expr) do { if ((expr) != CBL_OK) { /* deliberately ignored */ } } while (0)

static inline void rel_failf(const char* fmt, ...) {
    va_list ap;
    g_fail++;
    fputs("FAILED: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

static inline int rel_summary(void) {
    printf("%d passed, %d failed\n", g_pass, g_fail);
    fflush(stdout);
    return g_fail == 0 ? 0 : 1;
}

/* ---- deterministic PRNG (splitmix64) ----------------------------------------------- */

typedef struct { uint64_t s; } rel_rng;
static inline uint64_t rel_next(rel_rng* r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline uint32_t rel_below(rel_rng* r, uint32_t n) { return n ? (uint32_t)(rel_next(r) % n) : 0; }

/* ---- time ----------------------------------------------------------------------------- */

static inline double rel_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
static inline void rel_sleep_us(long us) {
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ---- tiny JSON probes (enough for the library's own output) ------------------------- */

/* Copies the string value of top-level-ish key `key` ("_rev") into out; 1 if found. */
static inline int rel_json_str(const char* json, const char* key, char* out, size_t outsz) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char* p = json ? strstr(json, pat) : NULL;
    if (!p) { if (outsz) out[0] = 0; return 0; }
    p += strlen(pat);
    size_t n = 0;
    while (p[n] && p[n] != '"' && n + 1 < outsz) { out[n] = p[n]; n++; }
    out[n] = 0;
    return 1;
}
/* Integer value of `key`; `dflt` when absent. */
static inline long long rel_json_int(const char* json, const char* key, long long dflt) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char* p = json ? strstr(json, pat) : NULL;
    if (!p) return dflt;
    return strtoll(p + strlen(pat), NULL, 10);
}
static inline int rel_json_true(const char* json, const char* key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":true", key);
    return json && strstr(json, pat) != NULL;
}
static inline long rel_rev_gen(const char* rev) { return rev && *rev ? strtol(rev, NULL, 10) : 0; }

/* Splits a JSON array of plain strings (revision IDs) into items; returns the count. */
static inline int rel_json_str_array(const char* json, char items[][80], int max) {
    int n = 0;
    const char* p = json;
    while (p && (p = strchr(p, '"')) != NULL && n < max) {
        const char* q = strchr(p + 1, '"');
        if (!q) break;
        size_t len = (size_t)(q - p - 1);
        if (len >= 80) len = 79;
        memcpy(items[n], p + 1, len);
        items[n][len] = 0;
        n++;
        p = q + 1;
    }
    return n;
}

/* ---- temp dirs ------------------------------------------------------------------------- */

static inline void rel_rm_rf(const char* path) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", path);
}

/* Creates a fresh directory under $REL_TMPDIR (or build/reliability/tmp, or /tmp). */
static inline void rel_mktemp(char* out, size_t outsz, const char* tag) {
    const char* base = getenv("REL_TMPDIR");
    if (!base || !*base) base = "/tmp";
    mkdir(base, 0755);
    snprintf(out, outsz, "%s/%s-XXXXXX", base, tag);
    if (!mkdtemp(out)) { perror("mkdtemp"); exit(2); }
}

#endif
