/* bench_common.c — see bench_common.h. */
#define _XOPEN_SOURCE 700
#include "bench_common.h"

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_HAVE_CALLGRIND 1
#endif
#endif

const char* const bench_phase_names[PH_COUNT] = {
    "insert", "read", "update", "view_build", "view_query", "delete", "changes", "attachments"
};

int bench_phase_index(const char* name) {
    for (int i = 0; i < PH_COUNT; i++)
        if (strcmp(name, bench_phase_names[i]) == 0) return i;
    return -1;
}

void bench_die(const char* fmt, ...) {
    va_list ap;
    fflush(stdout);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* ---- arguments ----------------------------------------------------------------------- */

static void usage(const char* prog) {
    bench_die("usage: %s --n N --dir DIR [--phases insert,read,...] [--changes-page K] [--keep]\n"
              "       %s --list-phases", prog, prog);
}

int bench_parse_side_args(int argc, char** argv, const int available[PH_COUNT],
                          bench_opts* opts) {
    memset(opts, 0, sizeof *opts);
    const char* env_n = getenv("BENCH_N");
    opts->n = env_n ? atol(env_n) : 100000;
    const char* env_page = getenv("BENCH_CHANGES_PAGE");
    opts->changes_page = env_page ? atol(env_page) : 1000;
    for (int i = 0; i < PH_COUNT; i++) opts->phases[i] = available[i];
    for (int a = 1; a < argc; a++) {
        const char* arg = argv[a];
        const char* val = a + 1 < argc ? argv[a + 1] : NULL;
        if (strcmp(arg, "--list-phases") == 0) {
            int first = 1;
            for (int i = 0; i < PH_COUNT; i++)
                if (available[i]) { printf("%s%s", first ? "" : ",", bench_phase_names[i]); first = 0; }
            printf("\n");
            return 1;
        } else if (strcmp(arg, "--keep") == 0) {
            opts->keep = 1;
        } else if (strcmp(arg, "--encrypted") == 0) {
            opts->encrypted = 1;
        } else if (strcmp(arg, "--n") == 0 && val) {
            opts->n = atol(val); a++;
        } else if (strcmp(arg, "--dir") == 0 && val) {
            opts->dir = val; a++;
        } else if (strcmp(arg, "--changes-page") == 0 && val) {
            opts->changes_page = atol(val); a++;
        } else if (strcmp(arg, "--phases") == 0 && val) {
            for (int i = 0; i < PH_COUNT; i++) opts->phases[i] = 0;
            char buf[512];
            snprintf(buf, sizeof buf, "%s", val);
            for (char* tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                int ph = bench_phase_index(tok);
                if (ph < 0) bench_die("%s: unknown phase '%s'", argv[0], tok);
                if (!available[ph]) bench_die("%s: phase '%s' is not built on this side", argv[0], tok);
                opts->phases[ph] = 1;
            }
            a++;
        } else {
            usage(argv[0]);
        }
    }
    if (opts->n < 1 || !opts->dir) usage(argv[0]);
    return 0;
}

/* ---- data ---------------------------------------------------------------------------- */

static const char* const CITIES[10] = {
    "Paris", "London", "Berlin", "Madrid", "Rome", "Vienna", "Prague", "Lisbon", "Dublin", "Oslo"
};

/* Hand-rolled formatting: snprintf would cost as much as a raw SQLite insert and blur
 * the ratios. */
static char* put_str(char* p, const char* s) {
    while (*s) *p++ = *s++;
    return p;
}

static char* put_long(char* p, long v) {
    char tmp[24];
    int k = 0;
    if (v < 0) { *p++ = '-'; v = -v; }
    do { tmp[k++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (k) *p++ = tmp[--k];
    return p;
}

void bench_doc_id(char out[BENCH_ID_SIZE], long i) {
    char* p = put_str(out, "doc-");
    if (i < 1000000) {
        for (long d = 100000; d; d /= 10) *p++ = (char)('0' + (i / d) % 10);
    } else {
        p = put_long(p, i);
    }
    *p = 0;
}

int bench_doc_body(char out[BENCH_BODY_SIZE], long i, int age) {
    long s = (i * 7) % 1000;
    char* p = put_str(out, "{\"type\":\"person\",\"name\":\"user");
    p = put_long(p, i);
    p = put_str(p, "\",\"age\":");
    p = put_long(p, age);
    p = put_str(p, ",\"city\":\"");
    p = put_str(p, CITIES[i % 10]);
    p = put_str(p, "\",\"score\":");
    p = put_long(p, s / 10);
    *p++ = '.';
    p = put_long(p, s % 10);
    p = put_str(p, ",\"tags\":[\"t");
    p = put_long(p, i % 5);
    p = put_str(p, "\",\"t");
    p = put_long(p, i % 7);
    p = put_str(p, "\"],\"active\":");
    p = put_str(p, i % 2 == 0 ? "true}" : "false}");
    *p = 0;
    return (int)(p - out);
}

static uint64_t lcg_next(uint64_t* state) {
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 33;
}

long* bench_read_order(long n) {
    long* order = malloc((size_t)n * sizeof *order);
    if (!order) bench_die("out of memory");
    for (long i = 0; i < n; i++) order[i] = i;
    uint64_t st = 42;
    for (long k = n - 1; k > 0; k--) {
        long j = (long)(lcg_next(&st) % (uint64_t)(k + 1));
        long t = order[k]; order[k] = order[j]; order[j] = t;
    }
    return order;
}

void bench_att_bytes(unsigned char* out, size_t size, long k) {
    /* splitmix64, 8 bytes a step: cheap next to storing the bytes */
    uint64_t st = 42u + (uint64_t)k * 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < size; i += 8) {
        uint64_t z = (st += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        size_t m = size - i < 8 ? size - i : 8;
        memcpy(out + i, &z, m);
    }
}

int bench_age_after_update(long i) {
    return (int)(i % 90) + (i % 10 == 0 ? 1 : 0);
}

long bench_expected_key_count(long n, int key, int after_delete) {
    long c = 0;
    for (long i = 0; i < n; i++)
        if (bench_age_after_update(i) == key && !(after_delete && i % 10 == 5)) c++;
    return c;
}

long bench_expected_groups(long n, int after_delete) {
    char seen[128] = {0};
    long c = 0;
    for (long i = 0; i < n; i++) {
        if (after_delete && i % 10 == 5) continue;
        int a = bench_age_after_update(i);
        if (!seen[a]) { seen[a] = 1; c++; }
    }
    return c;
}

/* ---- tiny JSON scanner --------------------------------------------------------------- */

static const char* skip_ws(const char* p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

/* p at '"': returns the position after the closing quote, or NULL. */
static const char* skip_string(const char* p) {
    for (p++; *p; p++) {
        if (*p == '\\') { if (!*++p) return NULL; }
        else if (*p == '"') return p + 1;
    }
    return NULL;
}

static const char* skip_value(const char* p) {
    if (*p == '"') return skip_string(p);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (*p) {
            if (*p == '"') { p = skip_string(p); if (!p) return NULL; continue; }
            if (*p == '{' || *p == '[') depth++;
            else if (*p == '}' || *p == ']') { if (--depth == 0) return p + 1; }
            p++;
        }
        return NULL;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n') p++;
    return p;
}

const char* bench_json_find(const char* json, const char* key) {
    if (!json) return NULL;
    size_t klen = strlen(key);
    const char* p = skip_ws(json);
    if (*p != '{') return NULL;
    p++;
    for (;;) {
        p = skip_ws(p);
        if (*p != '"') return NULL;
        const char* ks = p + 1;
        const char* q = skip_string(p);
        if (!q) return NULL;
        int match = (size_t)(q - 1 - ks) == klen && memcmp(ks, key, klen) == 0;
        p = skip_ws(q);
        if (*p != ':') return NULL;
        p = skip_ws(p + 1);
        if (match) return p;
        p = skip_value(p);
        if (!p) return NULL;
        p = skip_ws(p);
        if (*p != ',') return NULL;
        p++;
    }
}

int bench_json_int(const char* p, long long* out) {
    if (!p) return 0;
    char* end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno) return 0;
    *out = v;
    return 1;
}

int bench_json_str(const char* p, char* out, size_t size) {
    if (!p || *p != '"') return 0;
    const char* e = strchr(p + 1, '"');
    if (!e || (size_t)(e - p - 1) >= size) return 0;
    memcpy(out, p + 1, (size_t)(e - p - 1));
    out[e - p - 1] = 0;
    return 1;
}

/* ---- measurement --------------------------------------------------------------------- */

double bench_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long status_kib(const char* field) {
    FILE* f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    size_t flen = strlen(field);
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, flen) == 0 && line[flen] == ':') { v = atol(line + flen + 1); break; }
    fclose(f);
    return v;
}

long bench_rss_kib(void) { return status_kib("VmRSS"); }

long bench_ru_maxrss_kib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int peak_reset_works = -1;

void bench_rss_reset_peak(void) {
    FILE* f = fopen("/proc/self/clear_refs", "w");
    int ok = 0;
    if (f) { ok = fputs("5", f) >= 0; ok = (fclose(f) == 0) && ok; }
    if (peak_reset_works < 0) peak_reset_works = ok;
}

long bench_rss_peak_kib(void) {
    long hwm = peak_reset_works == 1 ? status_kib("VmHWM") : -1;
    return hwm >= 0 ? hwm : bench_ru_maxrss_kib();
}

static long long tree_total;
static int tree_add(const char* path, const struct stat* st, int flag, struct FTW* ftw) {
    (void)path; (void)ftw;
    if (flag == FTW_F && S_ISREG(st->st_mode)) tree_total += (long long)st->st_size;
    return 0;
}

long long bench_tree_bytes(const char* path) {
    tree_total = 0;
    if (nftw(path, tree_add, 16, FTW_PHYS) != 0) return -1;
    return tree_total;
}

static int tree_rm(const char* path, const struct stat* st, int flag, struct FTW* ftw) {
    (void)st; (void)flag; (void)ftw;
    return remove(path) == 0 ? 0 : -1;
}

int bench_remove_tree(const char* path) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    return nftw(path, tree_rm, 16, FTW_DEPTH | FTW_PHYS);
}

