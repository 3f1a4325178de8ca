/*
 * bench_concurrency.c — two figures `make bench` adds to the workload (issue 14):
 *
 *   concurrency: N workload documents, then for R = 1, 2 and 4 reader threads, each
 *     reading documents by ID (cbl_doc_get, the workload's shuffled order) for
 *     --seconds, all on one database handle as the header allows, beside a writer
 *     thread that inserts new documents in transactions of 100 (cbl_db_begin /
 *     cbl_doc_put / cbl_db_commit) in three ways:
 *       none    no writer: how reads scale with threads alone;
 *       paced   the writer inserts --writer-rate docs/s (default 2,000: an application
 *               writing steadily), sleeping between its transactions;
 *       full    the writer inserts as fast as it can. On a 2-core machine it then holds
 *               one core, so 2 readers share the other and cannot reach 2x one reader:
 *               this mode measures the scheduler as much as the library.
 *     Reads/s with R readers, the ratio to one reader in the same mode, the writer's
 *     docs/s, and the slowest single read (a reader that waited for the writer's
 *     transaction would show it here: with WAL, none should).
 *   cold open: a fresh process opens the N-document database and reads one document;
 *     the milliseconds from before cbl_db_open to the document in hand (the files are
 *     in the page cache: the cost measured is the library's, not the disk's).
 *
 * Usage: bench_concurrency --n N --dir DIR [--seconds S] [--runs R] [--writer-rate D] [--json FILE]
 * Prints per run, then the medians:
 *   concurrency writer <none|paced|full> readers <R> reads_per_s <x> ratio_to_one <x>
 *     writer_docs_per_s <x> max_read_ms <x>
 *   cold_open_ms <ms> (n <N>)
 */
#define _GNU_SOURCE
#include "bench_common.h"
#include "cblite.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_READERS 4
#define WRITER_BATCH 100
static const int READER_COUNTS[] = {1, 2, 4};
#define NREADERS ((int)(sizeof READER_COUNTS / sizeof READER_COUNTS[0]))
enum { WRITER_NONE, WRITER_PACED, WRITER_FULL, NMODES };
static const char* const MODE_NAMES[NMODES] = {"none", "paced", "full"};

static void ck(cbl_status st, const cbl_error* e, const char* call) {
    if (st != CBL_OK) bench_die("%s: %d %s", call, e->code, e->message);
}

typedef struct shared {
    cbl_collection* coll;
    cbl_db* db;
    long n;
    const long* order;
    volatile int stop;          /* set by the main thread when the time is up */
    volatile int go;            /* every thread starts at once */
} shared;

typedef struct reader {
    pthread_t thread;
    shared* sh;
    int index;
    long reads;
    double max_ms;
} reader;

typedef struct writer {
    pthread_t thread;
    shared* sh;
    double rate;                /* docs/s; 0: as fast as it can */
    long written;
    long next_id;
} writer;

static void* read_loop(void* arg) {
    reader* r = arg;
    shared* sh = r->sh;
    cbl_error e;
    while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE)) {}
    long k = (long)r->index * (sh->n / MAX_READERS);     /* readers start at different places */
    while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
        char id[BENCH_ID_SIZE];
        bench_doc_id(id, sh->order[k % sh->n]);
        char* doc = NULL;
        double t = bench_now_ms();
        ck(cbl_doc_get(sh->coll, id, 0, &doc, &e), &e, "cbl_doc_get");
        double dt = bench_now_ms() - t;
        if (dt > r->max_ms) r->max_ms = dt;
        cbl_free(doc);
        r->reads++;
        k++;
    }
    return NULL;
}

static void* write_loop(void* arg) {
    writer* w = arg;
    shared* sh = w->sh;
    cbl_error e;
    char body[BENCH_BODY_SIZE];
    while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE)) {}
    double t0 = bench_now_ms();
    while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
        if (w->rate > 0) {      /* paced: the next batch is due once the last ones' time has passed */
            double due = t0 + w->written / w->rate * 1000.0, now = bench_now_ms();
            if (due > now) { usleep((useconds_t)((due - now) * 1000.0 > 20000 ? 20000 : (due - now) * 1000.0)); continue; }
        }
        ck(cbl_db_begin(sh->db, &e), &e, "cbl_db_begin");
        for (int i = 0; i < WRITER_BATCH; i++, w->next_id++) {
            char id[32];
            snprintf(id, sizeof id, "w%09ld", w->next_id);
            bench_doc_body(body, w->next_id, (int)(w->next_id % 90));
            ck(cbl_doc_put(sh->coll, id, body, NULL, 0, NULL, NULL, &e), &e, "cbl_doc_put");
        }
        ck(cbl_db_commit(sh->db, &e), &e, "cbl_db_commit");
        w->written += WRITER_BATCH;
    }
    return NULL;
}

