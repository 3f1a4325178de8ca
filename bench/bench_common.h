/*
 * bench_common.h — shared by the cblite side, the raw-SQLite baseline side and the driver
 * of the benchmark (workload: /work/shared/bench/WORKLOAD.md).
 *
 * A side program (bench_cblite, bench_sqlite) runs the workload once on a fresh database
 * and prints one line per result on stdout (the driver parses them):
 *   info <key> <text...>
 *   phase <name> <ms> <count> <rss_peak_kib_above_start>
 *   size <bytes_after_close> <bytes_while_open>
 *   rss <process_peak_kib_above_start> <start_kib>
 *   check <phase> <text...>        (a result that differs from what the workload implies)
 * It exits nonzero only when a call returns an error (message on stderr).
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The phases of the workload, in order. */
enum {
    PH_INSERT, PH_READ, PH_UPDATE, PH_VIEW_BUILD, PH_VIEW_QUERY, PH_DELETE, PH_CHANGES,
    PH_ATTACHMENTS, PH_COUNT
};
extern const char* const bench_phase_names[PH_COUNT];
int bench_phase_index(const char* name); /* -1 when unknown */

#define BENCH_BATCH          1000       /* documents per transaction */
#define BENCH_ATT_COUNT      1000       /* attachments */
#define BENCH_ATT_SIZE       65536      /* bytes per attachment */
#define BENCH_VIEW_QUERIES   100        /* key = 42 queries */
#define BENCH_VIEW_KEY       42
#define BENCH_ID_SIZE        16
#define BENCH_BODY_SIZE      320

/* ---- options of a side program -------------------------------------------------- */
typedef struct bench_opts {
    long n;                     /* documents */
    const char* dir;            /* fresh directory for this run's database */
    int phases[PH_COUNT];       /* 1 = run this phase */
    long changes_page;          /* changes feed page size; 0 = one call */
    int keep;                   /* keep the database afterwards */
    int encrypted;              /* --encrypted: open the database with a key (cblite side) */
} bench_opts;

/* Parses --n N --dir D [--phases a,b,c] [--keep] [--encrypted] [--list-phases];
 * `available` marks the phases this side implements. Exits on bad usage. Returns 1 when
 * --list-phases was given (the phases are printed and the caller should exit 0). */
int bench_parse_side_args(int argc, char** argv, const int available[PH_COUNT],
                          bench_opts* opts);

/* ---- data of the workload ---------------------------------------------------------- */
void bench_doc_id(char out[BENCH_ID_SIZE], long i);
/* The body of document i with the given age (the workload's age is i % 90). Returns length. */
int bench_doc_body(char out[BENCH_BODY_SIZE], long i, int age);
/* The read order: a permutation of 0..n-1 shuffled with an LCG seeded 42. Caller frees. */
long* bench_read_order(long n);
/* Deterministic pseudo-random bytes (LCG) for attachment k. */
void bench_att_bytes(unsigned char* out, size_t size, long k);
/* What the workload implies: the age of document i after the update phase. */
int bench_age_after_update(long i);
/* Number of live documents of type person with age == key after update and (when
 * `after_delete`) delete phases; and the number of distinct ages (groups). */
long bench_expected_key_count(long n, int key, int after_delete);
long bench_expected_groups(long n, int after_delete);

/* ---- a tiny JSON scanner --------------------------------------------------------- */
/* Finds top-level key `key` of the JSON object `json`; returns a pointer to the first
 * character of its value (after whitespace), or NULL. Skips strings and nested values. */
const char* bench_json_find(const char* json, const char* key);
/* Integer / string value at `p` (as returned by bench_json_find). */
int bench_json_int(const char* p, long long* out);
/* Copies a string value (no escapes expected) into out; returns 1 on success. */
int bench_json_str(const char* p, char* out, size_t size);

/* Documents lo..hi-1 of the workload as a JSON array of objects with "_id" (what
 * cbl_collection_docs_save and _bulk_docs take). `out` needs (hi - lo) * (BENCH_BODY_SIZE +
 * BENCH_ID_SIZE + 16) + 64 bytes. Returns the length. */
size_t bench_batch_json(char* out, long lo, long hi);

/* ---- measurement ------------------------------------------------------------------ */
/* The median of v[0..n-1] (sorts v); 0 when n <= 0. */
double bench_median(double* v, int n);
double bench_now_ms(void);                 /* CLOCK_MONOTONIC, milliseconds */
long bench_rss_kib(void);                  /* current resident set (VmRSS) */
void bench_rss_reset_peak(void);           /* resets the peak (clear_refs 5), if possible */
long bench_rss_peak_kib(void);             /* VmHWM, else getrusage ru_maxrss */
long bench_ru_maxrss_kib(void);            /* getrusage(RUSAGE_SELF).ru_maxrss */
/* Sum of the sizes of all regular files under path (recursively). */
long long bench_tree_bytes(const char* path);
/* rm -rf path (files and directories under it, then path). 0 on success. */
int bench_remove_tree(const char* path);
int bench_mkdirs(const char* path);

/* ---- phase bookkeeping for a side program ------------------------------------------- */
typedef struct bench_side {
    const char* side;     /* "cblite" / "baseline" (messages) */
    long start_rss_kib;
    double t0;
    int phase;
    long max_peak_kib;    /* highest per-phase peak above start */
} bench_side;

void bench_side_init(bench_side* s, const char* side);
void bench_phase_begin(bench_side* s, int phase);
/* Ends the phase: prints "phase <name> <ms> <count> <rss>" and, under valgrind, dumps
 * callgrind statistics tagged "phase-<name>". */
void bench_phase_end(bench_side* s, long count);
void bench_check(const char* phase, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void bench_print_sizes(long long after_close, long long while_open);
/* Prints "rss <highest phase peak above start> <start>". */
void bench_print_rss(const bench_side* s);

/* Prints the message and exits 1. */
void bench_die(const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

#endif