int bench_mkdirs(const char* path) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return -1;
    for (char* p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

/* ---- phases -------------------------------------------------------------------------- */

static void print_smaps(const char* phase);

void bench_side_init(bench_side* s, const char* side) {
    s->side = side;
    s->start_rss_kib = bench_rss_kib();
    print_smaps("start");
    s->phase = -1;
    s->t0 = 0;
    s->max_peak_kib = 0;
}

/* BENCH_CALLGRIND_DUMPS=1 under callgrind: one profile dump per phase (make profile). */
static int callgrind_dumps(void) {
    static int on = -1;
    if (on < 0) on = getenv("BENCH_CALLGRIND_DUMPS") && atoi(getenv("BENCH_CALLGRIND_DUMPS")) != 0;
    return on;
}

/* BENCH_CALLGRIND_FROM=PHASE with valgrind --instr-atstart=no: instrumentation starts at
 * that phase, so the phases before it (making a large database) run at native-ish speed. */
static int callgrind_starts_at(int phase) {
    const char* from = getenv("BENCH_CALLGRIND_FROM");
    return from && strcmp(from, bench_phase_names[phase]) == 0;
}

/* BENCH_PERF_CTL=FIFO BENCH_PERF_PHASE=PHASE under `perf record --control fifo:FIFO
 * --delay=-1`: perf samples that phase only ("enable" at its start, "disable" at its end). */
static void perf_control(int phase, const char* command) {
    const char* fifo = getenv("BENCH_PERF_CTL");
    const char* which = getenv("BENCH_PERF_PHASE");
    if (!fifo || !which || strcmp(which, bench_phase_names[phase]) != 0) return;
    FILE* f = fopen(fifo, "w");
    if (!f) return;
    fprintf(f, "%s\n", command);
    fclose(f);
}

void bench_phase_begin(bench_side* s, int phase) {
    perf_control(phase, "enable");
#ifdef BENCH_HAVE_CALLGRIND
    if (callgrind_starts_at(phase)) CALLGRIND_START_INSTRUMENTATION;
    if (callgrind_dumps()) CALLGRIND_DUMP_STATS_AT("between-phases");
#else
    (void)callgrind_starts_at;
    (void)callgrind_dumps;
#endif
    if (s->phase < 0 && phase == 0) print_smaps("before-first-phase");
    /* BENCH_PAUSE_MS=N: sleep N ms before each phase (not timed), so that work a phase
     * leaves to the library's threads (the write-ahead log's copy) is done before the
     * next one starts: what a phase costs alone, against what it costs beside them. */
    const char* pause = getenv("BENCH_PAUSE_MS");
    if (pause && atoi(pause) > 0) {
        struct timespec ts = { atoi(pause) / 1000, (long)(atoi(pause) % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    bench_rss_reset_peak();
    s->phase = phase;
    s->t0 = bench_now_ms();
}

/* BENCH_SMAPS=N: after each phase, the N mappings with the most resident memory
 * (/proc/self/smaps), to see what a phase's peak is made of: heap, page caches, or
 * library code and data paged in by first use. */
static void print_smaps(const char* phase) {
    const char* env = getenv("BENCH_SMAPS");
    int top = env ? atoi(env) : 0;
    if (top <= 0) return;
    enum { MAX = 64 };
    struct { long rss; char name[160]; } best[MAX];
    int n = 0;
    if (top > MAX) top = MAX;
    FILE* f = fopen("/proc/self/smaps", "r");
    if (!f) return;
    char line[512], name[160] = "";
    long total = 0, anon = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char path[400] = "";
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %399s", &lo, &hi, path) >= 2 && strchr(line, '-') < strchr(line, ' ')) {
            const char* base = strrchr(path, '/');
            snprintf(name, sizeof name, "%s", path[0] ? (base ? base + 1 : path) : "[anon]");
            continue;
        }
        long kib;
        if (sscanf(line, "Rss: %ld kB", &kib) == 1 && kib > 0) {
            total += kib;
            if (!strcmp(name, "[anon]") || !strcmp(name, "[heap]")) anon += kib;
            int i = 0;
            while (i < n && strcmp(best[i].name, name) != 0) i++;
            if (i == n && n < MAX) { best[n].rss = 0; snprintf(best[n].name, sizeof best[n].name, "%s", name); n++; }
            if (i < n) best[i].rss += kib;
        }
    }
    fclose(f);
    for (int i = 0; i < n; i++)       /* largest first */
        for (int j = i + 1; j < n; j++)
            if (best[j].rss > best[i].rss) { long r = best[i].rss; char t[160]; memcpy(t, best[i].name, sizeof t);
                best[i] = best[j]; best[j].rss = r; memcpy(best[j].name, t, sizeof t); }
    printf("smaps %s total %ld KiB, anonymous and heap %ld KiB:", phase, total, anon);
    for (int i = 0; i < n && i < top; i++) printf(" %s %ld;", best[i].name, best[i].rss);
    printf("\n");
}

void bench_phase_end(bench_side* s, long count) {
    double ms = bench_now_ms() - s->t0;
    perf_control(s->phase, "disable");
#ifdef BENCH_HAVE_CALLGRIND
    if (callgrind_dumps()) {
        char tag[64];
        snprintf(tag, sizeof tag, "phase-%s", bench_phase_names[s->phase]);
        CALLGRIND_DUMP_STATS_AT(tag);
    }
#endif
    long peak = bench_rss_peak_kib() - s->start_rss_kib;
    if (peak > s->max_peak_kib) s->max_peak_kib = peak;
    printf("phase %s %.3f %ld %ld\n", bench_phase_names[s->phase], ms, count, peak < 0 ? 0 : peak);
    print_smaps(bench_phase_names[s->phase]);
    fflush(stdout);
    s->phase = -1;
}

void bench_check(const char* phase, const char* fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("check %s %s\n", phase, msg);
    fflush(stdout);
}

void bench_print_sizes(long long after_close, long long while_open) {
    printf("size %lld %lld\n", after_close, while_open);
}

void bench_print_rss(const bench_side* s) {
    printf("rss %ld %ld\n", s->max_peak_kib, s->start_rss_kib);
}

size_t bench_batch_json(char* out, long lo, long hi) {
    char* p = out;
    *p++ = '[';
    for (long i = lo; i < hi; i++) {
        char id[BENCH_ID_SIZE], body[BENCH_BODY_SIZE];
        bench_doc_id(id, i);
        int len = bench_doc_body(body, i, (int)(i % 90));
        if (i > lo) *p++ = ',';
        /* {"_id":"<id>", + the body's members */
        p += sprintf(p, "{\"_id\":\"%s\",", id);
        memcpy(p, body + 1, (size_t)len - 1);
        p += len - 1;
    }
    *p++ = ']';
    *p = 0;
    return (size_t)(p - out);
}

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

double bench_median(double* v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
