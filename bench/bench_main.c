/*
 * bench_main.c — the driver of `make bench`. Runs the cblite side (bench_cblite) and the
 * raw-SQLite baseline (bench_sqlite) as separate processes, alternating which goes first,
 * BENCH_RUNS times each on a fresh database, and reports medians: a table per phase on
 * stdout and the same as JSON (WORKLOAD.md's shape plus more fields).
 *
 * It never judges the numbers: it exits nonzero only when a side fails (a call returned
 * an error, or the process died). Results that differ from what the workload implies are
 * printed as warnings and listed under "checks" in the JSON.
 *
 *   bench --n N --runs R [--cblite PATH] --baseline PATH --data DIR [--json FILE]
 *         [--commit SHA] [--lib SO] [--lib-stripped SO]
 * BENCH_BASELINE_ALL=1 also runs the baseline phases that cblite has not built (their
 * times are shown for reference; the baseline's later phases then do more work).
 */
#define _XOPEN_SOURCE 700
#include "bench_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RUNS 32
#define MAX_CHECKS 64

/* SIDE_ENCRYPTED is the cblite side on an encrypted database, insert and read only
 * (the encryption cost: WORKLOAD and issue targets compare it with the plain run). */
enum { SIDE_CBLITE, SIDE_BASELINE, SIDE_ENCRYPTED, SIDE_COUNT };
static const char* const side_names[SIDE_COUNT] = {"cblite", "baseline", "encrypted"};

typedef struct run_result {
    int have[PH_COUNT];
    double ms[PH_COUNT];
    long count[PH_COUNT];
    long rss_kib[PH_COUNT];
    long long size_closed, size_open;
    long rss_max_kib, rss_start_kib;
    double wall_ms;
} run_result;

static run_result results[SIDE_COUNT][MAX_RUNS];
static char storage[SIDE_COUNT][512];
static char cblite_version[64];
static long big_mb;                          /* large streamed attachment: size, */
static double big_ms[MAX_RUNS];              /* time in and out per run, */
static long big_peak_kib[MAX_RUNS];          /* and peak RSS above the level before it */
static int big_runs;
static char checks[MAX_CHECKS][600];
static int nchecks;

/* ---- child processes ---------------------------------------------------------------- */

/* Runs argv, capturing stdout (stderr passes through). Returns the malloc'ed output, or
 * NULL when the child did not exit with 0 (*status describes why). */