/* One configuration: `readers` reader threads and the writer (`mode`) for `seconds`. */
static void run_config(shared* sh, int readers, int mode, double rate, double seconds, long* next_id,
                       double* reads_per_s, double* writer_per_s, double* max_ms) {
    reader rs[MAX_READERS];
    writer w = {.sh = sh, .next_id = *next_id, .rate = mode == WRITER_PACED ? rate : 0};
    memset(rs, 0, sizeof rs);
    sh->stop = 0;
    sh->go = 0;
    for (int i = 0; i < readers; i++) {
        rs[i].sh = sh;
        rs[i].index = i;
        if (pthread_create(&rs[i].thread, NULL, read_loop, &rs[i]) != 0) bench_die("pthread_create");
    }
    if (mode != WRITER_NONE && pthread_create(&w.thread, NULL, write_loop, &w) != 0) bench_die("pthread_create");
    double t0 = bench_now_ms();
    __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
    usleep((useconds_t)(seconds * 1e6));
    __atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
    long reads = 0;
    *max_ms = 0;
    for (int i = 0; i < readers; i++) {
        pthread_join(rs[i].thread, NULL);
        reads += rs[i].reads;
        if (rs[i].max_ms > *max_ms) *max_ms = rs[i].max_ms;
    }
    if (mode != WRITER_NONE) pthread_join(w.thread, NULL);
    double elapsed = bench_now_ms() - t0;
    *reads_per_s = reads / elapsed * 1000.0;
    *writer_per_s = w.written / elapsed * 1000.0;
    *next_id = w.next_id;
}

static void load(cbl_collection* coll, long n) {
    cbl_error e;
    char* json = malloc((size_t)BENCH_BATCH * (BENCH_BODY_SIZE + BENCH_ID_SIZE + 16) + 64);
    if (!json) bench_die("out of memory");
    for (long lo = 0; lo < n; lo += BENCH_BATCH) {
        long hi = lo + BENCH_BATCH < n ? lo + BENCH_BATCH : n;
        bench_batch_json(json, lo, hi);
        char* results = NULL;
        ck(cbl_docs_save(coll, json, &results, &e), &e, "cbl_docs_save");
        if (strstr(results, "\"error\"")) bench_die("cbl_docs_save: %.200s", results);
        cbl_free(results);
    }
    free(json);
}

/* The cold open, in this (fresh) process: open, read one document, close. */
static double cold_open(const char* dir, long n) {
    cbl_error e;
    cbl_db* db;
    cbl_collection* coll;
    char id[BENCH_ID_SIZE];
    bench_doc_id(id, n / 2);
    double t = bench_now_ms();
    ck(cbl_db_open("conc", dir, NULL, &db, &e), &e, "cbl_db_open");
    ck(cbl_db_default_collection(db, &coll, &e), &e, "cbl_db_default_collection");
    char* doc = NULL;
    ck(cbl_doc_get(coll, id, 0, &doc, &e), &e, "cbl_doc_get");
    double ms = bench_now_ms() - t;
    if (!strstr(doc, id)) bench_die("cold open: read %.100s, not %s", doc, id);
    cbl_free(doc);
    cbl_collection_release(coll);
    ck(cbl_db_close(db, &e), &e, "cbl_db_close");
    return ms;
}

/* Runs this program again as `--cold-open` (a process that has not opened it yet). */
static double cold_open_in_child(const char* dir, long n) {
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) bench_die("readlink /proc/self/exe");
    self[len] = 0;
    char nbuf[32];
    snprintf(nbuf, sizeof nbuf, "%ld", n);
    int fds[2];
    if (pipe(fds) != 0) bench_die("pipe");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(self, self, "--cold-open", "--n", nbuf, "--dir", dir, (char*)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[128] = {0};
    ssize_t got = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    double ms = 0;
    if (got <= 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0 || sscanf(buf, "cold_open_ms %lf", &ms) != 1)
        bench_die("cold open child failed");
    return ms;
}

