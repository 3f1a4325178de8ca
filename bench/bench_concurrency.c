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
 *   The same figures for the raw-SQLite baseline of the workload (bench_sqlite.c's schema,
 *     one connection per thread, SELECT of the body by ID), in the same run: SQLite's own
 *     scaling on this machine, which bounds the library's (each read transaction takes
 *     the WAL read lock with fcntl unless another connection of the process holds it).
 *   cold open: a fresh process opens the N-document database and reads one document;
 *     the milliseconds from before cbl_db_open to the document in hand (the files are
 *     in the page cache: the cost measured is the library's, not the disk's).
 *
 * Usage: bench_concurrency --n N --dir DIR [--seconds S] [--runs R] [--writer-rate D] [--json FILE]
 * Prints per run, then the medians:
 *   concurrency writer <none|paced|full> readers <R> reads_per_s <x> ratio_to_one <x>
 *     writer_docs_per_s <x> max_read_ms <x>
 *   concurrency_baseline ... (the same fields, raw SQLite)
 *   cold_open_ms <ms> (n <N>)
 */
#define _GNU_SOURCE
#include "bench_common.h"
#include "cblite.h"
#include "sqlite3.h"

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
enum { SIDE_CBLITE, SIDE_SQLITE, NSIDES };
static const char* const SIDE_PREFIX[NSIDES] = {"concurrency", "concurrency_baseline"};
static const char* const SIDE_JSON[NSIDES] = {"concurrency", "concurrency_baseline"};

static void ck(cbl_status st, const cbl_error* e, const char* call) {
    if (st != CBL_OK) bench_die("%s: %d %s", call, e->code, e->message);
}

typedef struct shared {
    int side;                   /* SIDE_CBLITE or SIDE_SQLITE */
    cbl_collection* coll;
    cbl_db* db;
    const char* sqlite_path;    /* the baseline's file: each thread opens its own connection */
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

static void sq(int rc, sqlite3* db, const char* what) {
    if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) bench_die("sqlite: %s: %s", what, sqlite3_errmsg(db));
}

static sqlite3* sqlite_connect(const char* path) {
    sqlite3* db = NULL;
    sq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL), db, "open");
    sqlite3_busy_timeout(db, 10000);
    return db;
}

static sqlite3_stmt* sqlite_prepare(sqlite3* db, const char* sql) {
    sqlite3_stmt* st = NULL;
    sq(sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL), db, sql);
    return st;
}

/* The baseline's read by ID: the document's body, as cbl_doc_get returns it. */
static void sqlite_read(sqlite3* db, sqlite3_stmt* get, const char* id) {
    sqlite3_bind_text(get, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(get);
    if (rc != SQLITE_ROW || !sqlite3_column_text(get, 1)) bench_die("baseline: no document %s (%s)", id, sqlite3_errmsg(db));
    sqlite3_reset(get);
}

static void* read_loop(void* arg) {
    reader* r = arg;
    shared* sh = r->sh;
    cbl_error e;
    sqlite3* sdb = sh->side == SIDE_SQLITE ? sqlite_connect(sh->sqlite_path) : NULL;
    sqlite3_stmt* get = sdb ? sqlite_prepare(sdb, "SELECT rev, body FROM docs WHERE id = ?1 AND deleted = 0") : NULL;
    while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE)) {}
    long k = (long)r->index * (sh->n / MAX_READERS);     /* readers start at different places */
    while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
        char id[BENCH_ID_SIZE];
        bench_doc_id(id, sh->order[k % sh->n]);
        char* doc = NULL;
        double t = bench_now_ms();
        if (sdb) sqlite_read(sdb, get, id);
        else ck(cbl_doc_get(sh->coll, id, 0, &doc, &e), &e, "cbl_doc_get");
        double dt = bench_now_ms() - t;
        if (dt > r->max_ms) r->max_ms = dt;
        cbl_free(doc);
        r->reads++;
        k++;
    }
    if (sdb) {
        sqlite3_finalize(get);
        sqlite3_close(sdb);
    }
    return NULL;
}