static char* run_child(char* const argv[], char* status, size_t status_size) {
    int fds[2];
    if (pipe(fds) != 0) bench_die("bench: pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) bench_die("bench: fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        fprintf(stderr, "bench: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 4096, len = 0;
    char* buf = malloc(cap);
    if (!buf) bench_die("out of memory");
    for (;;) {
        if (len + 1024 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (!buf) bench_die("out of memory");
        }
        ssize_t r = read(fds[0], buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        len += (size_t)r;
    }
    buf[len] = 0;
    close(fds[0]);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) return buf;
    if (WIFEXITED(ws)) snprintf(status, status_size, "exit status %d", WEXITSTATUS(ws));
    else if (WIFSIGNALED(ws)) snprintf(status, status_size, "killed by signal %d (%s)", WTERMSIG(ws),
                                       strsignal(WTERMSIG(ws)));
    else snprintf(status, status_size, "wait status %d", ws);
    if (len) fprintf(stderr, "bench: its output so far:\n%s", buf);
    free(buf);
    return NULL;
}

static void add_check(const char* side, int run, const char* text) {
    /* the same text from several runs is reported once */
    char line[600];
    snprintf(line, sizeof line, "%s: %s", side, text);
    for (int i = 0; i < nchecks; i++)
        if (strcmp(checks[i], line) == 0) return;
    (void)run;
    if (nchecks < MAX_CHECKS) snprintf(checks[nchecks++], sizeof checks[0], "%s", line);
}

static void parse_output(int side, int run, char* out) {
    run_result* r = &results[side][run];
    for (char* line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char name[64];
        double ms;
        long count, rss;
        long long a, b;
        if (sscanf(line, "phase %63s %lf %ld %ld", name, &ms, &count, &rss) == 4) {
            int ph = bench_phase_index(name);
            if (ph < 0) continue;
            r->have[ph] = 1;
            r->ms[ph] = ms;
            r->count[ph] = count;
            r->rss_kib[ph] = rss;
        } else if (sscanf(line, "size %lld %lld", &a, &b) == 2) {
            r->size_closed = a;
            r->size_open = b;
        } else if (sscanf(line, "rss %lld %lld", &a, &b) == 2) {
            r->rss_max_kib = (long)a;
            r->rss_start_kib = (long)b;
        } else if (strncmp(line, "info storage ", 13) == 0) {
            snprintf(storage[side], sizeof storage[side], "%s", line + 13);
        } else if (strncmp(line, "info big_attachment ", 20) == 0 && big_runs < MAX_RUNS) {
            double ms = 0;
            long mb = 0, peak = 0;
            if (sscanf(line + 20, "%ld %lf %ld", &mb, &ms, &peak) == 3) {
                big_mb = mb;
                big_ms[big_runs] = ms;
                big_peak_kib[big_runs++] = peak;
            }
        } else if (strncmp(line, "info version ", 13) == 0) {
            snprintf(cblite_version, sizeof cblite_version, "%s", line + 13);
        } else if (strncmp(line, "check ", 6) == 0) {
            add_check(side_names[side], run, line + 6);
        }
    }
}

/* ---- statistics --------------------------------------------------------------------- */



typedef struct phase_stat {
    int have;
    double ms, rss_mib;
    long count;
    double runs_ms[MAX_RUNS];
} phase_stat;

static void stat_phase(int side, int ph, int runs, phase_stat* st) {
    double v[MAX_RUNS], rss[MAX_RUNS];
    int k = 0;
    memset(st, 0, sizeof *st);
    for (int r = 0; r < runs; r++) {
        if (!results[side][r].have[ph]) continue;
        st->runs_ms[k] = results[side][r].ms[ph];
        v[k] = results[side][r].ms[ph];
        rss[k] = results[side][r].rss_kib[ph] / 1024.0;
        st->count = results[side][r].count[ph];
        k++;
    }
    if (k == 0) return;
    st->have = 1;
    st->ms = bench_median(v, k);
    st->rss_mib = bench_median(rss, k);
}

static double median_of(int side, int runs, int which) {
    double v[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        const run_result* x = &results[side][r];
        v[r] = which == 0 ? (double)x->size_closed : which == 1 ? (double)x->size_open
             : which == 2 ? x->rss_max_kib / 1024.0 : which == 3 ? x->rss_start_kib / 1024.0
             : x->wall_ms;
    }
    return bench_median(v, runs);
}

/* ---- output helpers ---------------------------------------------------------------- */

static void json_str(FILE* f, const char* s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void cpu_model(char* out, size_t size) {
    snprintf(out, size, "unknown");
    FILE* f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char* p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ' || *p == '\t') p++;
                p[strcspn(p, "\n")] = 0;
                snprintf(out, size, "%s", p);
            }
            break;
        }
    }
    fclose(f);
}

static long long file_size(const char* path) {
    struct stat st;
    if (!path || stat(path, &st) != 0) return -1;
    return (long long)st.st_size;
}

static const char* fmt_rate(char* buf, size_t size, long count, double ms) {
    if (ms <= 0) snprintf(buf, size, "-");
    else snprintf(buf, size, "%.0f", count / (ms / 1000.0));
    return buf;
}

static const char* arg_value(int argc, char** argv, const char* name) {
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return NULL;
}