int main(int argc, char** argv) {
    long n = 100000;
    int runs = 3, cold_only = 0;
    double seconds = 2.0, rate = 2000;
    const char* dir = NULL;
    const char* json_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atol(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
        else if (!strcmp(argv[i], "--writer-rate") && i + 1 < argc) rate = atof(argv[++i]);
        else if (!strcmp(argv[i], "--cold-open")) cold_only = 1;
        else bench_die("usage: bench_concurrency --n N --dir DIR [--seconds S] [--runs R] [--writer-rate D] [--json FILE]");
    }
    if (!dir || n < MAX_READERS || runs < 1 || runs > 99 || seconds <= 0 || rate <= 0)
        bench_die("bench_concurrency: bad arguments");
    if (cold_only) {
        printf("cold_open_ms %.3f\n", cold_open(dir, n));
        return 0;
    }

    static double rps[NMODES][NREADERS][99], wps[NMODES][NREADERS][99], maxms[NMODES][NREADERS][99], cold[99];
    long* order = bench_read_order(n);
    for (int run = 0; run < runs; run++) {
        bench_remove_tree(dir);
        bench_mkdirs(dir);
        cbl_error e;
        shared sh = {.n = n, .order = order};
        ck(cbl_db_open("conc", dir, NULL, &sh.db, &e), &e, "cbl_db_open");
        ck(cbl_db_default_collection(sh.db, &sh.coll, &e), &e, "cbl_db_default_collection");
        load(sh.coll, n);
        long next_id = 0;
        for (int m = 0; m < NMODES; m++)
            for (int c = 0; c < NREADERS; c++)
                run_config(&sh, READER_COUNTS[c], m, rate, seconds, &next_id, &rps[m][c][run], &wps[m][c][run],
                           &maxms[m][c][run]);
        cbl_collection_release(sh.coll);
        ck(cbl_db_close(sh.db, &e), &e, "cbl_db_close");
        cold[run] = cold_open_in_child(dir, n);
        printf("run %d:", run + 1);
        for (int m = 0; m < NMODES; m++) {
            printf(" writer %s:", MODE_NAMES[m]);
            for (int c = 0; c < NREADERS; c++) printf(" %.0f", rps[m][c][run]);
            printf(" reads/s;");
        }
        printf(" cold open %.1f ms\n", cold[run]);
    }
    double med_rps[NMODES][NREADERS], med_wps[NMODES][NREADERS], med_max[NMODES][NREADERS];
    for (int m = 0; m < NMODES; m++)
        for (int c = 0; c < NREADERS; c++) {
            med_rps[m][c] = bench_median(rps[m][c], runs);
            med_wps[m][c] = bench_median(wps[m][c], runs);
            med_max[m][c] = bench_median(maxms[m][c], runs);
        }
    double med_cold = bench_median(cold, runs);
    for (int m = 0; m < NMODES; m++)
        for (int c = 0; c < NREADERS; c++)
            printf("concurrency writer %s readers %d reads_per_s %.0f ratio_to_one %.2f writer_docs_per_s %.0f max_read_ms %.2f\n",
                   MODE_NAMES[m], READER_COUNTS[c], med_rps[m][c], med_rps[m][c] / med_rps[m][0], med_wps[m][c],
                   med_max[m][c]);
    printf("cold_open_ms %.2f (n %ld)\n", med_cold, n);
    if (json_path) {
        FILE* f = fopen(json_path, "w");
        if (!f) bench_die("cannot write %s", json_path);
        fprintf(f, "{\"n\": %ld, \"runs\": %d, \"seconds\": %.1f, \"writer_rate\": %.0f, \"concurrency\": [",
                n, runs, seconds, rate);
        for (int m = 0; m < NMODES; m++)
            for (int c = 0; c < NREADERS; c++)
                fprintf(f, "%s{\"writer\": \"%s\", \"readers\": %d, \"reads_per_s\": %.0f, \"ratio_to_one\": %.3f, "
                           "\"writer_docs_per_s\": %.0f, \"max_read_ms\": %.3f}", m || c ? ", " : "", MODE_NAMES[m],
                        READER_COUNTS[c], med_rps[m][c], med_rps[m][c] / med_rps[m][0], med_wps[m][c], med_max[m][c]);
        fprintf(f, "], \"cold_open_ms\": %.3f}\n", med_cold);
        fclose(f);
    }
    bench_remove_tree(dir);
    free(order);
    return 0;
}