static void* write_loop(void* arg) {
    writer* w = arg;
    shared* sh = w->sh;
    cbl_error e;
    char body[BENCH_BODY_SIZE];
    sqlite3* sdb = sh->side == SIDE_SQLITE ? sqlite_connect(sh->sqlite_path) : NULL;
    sqlite3_stmt* ins = sdb ? sqlite_prepare(sdb, "INSERT INTO docs(id, seq, rev, deleted, body) VALUES "
                                                  "(?1, (SELECT coalesce(max(seq), 0) + 1 FROM docs), '1-0', 0, ?2)") : NULL;
    while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE)) {}
    double t0 = bench_now_ms();
    while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
        if (w->rate > 0) {      /* paced: the next batch is due once the last ones' time has passed */
            double due = t0 + w->written / w->rate * 1000.0, now = bench_now_ms();
            if (due > now) { usleep((useconds_t)((due - now) * 1000.0 > 20000 ? 20000 : (due - now) * 1000.0)); continue; }
        }
        if (sdb) sq(sqlite3_exec(sdb, "BEGIN IMMEDIATE", NULL, NULL, NULL), sdb, "BEGIN");
        else ck(cbl_db_begin(sh->db, &e), &e, "cbl_db_begin");
        for (int i = 0; i < WRITER_BATCH; i++, w->next_id++) {
            char id[32];
            snprintf(id, sizeof id, "w%09ld", w->next_id);
            bench_doc_body(body, w->next_id, (int)(w->next_id % 90));
            if (sdb) {
                sqlite3_bind_text(ins, 1, id, -1, SQLITE_STATIC);
                sqlite3_bind_text(ins, 2, body, -1, SQLITE_STATIC);
                sq(sqlite3_step(ins), sdb, "INSERT");
                sqlite3_reset(ins);
            } else {
                ck(cbl_doc_put(sh->coll, id, body, NULL, 0, NULL, NULL, &e), &e, "cbl_doc_put");
            }
        }
        if (sdb) sq(sqlite3_exec(sdb, "COMMIT", NULL, NULL, NULL), sdb, "COMMIT");
        else ck(cbl_db_commit(sh->db, &e), &e, "cbl_db_commit");
        w->written += WRITER_BATCH;
    }
    if (sdb) {
        sqlite3_finalize(ins);
        sqlite3_close(sdb);
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
        ck(cbl_collection_docs_save(coll, json, &results, &e), &e, "cbl_collection_docs_save");
        if (strstr(results, "\"error\"")) bench_die("cbl_collection_docs_save: %.200s", results);
        cbl_free(results);
    }
    free(json);
}