int main(int argc, char** argv) {
    const char* s_n = arg_value(argc, argv, "--n");
    const char* s_runs = arg_value(argc, argv, "--runs");
    const char* cblite = arg_value(argc, argv, "--cblite");
    const char* baseline = arg_value(argc, argv, "--baseline");
    const char* data = arg_value(argc, argv, "--data");
    const char* json_path = arg_value(argc, argv, "--json");
    const char* commit = arg_value(argc, argv, "--commit");
    const char* lib = arg_value(argc, argv, "--lib");
    const char* lib_stripped = arg_value(argc, argv, "--lib-stripped");
    if (!s_n) s_n = getenv("BENCH_N");
    if (!s_runs) s_runs = getenv("BENCH_RUNS");
    long n = s_n ? atol(s_n) : 100000;
    int runs = s_runs ? atoi(s_runs) : 3;
    if (!commit) commit = "unknown";
    if (n < 1 || runs < 1 || runs > MAX_RUNS || !baseline || !data)
        bench_die("usage: %s --n N --runs R [--cblite PATH] --baseline PATH --data DIR [--json FILE] "
                  "[--commit SHA] [--lib SO] [--lib-stripped SO]", argv[0]);
    int baseline_all = getenv("BENCH_BASELINE_ALL") && atoi(getenv("BENCH_BASELINE_ALL"));

    /* Which phases each side runs: cblite says what it has built; the baseline does the
     * same (so its later phases do the same work) unless BENCH_BASELINE_ALL=1. */
    int built[SIDE_COUNT][PH_COUNT] = {{0}};
    char status[128];
    if (cblite) {
        char* argv_list[] = {(char*)cblite, "--list-phases", NULL};
        char* out = run_child(argv_list, status, sizeof status);
        if (!out) bench_die("bench: %s --list-phases failed: %s", cblite, status);
        char* nl = strchr(out, '\n');
        if (nl) *nl = 0;
        for (char* tok = strtok(out, ","); tok; tok = strtok(NULL, ",")) {
            int ph = bench_phase_index(tok);
            if (ph >= 0) built[SIDE_CBLITE][ph] = 1;
        }
        free(out);
    }
    char phase_list[SIDE_COUNT][256];
    for (int side = 0; side < SIDE_COUNT; side++) {
        phase_list[side][0] = 0;
        for (int ph = 0; ph < PH_COUNT; ph++) {
            if (side == SIDE_BASELINE)
                built[side][ph] = !cblite || baseline_all || built[SIDE_CBLITE][ph];
            if (side == SIDE_ENCRYPTED)
                built[side][ph] = cblite && built[SIDE_CBLITE][ph] && (ph == PH_INSERT || ph == PH_READ);
            if (!built[side][ph]) continue;
            if (phase_list[side][0]) strcat(phase_list[side], ",");
            strcat(phase_list[side], bench_phase_names[ph]);
        }
    }

    char model[256], date[64];
    cpu_model(model, sizeof model);
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    printf("cblite benchmark: N=%ld, %d run%s per side (medians), commit %s, %ld x %s\n",
           n, runs, runs == 1 ? "" : "s", commit, nproc, model);
    if (bench_remove_tree(data) != 0 || bench_mkdirs(data) != 0) bench_die("bench: cannot create %s", data);

    /* ---- the runs ---- */
    double t_all = bench_now_ms();
    char n_arg[32], dir_arg[SIDE_COUNT][4096];
    snprintf(n_arg, sizeof n_arg, "%ld", n);
    for (int r = 0; r < runs; r++) {
        printf("run %d/%d:", r + 1, runs);
        for (int k = 0; k < SIDE_COUNT; k++) {
            int side = (r % 2 == 0) ? k : SIDE_COUNT - 1 - k; /* alternate who goes first */
            const char* prog = side == SIDE_BASELINE ? baseline : cblite;
            if (!prog || !phase_list[side][0]) continue;
            snprintf(dir_arg[side], sizeof dir_arg[side], "%s/%s-run%d", data, side_names[side], r + 1);
            char* argv_list[] = {(char*)prog, "--n", n_arg, "--dir", dir_arg[side], "--phases",
                                 phase_list[side], side == SIDE_ENCRYPTED ? "--encrypted" : NULL, NULL};
            double t0 = bench_now_ms();
            char* out = run_child(argv_list, status, sizeof status);
            if (!out) {
                printf("\n");
                bench_die("bench: the %s side failed in run %d (%s); see its message above",
                          side_names[side], r + 1, status);
            }
            results[side][r].wall_ms = bench_now_ms() - t0;
            parse_output(side, r, out);
            free(out);
            printf(" %s %.1f s", side_names[side], results[side][r].wall_ms / 1000.0);
            fflush(stdout);
        }
        printf("\n");
    }
    double total_s = (bench_now_ms() - t_all) / 1000.0;

    /* ---- the table ---- */
    phase_stat st[SIDE_COUNT][PH_COUNT];
    for (int side = 0; side < SIDE_COUNT; side++)
        for (int ph = 0; ph < PH_COUNT; ph++) stat_phase(side, ph, runs, &st[side][ph]);

    printf("\nratio = cblite ms / baseline ms (1.00 = as fast as raw SQLite); docs/s = count per second;\n"
           "RSS = peak resident memory during the phase above the process's start\n\n");
    printf("%-12s %11s %11s %8s %12s %12s %8s %8s %7s\n", "phase", "cblite ms", "baseline ms", "ratio",
           "cblite/s", "baseline/s", "RSS MiB", "base MiB", "count");
    for (int ph = 0; ph < PH_COUNT; ph++) {
        const phase_stat* c = &st[SIDE_CBLITE][ph];
        const phase_stat* b = &st[SIDE_BASELINE][ph];
        char r1[32], r2[32];
        if (!c->have && !b->have) {
            printf("%-12s %11s\n", bench_phase_names[ph], "not built");
        } else if (!c->have) {
            printf("%-12s %11s %11.1f %8s %12s %12s %8s %8.1f %7ld\n", bench_phase_names[ph],
                   cblite ? "not built" : "not run", b->ms, "-", "-", fmt_rate(r2, sizeof r2, b->count, b->ms), "-",
                   b->rss_mib, b->count);
        } else if (!b->have) {
            printf("%-12s %11.1f %11s %8s %12s %12s %8.1f %8s %7ld\n", bench_phase_names[ph], c->ms,
                   "-", "-", fmt_rate(r1, sizeof r1, c->count, c->ms), "-", c->rss_mib, "-", c->count);
        } else {
            printf("%-12s %11.1f %11.1f %7.2fx %12s %12s %8.1f %8.1f %7ld\n", bench_phase_names[ph],
                   c->ms, b->ms, b->ms > 0 ? c->ms / b->ms : 0, fmt_rate(r1, sizeof r1, c->count, c->ms),
                   fmt_rate(r2, sizeof r2, b->count, b->ms), c->rss_mib, b->rss_mib, c->count);
        }
    }
    int any_encrypted = 0;
    for (int ph = 0; ph < PH_COUNT; ph++) any_encrypted |= st[SIDE_ENCRYPTED][ph].have;
    if (any_encrypted) {
        printf("\nencrypted database (SQLCipher, raw key) vs plain, same run:\n");
        printf("%-12s %13s %11s %8s\n", "phase", "encrypted ms", "plain ms", "ratio");
        for (int ph = 0; ph < PH_COUNT; ph++) {
            const phase_stat* e = &st[SIDE_ENCRYPTED][ph];
            const phase_stat* c = &st[SIDE_CBLITE][ph];
            if (e->have && c->have)
                printf("%-12s %13.1f %11.1f %7.2fx\n", bench_phase_names[ph], e->ms, c->ms, c->ms > 0 ? e->ms / c->ms : 0);
        }
    }
    long big_peak_max = 0;
    for (int i = 0; i < big_runs; i++) if (big_peak_kib[i] > big_peak_max) big_peak_max = big_peak_kib[i];
    if (big_runs > 0)
        printf("\nlarge attachment: %ld MiB streamed in (writer) and out (reader) in 64 KiB chunks, "
               "%.0f ms (first run), peak RSS %.1f MiB above the level before it (highest of %d runs)\n",
               big_mb, big_ms[0], big_peak_max / 1024.0, big_runs);
    double c_size = cblite ? median_of(SIDE_CBLITE, runs, 0) : 0;
    double c_open = cblite ? median_of(SIDE_CBLITE, runs, 1) : 0;
    double b_size = median_of(SIDE_BASELINE, runs, 0);
    double b_open = median_of(SIDE_BASELINE, runs, 1);
    double c_rss = cblite ? median_of(SIDE_CBLITE, runs, 2) : 0;
    double b_rss = median_of(SIDE_BASELINE, runs, 2);
    double c_rss0 = cblite ? median_of(SIDE_CBLITE, runs, 3) : 0;
    double b_rss0 = median_of(SIDE_BASELINE, runs, 3);
    const double MiB = 1024.0 * 1024.0;
    printf("\n");
    if (cblite)
        printf("size on disk: cblite %.1f MiB after close (%.1f MiB open), baseline %.1f MiB (%.1f MiB open), ratio %.2fx\n",
               c_size / MiB, c_open / MiB, b_size / MiB, b_open / MiB, b_size > 0 ? c_size / b_size : 0);
    else
        printf("size on disk: baseline %.1f MiB after close (%.1f MiB open)\n", b_size / MiB, b_open / MiB);
    if (cblite)
        printf("peak RSS above start: cblite %.1f MiB (start %.1f MiB), baseline %.1f MiB (start %.1f MiB)\n",
               c_rss, c_rss0, b_rss, b_rss0);
    else
        printf("peak RSS above start: baseline %.1f MiB (start %.1f MiB)\n", b_rss, b_rss0);
    long long so = file_size(lib), so_stripped = file_size(lib_stripped);
    if (so >= 0)
        printf("libcblite: %s %.2f MiB, stripped %.2f MiB (%lld bytes; size budget 25 MB)\n", lib,
               so / MiB, (so_stripped >= 0 ? so_stripped : so) / MiB, so_stripped >= 0 ? so_stripped : so);
    if (cblite) printf("storage: cblite %s %s; baseline %s\n", cblite_version, storage[SIDE_CBLITE],
                       storage[SIDE_BASELINE]);
    else printf("storage: baseline %s\n", storage[SIDE_BASELINE]);
    if (cblite && baseline_all)
        printf("note: BENCH_BASELINE_ALL=1: the baseline also ran phases cblite has not built\n");
    printf("total %.1f s\n", total_s);
    for (int i = 0; i < nchecks; i++) printf("WARNING (check): %s\n", checks[i]);

    /* ---- a line for bench/RESULTS.md ---- */
    if (cblite) {
        printf("\nfor bench/RESULTS.md:\n| %.10s | %s | %ld x %s | %ld |", date, commit, nproc, model, n);
        for (int ph = 0; ph < PH_COUNT; ph++) {
            const phase_stat* c = &st[SIDE_CBLITE][ph];
            const phase_stat* b = &st[SIDE_BASELINE][ph];
            if (c->have && b->have) printf(" %.0f / %.0f (%.2fx) |", c->ms, b->ms, b->ms > 0 ? c->ms / b->ms : 0);
            else printf(" - |");
        }
        printf(" %.1f / %.1f MiB | %.1f MiB | %.1f MiB |\n", c_size / MiB, b_size / MiB, c_rss,
               (so_stripped >= 0 ? so_stripped : so) / MiB);
    }

    /* ---- JSON ---- */
    if (json_path) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp", json_path);
        FILE* f = fopen(tmp, "w");
        if (!f) bench_die("bench: cannot write %s: %s", tmp, strerror(errno));
        fprintf(f, "{\"n\": %ld, \"runs\": %d, \"commit\": ", n, runs);
        json_str(f, commit);
        fprintf(f, ",\n \"date\": \"%s\", \"machine\": {\"nproc\": %ld, \"model\": ", date, nproc);
        json_str(f, model);
        fprintf(f, "},\n \"phases\": {");
        int first = 1;
        for (int ph = 0; ph < PH_COUNT; ph++) {
            const phase_stat* c = &st[SIDE_CBLITE][ph];
            const phase_stat* b = &st[SIDE_BASELINE][ph];
            if (cblite ? !c->have : !b->have) continue; /* not built: absent */
            fprintf(f, "%s\n  \"%s\": {", first ? "" : ",", bench_phase_names[ph]);
            first = 0;
            if (c->have) fprintf(f, "\"cblite_ms\": %.3f, ", c->ms);
            if (b->have) fprintf(f, "\"baseline_ms\": %.3f, ", b->ms);
            if (c->have && b->have) fprintf(f, "\"ratio\": %.4f, ", b->ms > 0 ? c->ms / b->ms : 0);
            const phase_stat* any = c->have ? c : b;
            fprintf(f, "\"count\": %ld", any->count);
            if (c->have)
                fprintf(f, ", \"docs_per_s\": %.1f, \"cblite_peak_rss_mib\": %.2f", c->ms > 0 ? c->count / (c->ms / 1000) : 0,
                        c->rss_mib);
            if (b->have)
                fprintf(f, ", \"baseline_docs_per_s\": %.1f, \"baseline_peak_rss_mib\": %.2f",
                        b->ms > 0 ? b->count / (b->ms / 1000) : 0, b->rss_mib);
            for (int side = 0; side < SIDE_COUNT; side++) {
                const phase_stat* x = &st[side][ph];
                if (!x->have) continue;
                fprintf(f, ", \"%s_runs_ms\": [", side_names[side]);
                for (int r = 0, k = 0; r < runs; r++) {
                    if (!results[side][r].have[ph]) continue;
                    fprintf(f, "%s%.3f", k++ ? ", " : "", results[side][r].ms[ph]);
                }
                fprintf(f, "]");
            }
            fprintf(f, "}");
        }
        fprintf(f, "},\n \"encrypted\": {");
        first = 1;
        for (int ph = 0; ph < PH_COUNT; ph++) {
            const phase_stat* e = &st[SIDE_ENCRYPTED][ph];
            const phase_stat* c = &st[SIDE_CBLITE][ph];
            if (!e->have || !c->have) continue;
            fprintf(f, "%s\"%s\": {\"encrypted_ms\": %.3f, \"plain_ms\": %.3f, \"ratio\": %.4f}", first ? "" : ", ",
                    bench_phase_names[ph], e->ms, c->ms, c->ms > 0 ? e->ms / c->ms : 0);
            first = 0;
        }
        fprintf(f, "},\n");
        if (big_runs > 0)
            fprintf(f, " \"large_attachment\": {\"mib\": %ld, \"peak_rss_above_mib\": %.2f},\n", big_mb, big_peak_max / 1024.0);
        fprintf(f, " \"not_built\": [");
        first = 1;
        for (int ph = 0; ph < PH_COUNT; ph++) {
            if (cblite ? st[SIDE_CBLITE][ph].have : st[SIDE_BASELINE][ph].have) continue;
            fprintf(f, "%s\"%s\"", first ? "" : ", ", bench_phase_names[ph]);
            first = 0;
        }
        fprintf(f, "],\n");
        if (cblite)
            fprintf(f, " \"peak_rss_mib\": %.2f, \"start_rss_mib\": %.2f, \"db_bytes\": %.0f, \"db_bytes_open\": %.0f,\n",
                    c_rss, c_rss0, c_size, c_open);
        fprintf(f, " \"baseline_peak_rss_mib\": %.2f, \"baseline_start_rss_mib\": %.2f, \"baseline_db_bytes\": %.0f, "
                   "\"baseline_db_bytes_open\": %.0f,\n", b_rss, b_rss0, b_size, b_open);
        if (so >= 0) fprintf(f, " \"lib_bytes\": %lld, \"lib_stripped_bytes\": %lld, \"lib_budget_bytes\": 25000000,\n",
                             so, so_stripped >= 0 ? so_stripped : so);
        if (cblite) {
            fprintf(f, " \"cblite_version\": ");
            json_str(f, cblite_version);
            fprintf(f, ", \"cblite_storage\": ");
            json_str(f, storage[SIDE_CBLITE]);
            fprintf(f, ",\n");
        }
        fprintf(f, " \"baseline_storage\": ");
        json_str(f, storage[SIDE_BASELINE]);
        fprintf(f, ", \"baseline_all_phases\": %s, \"total_s\": %.1f,\n \"checks\": [", baseline_all ? "true" : "false",
                total_s);
        for (int i = 0; i < nchecks; i++) {
            fprintf(f, "%s", i ? ", " : "");
            json_str(f, checks[i]);
        }
        fprintf(f, "]}\n");
        if (fclose(f) != 0 || rename(tmp, json_path) != 0)
            bench_die("bench: cannot write %s: %s", json_path, strerror(errno));
        printf("\nwrote %s\n", json_path);
    }
    bench_remove_tree(data);
    return 0;
}