/* The baseline's database: bench_sqlite.c's schema and settings, the same N documents. */
static void sqlite_load(const char* path, long n) {
    sqlite3* db = sqlite_connect(path);
    sq(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                        "CREATE TABLE docs(id TEXT PRIMARY KEY, seq INTEGER UNIQUE, rev TEXT, deleted INT, body TEXT);"
                        "BEGIN", NULL, NULL, NULL), db, "schema");
    sqlite3_stmt* ins = sqlite_prepare(db, "INSERT INTO docs(id, seq, rev, deleted, body) VALUES (?1, ?2, '1-0', 0, ?3)");
    char id[BENCH_ID_SIZE], body[BENCH_BODY_SIZE];
    for (long i = 0; i < n; i++) {
        bench_doc_id(id, i);
        bench_doc_body(body, i, (int)(i % 90));
        sqlite3_bind_text(ins, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 2, i + 1);
        sqlite3_bind_text(ins, 3, body, -1, SQLITE_STATIC);
        sq(sqlite3_step(ins), db, "INSERT");
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    sq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), db, "COMMIT");
    sqlite3_close(db);
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

    static double rps[NSIDES][NMODES][NREADERS][99], wps[NSIDES][NMODES][NREADERS][99],
        maxms[NSIDES][NMODES][NREADERS][99], cold[99];
    long* order = bench_read_order(n);
    char sqlite_path[4200];
    snprintf(sqlite_path, sizeof sqlite_path, "%s/baseline.sqlite", dir);
    for (int run = 0; run < runs; run++) {
        bench_remove_tree(dir);
        bench_mkdirs(dir);
        cbl_error e;
        for (int side = 0; side < NSIDES; side++) {
            shared sh = {.side = side, .n = n, .order = order, .sqlite_path = sqlite_path};
            if (side == SIDE_CBLITE) {
                ck(cbl_db_open("conc", dir, NULL, &sh.db, &e), &e, "cbl_db_open");
                ck(cbl_db_default_collection(sh.db, &sh.coll, &e), &e, "cbl_db_default_collection");
                load(sh.coll, n);
            } else {
                sqlite_load(sqlite_path, n);
            }
            long next_id = 0;
            for (int m = 0; m < NMODES; m++)
                for (int c = 0; c < NREADERS; c++)
                    run_config(&sh, READER_COUNTS[c], m, rate, seconds, &next_id, &rps[side][m][c][run],
                               &wps[side][m][c][run], &maxms[side][m][c][run]);
            if (side == SIDE_CBLITE) {
                cbl_collection_release(sh.coll);
                ck(cbl_db_close(sh.db, &e), &e, "cbl_db_close");
                cold[run] = cold_open_in_child(dir, n);
            }
        }
        for (int side = 0; side < NSIDES; side++) {
            printf("run %d%s:", run + 1, side == SIDE_SQLITE ? " (baseline)" : "");
            for (int m = 0; m < NMODES; m++) {
                printf(" writer %s:", MODE_NAMES[m]);
                for (int c = 0; c < NREADERS; c++) printf(" %.0f", rps[side][m][c][run]);
                printf(" reads/s;");
            }
            if (side == SIDE_CBLITE) printf(" cold open %.1f ms", cold[run]);
            printf("\n");
        }
    }
    double med_rps[NSIDES][NMODES][NREADERS], med_wps[NSIDES][NMODES][NREADERS], med_max[NSIDES][NMODES][NREADERS];
    for (int side = 0; side < NSIDES; side++)
        for (int m = 0; m < NMODES; m++)
            for (int c = 0; c < NREADERS; c++) {
                med_rps[side][m][c] = bench_median(rps[side][m][c], runs);
                med_wps[side][m][c] = bench_median(wps[side][m][c], runs);
                med_max[side][m][c] = bench_median(maxms[side][m][c], runs);
            }
    double med_cold = bench_median(cold, runs);
    for (int side = 0; side < NSIDES; side++)
        for (int m = 0; m < NMODES; m++)
            for (int c = 0; c < NREADERS; c++)
                printf("%s writer %s readers %d reads_per_s %.0f ratio_to_one %.2f writer_docs_per_s %.0f max_read_ms %.2f\n",
                       SIDE_PREFIX[side], MODE_NAMES[m], READER_COUNTS[c], med_rps[side][m][c],
                       med_rps[side][m][c] / med_rps[side][m][0], med_wps[side][m][c], med_max[side][m][c]);
    for (int c = 0; c < NREADERS; c++)
        printf("concurrency readers %d alone: %.2fx the baseline's reads/s\n", READER_COUNTS[c],
               med_rps[SIDE_CBLITE][WRITER_NONE][c] / med_rps[SIDE_SQLITE][WRITER_NONE][c]);
    printf("cold_open_ms %.2f (n %ld)\n", med_cold, n);
    if (json_path) {
        FILE* f = fopen(json_path, "w");
        if (!f) bench_die("cannot write %s", json_path);
        fprintf(f, "{\"n\": %ld, \"runs\": %d, \"seconds\": %.1f, \"writer_rate\": %.0f", n, runs, seconds, rate);
        for (int side = 0; side < NSIDES; side++) {
            fprintf(f, ", \"%s\": [", SIDE_JSON[side]);
            for (int m = 0; m < NMODES; m++)
                for (int c = 0; c < NREADERS; c++)
                    fprintf(f, "%s{\"writer\": \"%s\", \"readers\": %d, \"reads_per_s\": %.0f, \"ratio_to_one\": %.3f, "
                               "\"writer_docs_per_s\": %.0f, \"max_read_ms\": %.3f}", m || c ? ", " : "", MODE_NAMES[m],
                            READER_COUNTS[c], med_rps[side][m][c], med_rps[side][m][c] / med_rps[side][m][0],
                            med_wps[side][m][c], med_max[side][m][c]);
            fprintf(f, "]");
        }
        fprintf(f, ", \"cold_open_ms\": %.3f}\n", med_cold);
        fclose(f);
    }
    bench_remove_tree(dir);
    free(order);
    return 0;
}
