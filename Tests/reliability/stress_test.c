/*
 * stress_test.c — concurrency of libcblite through the C ABI.
 *
 * Part 1 (one process): H handles on one database file; W writer threads increment shared
 * counter documents with cbl_doc_update (retry on conflict), some of them two at a time in
 * an explicit transaction; R reader threads read counters (each reader must see every
 * counter never go backwards) and page the changes feed; one thread compacts; a change
 * listener on every handle records sequences; a document listener calls back into the
 * library (reads, writes another collection); another listener removes itself from inside
 * its callback; a third is added and removed repeatedly while changes flow.
 * At the end: every counter equals the increments acknowledged (no lost update), every
 * change listener saw every sequence exactly once and in order, the last one equals the
 * collection's last sequence, integrity check passes, no handle leaked.
 *
 * Part 2 (processes): P child processes (this program re-executed) increment the same
 * counters of one database file at once, and one more is SIGKILLed in the middle of its
 * writes (the others must go on: its locks die with it); the parent checks the sums
 * (the victim's one in-flight increment may or may not be there) and integrity.
 *
 * A watchdog ends the run as failed when it exceeds --watchdog seconds (deadlock).
 *
 *   stress_test [--threads W] [--ops K] [--handles H] [--readers R] [--counters C]
 *               [--procs P] [--proc-ops K] [--seed S] [--watchdog SECONDS]
 */
#include "rel_common.h"

#include <pthread.h>

#define MAX_COUNTERS 64
#define MAX_HANDLES 16
#define MAX_SEQS (1 << 22)

static int W = 8, K = 400, H = 3, R = 2, C = 8, P = 2, PK = 150;
static int WATCHDOG = 240;
static uint64_t SEED = 42;
static char g_dir[1024];

static cbl_db* g_db[MAX_HANDLES];
static cbl_collection* g_coll[MAX_HANDLES];
static cbl_collection* g_echo;                 /* another collection, written from a callback */
static long long g_incr[MAX_COUNTERS];         /* acknowledged increments per counter */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_writers_done;
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)
static long long g_progress;          /* for the watchdog */
static long long g_reads, g_feed_pages, g_compactions, g_compact_busy, g_tx_done;

static void lock(void) { pthread_mutex_lock(&g_mu); }
static void unlock(void) { pthread_mutex_unlock(&g_mu); }
static void fail_locked(const char* fmt, const char* a, int b) {
    lock();
    char msg[600];
    snprintf(msg, sizeof msg, fmt, a, b);
    rel_failf("%s", msg);
    unlock();
}

/* ---- watchdog ------------------------------------------------------------------------- */

static int g_all_done;
static void* watchdog(void* arg) {
    (void)arg;
    double start = rel_now();
    while (!LOAD(g_all_done)) {
        rel_sleep_us(100000);
        if (rel_now() - start > WATCHDOG) {
            fprintf(stderr, "FAILED: watchdog: run exceeded %d s — deadlock or livelock suspected "
                    "(progress counter %lld, writers done %d)\n", WATCHDOG, LOAD(g_progress), LOAD(g_writers_done));
            printf("%d passed, %d failed\n", g_pass, g_fail + 1);
            fflush(stdout);
            fflush(stderr);
            _exit(1);
        }
    }
    return NULL;
}

/* ---- listeners -------------------------------------------------------------------------- */

typedef struct {
    uint64_t* seqs; size_t n; int out_of_order; uint64_t last;
    pthread_mutex_t mu; int concurrent, inside;
} seq_listener;
static seq_listener g_lis[MAX_HANDLES];

static void on_change(void* ctx, const cbl_change* ch, size_t count) {
    seq_listener* l = (seq_listener*)ctx;
    pthread_mutex_lock(&l->mu);
    if (l->inside) l->concurrent++;
    l->inside = 1;
    for (size_t i = 0; i < count; i++) {
        if (ch[i].sequence <= l->last) l->out_of_order++;
        l->last = ch[i].sequence;
        if (l->n < MAX_SEQS) l->seqs[l->n++] = ch[i].sequence;
        if (!ch[i].doc_id || !ch[i].rev_id || strncmp(ch[i].doc_id, "counter-", 8) != 0) l->out_of_order += 1000000;
    }
    l->inside = 0;
    pthread_mutex_unlock(&l->mu);
}

/* Calls back into the library: reads the changed doc, writes into another collection. */
static long long g_reentrant_calls, g_reentrant_errors;
static void on_doc_reentrant(void* ctx, const cbl_change* ch, size_t count) {
    (void)ctx;
    for (size_t i = 0; i < count; i++) {
        char* json = NULL;
        cbl_status st = cbl_doc_get(g_coll[0], ch[i].doc_id, 0, &json, NULL);
        cbl_free(json);
        char id[64];
        snprintf(id, sizeof id, "echo-%llu", (unsigned long long)ch[i].sequence);
        cbl_status st2 = cbl_doc_put(g_echo, id, "{\"echo\":true}", NULL, 0, NULL, NULL, NULL);
        uint64_t cnt = 0;
        cbl_status st3 = cbl_db_count(g_db[1 % H], &cnt, NULL);
        __atomic_add_fetch(&g_reentrant_calls, 1, __ATOMIC_SEQ_CST);
        if (st != CBL_OK || st2 != CBL_OK || st3 != CBL_OK) {
            __atomic_add_fetch(&g_reentrant_errors, 1, __ATOMIC_SEQ_CST);
            fprintf(stderr, "re-entrant listener: get %d, put %d, count %d\n", st, st2, st3);
        }
    }
}

/* Removes itself from inside its own callback. */
static cbl_listener_token* g_self_token;
static int g_self_calls, g_self_calls_after;
static int g_self_removed;
static void on_self_remove(void* ctx, const cbl_change* ch, size_t count) {
    (void)ctx; (void)ch; (void)count;
    if (LOAD(g_self_removed)) { __atomic_add_fetch(&g_self_calls_after, 1, __ATOMIC_SEQ_CST); return; }
    __atomic_add_fetch(&g_self_calls, 1, __ATOMIC_SEQ_CST);
    if (__atomic_exchange_n(&g_self_removed, 1, __ATOMIC_SEQ_CST) == 0)
        cbl_listener_token_remove(g_self_token);
}

/* Added and removed in a loop; its context is freed right after removal (use-after-free
 * would show under ASan / as a crash). */
static void on_churn(void* ctx, const cbl_change* ch, size_t count) {
    long long* calls = (long long*)ctx;
    (void)ch;
    *calls += (long long)count;
}

/* ---- writers ------------------------------------------------------------------------------ */

typedef struct { int tid; long long incr[MAX_COUNTERS]; long long attempts; } writer_arg;

static int incr_cb(void* ctx, const char* current, char** out) {
    writer_arg* w = (writer_arg*)ctx;
    long long n = current ? rel_json_int(current, "n", 0) : 0;
    char body[128];
    w->attempts++;
    snprintf(body, sizeof body, "{\"n\":%lld,\"by\":%d}", n + 1, w->tid);
    *out = cbl_strdup(body);
    return 1;
}

static void* writer(void* arg) {
    writer_arg* w = (writer_arg*)arg;
    rel_rng r = { SEED * 1000 + (uint64_t)w->tid };
    for (int k = 0; k < K; k++) {
        int h = (int)rel_below(&r, (uint32_t)H);
        int c1 = (int)rel_below(&r, (uint32_t)C);
        char id[32];
        cbl_error e;
        if (C > 1 && rel_below(&r, 10) == 0) {          /* two counters in one transaction */
            int c2 = (c1 + 1 + (int)rel_below(&r, (uint32_t)C - 1)) % C;
            cbl_status st = cbl_db_begin(g_db[h], &e);
            if (st != CBL_OK) { fail_locked("begin: %s (%d)", e.message, st); continue; }
            int ok = 1;
            snprintf(id, sizeof id, "counter-%d", c1);
            st = cbl_doc_update(g_coll[h], id, incr_cb, w, NULL, &e);
            if (st != CBL_OK) { ok = 0; fail_locked("update in tx: %s (%d)", e.message, st); }
            snprintf(id, sizeof id, "counter-%d", c2);
            st = cbl_doc_update(g_coll[h], id, incr_cb, w, NULL, &e);
            if (st != CBL_OK) { ok = 0; fail_locked("update in tx: %s (%d)", e.message, st); }
            if (ok && rel_below(&r, 4) == 0) {          /* sometimes abort: nothing counts */
                st = cbl_db_abort(g_db[h], &e);
                if (st != CBL_OK) fail_locked("abort: %s (%d)", e.message, st);
            } else if (ok) {
                st = cbl_db_commit(g_db[h], &e);
                if (st == CBL_OK) { w->incr[c1]++; w->incr[c2]++; __atomic_add_fetch(&g_tx_done, 1, __ATOMIC_SEQ_CST); }
                else fail_locked("commit: %s (%d)", e.message, st);
            } else {
                IGNORE_STATUS(cbl_db_abort(g_db[h], NULL));
            }
        } else {
            snprintf(id, sizeof id, "counter-%d", c1);
            cbl_status st = cbl_doc_update(g_coll[h], id, incr_cb, w, NULL, &e);
            if (st == CBL_OK) w->incr[c1]++;
            else fail_locked("cbl_doc_update: %s (%d)", e.message, st);
        }
        __atomic_add_fetch(&g_progress, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

/* ---- readers, compactor, listener churn ------------------------------------------------------ */

static void* reader(void* arg) {
    int tid = (int)(intptr_t)arg;
    rel_rng r = { SEED * 7777 + (uint64_t)tid };
    long long last[MAX_COUNTERS];
    for (int i = 0; i < C; i++) last[i] = -1;
    uint64_t since = 0;
    while (!LOAD(g_writers_done)) {
        int h = (int)rel_below(&r, (uint32_t)H);
        int c = (int)rel_below(&r, (uint32_t)C);
        char id[32], *json = NULL;
        snprintf(id, sizeof id, "counter-%d", c);
        cbl_status st = cbl_doc_get(g_coll[h], id, 0, &json, NULL);
        if (st != CBL_OK) fail_locked("reader get %s -> %d", id, st);
        else {
            long long n = rel_json_int(json, "n", -2);
            if (n < last[c]) {
                char msg[128];
                snprintf(msg, sizeof msg, "%s went backwards %lld -> %lld (handle %%d)", id, last[c], n);
                fail_locked(msg, "", h);
            }
            last[c] = n;
        }
        cbl_free(json);
        __atomic_add_fetch(&g_reads, 1, __ATOMIC_SEQ_CST);
        if (rel_below(&r, 50) == 0) {                    /* page the changes feed */
            char* feed = NULL;
            st = cbl_collection_changes(g_coll[h], since, "{\"limit\":50}", &feed, NULL);
            if (st != CBL_OK) fail_locked("changes -> %s%d", "", st);
            else {
                long long ls = rel_json_int(feed, "last_seq", -1);
                if (ls < (long long)since) fail_locked("changes last_seq went backwards%s %d", "", (int)ls);
                else since = (uint64_t)ls;
            }
            cbl_free(feed);
            __atomic_add_fetch(&g_feed_pages, 1, __ATOMIC_SEQ_CST);
        }
    }
    return NULL;
}

static void* compactor(void* arg) {
    (void)arg;
    while (!LOAD(g_writers_done)) {
        cbl_error e;
        cbl_status st = cbl_db_compact(g_db[H - 1], &e);
        if (st == CBL_OK) g_compactions++;
        else if (st == CBL_BUSY) g_compact_busy++;
        else fail_locked("compact: %s (%d)", e.message, st);
        rel_sleep_us(20000);
    }
    return NULL;
}

static long long g_churn_rounds;
static void* churner(void* arg) {
    (void)arg;
    int i = 0;
    while (!LOAD(g_writers_done)) {
        long long* ctx = malloc(sizeof *ctx);
        *ctx = 0;
        cbl_listener_token* t = NULL;
        cbl_status st = (i++ % 2)
            ? cbl_collection_add_change_listener(g_coll[i % H], on_churn, ctx, &t, NULL)
            : cbl_collection_add_document_listener(g_coll[i % H], "counter-0", on_churn, ctx, &t, NULL);
        if (st != CBL_OK) fail_locked("add listener%s -> %d", "", st);
        rel_sleep_us(1000);
        cbl_listener_token_remove(t);
        memset(ctx, 0xAB, sizeof *ctx);                    /* must never be touched again */
        free(ctx);
        g_churn_rounds++;
    }
    return NULL;
}

/* ---- part 1 ---------------------------------------------------------------------------------- */

static void part_threads(void) {
    cbl_error e;
    int64_t inst0 = cbl_instance_count();
    for (int h = 0; h < H; h++) {
        if (cbl_db_open("stress", g_dir, "{\"busy_timeout_ms\":60000}", &g_db[h], &e) != CBL_OK ||
            cbl_db_default_collection(g_db[h], &g_coll[h], &e) != CBL_OK) {
            rel_failf("open handle %d: %d %s", h, e.code, e.message);
            exit(rel_summary());
        }
    }
    if (cbl_db_create_collection(g_db[0], "echoes", "echo", &g_echo, &e) != CBL_OK) rel_failf("create collection: %s", e.message);
    for (int c = 0; c < C; c++) {
        char id[32];
        snprintf(id, sizeof id, "counter-%d", c);
        if (cbl_doc_put(g_coll[0], id, "{\"n\":0}", NULL, 0, NULL, NULL, &e) != CBL_OK) rel_failf("create %s: %s", id, e.message);
    }
    uint64_t seq0 = 0;
    CHECK(cbl_collection_last_sequence(g_coll[0], &seq0, NULL) == CBL_OK);

    cbl_listener_token* toks[MAX_HANDLES];
    for (int h = 0; h < H; h++) {
        g_lis[h].seqs = malloc(sizeof(uint64_t) * MAX_SEQS);
        g_lis[h].last = seq0;
        pthread_mutex_init(&g_lis[h].mu, NULL);
        CHECK(cbl_collection_add_change_listener(g_coll[h], on_change, &g_lis[h], &toks[h], NULL) == CBL_OK);
    }
    cbl_listener_token *reent = NULL;
    CHECK(cbl_collection_add_document_listener(g_coll[1 % H], "counter-0", on_doc_reentrant, NULL, &reent, NULL) == CBL_OK);
    CHECK(cbl_db_add_change_listener(g_db[0], on_self_remove, NULL, &g_self_token, NULL) == CBL_OK);

    pthread_t wt[256], rt[64], ct, cht;
    static writer_arg wa[256];
    double t0 = rel_now();
    for (int i = 0; i < W; i++) { memset(&wa[i], 0, sizeof wa[i]); wa[i].tid = i; pthread_create(&wt[i], NULL, writer, &wa[i]); }
    for (int i = 0; i < R; i++) pthread_create(&rt[i], NULL, reader, (void*)(intptr_t)i);
    pthread_create(&ct, NULL, compactor, NULL);
    pthread_create(&cht, NULL, churner, NULL);
    for (int i = 0; i < W; i++) pthread_join(wt[i], NULL);
    STORE(g_writers_done, 1);
    for (int i = 0; i < R; i++) pthread_join(rt[i], NULL);
    pthread_join(ct, NULL);
    pthread_join(cht, NULL);
    double secs = rel_now() - t0;

    for (int h = 0; h < H; h++) {
        cbl_status st = cbl_db_wait_notifications(g_db[h], 30000, &e);
        if (st != CBL_OK) rel_failf("wait_notifications(handle %d) -> %d %s", h, st, e.message);
    }
    /* No lost update. */
    long long total = 0, attempts = 0;
    for (int i = 0; i < W; i++) {
        attempts += wa[i].attempts;
        for (int c = 0; c < C; c++) g_incr[c] += wa[i].incr[c];
    }
    for (int c = 0; c < C; c++) {
        char id[32], *json = NULL;
        snprintf(id, sizeof id, "counter-%d", c);
        CHECK(cbl_doc_get(g_coll[0], id, 0, &json, NULL) == CBL_OK);
        long long n = rel_json_int(json, "n", -1);
        if (n != g_incr[c]) rel_failf("lost update: %s is %lld, %lld increments were acknowledged", id, n, g_incr[c]);
        else g_pass++;
        total += g_incr[c];
        cbl_free(json);
    }
    /* Every listener saw every sequence exactly once, in order. */
    uint64_t seq1 = 0;
    CHECK(cbl_collection_last_sequence(g_coll[0], &seq1, NULL) == CBL_OK);
    for (int h = 0; h < H; h++) {
        seq_listener* l = &g_lis[h];
        pthread_mutex_lock(&l->mu);
        int ok = l->out_of_order == 0 && (long long)l->n == total && l->last == seq1;
        for (size_t i = 1; ok && i < l->n; i++) if (l->seqs[i] <= l->seqs[i - 1]) ok = 0;
        if (!ok) rel_failf("listener on handle %d: %zu changes (expected %lld), out of order/duplicates %d, last %llu (last_sequence %llu)",
                           h, l->n, total, l->out_of_order, (unsigned long long)l->last, (unsigned long long)seq1);
        else g_pass++;
        if (l->concurrent) rel_failf("listener on handle %d was called concurrently %d times", h, l->concurrent);
        pthread_mutex_unlock(&l->mu);
    }
    if (seq1 - seq0 != (uint64_t)total)
        printf("note: %llu sequences assigned for %lld acknowledged saves\n", (unsigned long long)(seq1 - seq0), total);
    CHECK(LOAD(g_reentrant_errors) == 0);
    CHECK(LOAD(g_reentrant_calls) > 0);
    CHECK(LOAD(g_self_calls) == 1);
    CHECK(LOAD(g_self_calls_after) == 0);
    uint64_t echoes = 0;
    CHECK(cbl_collection_count(g_echo, &echoes, NULL) == CBL_OK);
    CHECK((long long)echoes == g_reentrant_calls);
    char* report = NULL;
    cbl_status st = cbl_db_integrity_check(g_db[0], &report, &e);
    if (st != CBL_OK) rel_failf("integrity check: %s %s", e.message, report ? report : "");
    else g_pass++;
    cbl_free(report);

    cbl_listener_token_remove(reent);
    cbl_listener_token_remove(g_self_token);                     /* twice: harmless */
    for (int h = 0; h < H; h++) cbl_listener_token_remove(toks[h]);
    cbl_collection_release(g_echo);
    for (int h = 0; h < H; h++) {
        cbl_collection_release(g_coll[h]);
        if (cbl_db_close(g_db[h], &e) != CBL_OK) rel_failf("close %d: %s", h, e.message);
        free(g_lis[h].seqs);
    }
    int64_t inst1 = cbl_instance_count();
    if (inst1 != inst0) rel_failf("cbl_instance_count %lld before, %lld after", (long long)inst0, (long long)inst1);
    else g_pass++;
    printf("stress threads: %d writers x %d ops (%lld increments, %lld update callbacks incl. retries, %lld transactions), "
           "%d readers (%lld reads, %lld feed pages), %d handles, %d listeners, %lld re-entrant callbacks, "
           "%lld listener add/remove rounds, %lld compactions (%lld busy); %.1f s\n",
           W, K, total, attempts, g_tx_done, R, g_reads, g_feed_pages, H, H + 3, g_reentrant_calls, g_churn_rounds,
           g_compactions, g_compact_busy, secs);
    fflush(stdout);
}

/* ---- part 2: several processes ---------------------------------------------------------------- */

/* victim: logs "I c" before and "A c" after each increment, runs until SIGKILLed. */
static int proc_child(const char* dir, int ops, uint64_t seed, double start_at, int victim) {
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    cbl_error e;
    if (cbl_db_open("stress-mp", dir, "{\"busy_timeout_ms\":60000}", &db, &e) != CBL_OK ||
        cbl_db_default_collection(db, &c, &e) != CBL_OK) {
        fprintf(stderr, "child open: %d %s\n", e.code, e.message);
        return 2;
    }
    rel_rng r = { seed };
    writer_arg w;
    memset(&w, 0, sizeof w);
    w.tid = (int)(seed % 1000);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);               /* start together */
    double wait = start_at - ((double)ts.tv_sec + ts.tv_nsec / 1e9);
    if (wait > 0 && wait < 10) rel_sleep_us((long)(wait * 1e6));
    int errors = 0;
    for (int k = 0; victim || k < ops; k++) {
        int cn = (int)rel_below(&r, (uint32_t)C);
        char id[32];
        snprintf(id, sizeof id, "counter-%d", cn);
        if (victim) { printf("I %d\n", cn); fflush(stdout); }
        cbl_status st = cbl_doc_update(c, id, incr_cb, &w, NULL, &e);
        if (victim && st == CBL_OK) { printf("A %d\n", cn); fflush(stdout); }
        if (st == CBL_OK) w.incr[cn]++;
        else { errors++; fprintf(stderr, "child %d: update %s -> %d %s\n", (int)getpid(), id, st, e.message); }
    }
    cbl_collection_release(c);
    if (cbl_db_close(db, NULL) != CBL_OK) errors++;
    printf("RESULT %d %lld", errors, w.attempts);
    for (int i = 0; i < C; i++) printf(" %lld", w.incr[i]);
    printf("\n");
    fflush(stdout);
    return errors ? 1 : 0;
}

static void part_processes(const char* self) {
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    cbl_error e;
    if (cbl_db_open("stress-mp", g_dir, NULL, &db, &e) != CBL_OK || cbl_db_default_collection(db, &c, &e) != CBL_OK) {
        rel_failf("open stress-mp: %s", e.message);
        return;
    }
    for (int i = 0; i < C; i++) {
        char id[32];
        snprintf(id, sizeof id, "counter-%d", i);
        CHECK(cbl_doc_put(c, id, "{\"n\":0}", NULL, 0, NULL, NULL, NULL) == CBL_OK);
    }
    cbl_collection_release(c);
    CHECK(cbl_db_close(db, NULL) == CBL_OK);         /* the children have the file to themselves */

    FILE* out[65];
    pid_t pids[65];
    double t0 = rel_now();
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char a_start[64];
    snprintf(a_start, sizeof a_start, "%.6f", (double)now.tv_sec + now.tv_nsec / 1e9 + 0.5);
    /* process P (one more) is the victim: SIGKILLed while the others write */
    for (int p = 0; p <= P; p++) {
        int fds[2];
        if (pipe(fds) != 0) { perror("pipe"); exit(2); }
        pid_t pid = fork();
        if (pid == 0) {
            dup2(fds[1], 1);
            close(fds[0]); close(fds[1]);
            char a_ops[16], a_seed[32], a_c[16];
            snprintf(a_ops, sizeof a_ops, "%d", PK);
            snprintf(a_seed, sizeof a_seed, "%llu", (unsigned long long)(SEED * 31 + (uint64_t)p));
            snprintf(a_c, sizeof a_c, "%d", C);
            execl(self, self, "--proc-child", g_dir, a_ops, a_seed, a_c, a_start, p == P ? "1" : "0", (char*)NULL);
            _exit(127);
        }
        close(fds[1]);
        pids[p] = pid;
        out[p] = fdopen(fds[0], "r");
    }
    long long incr[MAX_COUNTERS] = {0}, attempts = 0, victim_acked = 0;
    int victim_inflight = -1;
    {   /* kill the victim 0.2-0.5 s after the common start, then read what it acknowledged */
        rel_rng vr = { SEED * 97 };
        rel_sleep_us(500000 + 200000 + (long)rel_below(&vr, 300000));
        kill(pids[P], SIGKILL);
        char line[256];
        while (fgets(line, sizeof line, out[P])) {
            int cn = atoi(line + 2);
            if (cn < 0 || cn >= C) continue;
            if (line[0] == 'I') victim_inflight = cn;
            else if (line[0] == 'A') { incr[cn]++; victim_acked++; victim_inflight = -1; }
        }
        fclose(out[P]);
        int status = 0;
        waitpid(pids[P], &status, 0);
        if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) rel_failf("victim process status 0x%x", status);
    }
    for (int p = 0; p < P; p++) {
        char line[4096] = "";
        int got = 0;
        while (fgets(line, sizeof line, out[p])) {
            if (strncmp(line, "RESULT ", 7) == 0) {
                got = 1;
                char* s = line + 7;
                long errs = strtol(s, &s, 10);
                attempts += strtoll(s, &s, 10);
                if (errs) rel_failf("process %d: %ld failed updates", p, errs);
                for (int i = 0; i < C; i++) incr[i] += strtoll(s, &s, 10);
            }
        }
        fclose(out[p]);
        int status = 0;
        waitpid(pids[p], &status, 0);
        if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            rel_failf("process %d ended with status 0x%x%s", p, status, got ? "" : " and no result");
        else g_pass++;
    }
    double secs = rel_now() - t0;
    if (cbl_db_open("stress-mp", g_dir, NULL, &db, &e) != CBL_OK || cbl_db_default_collection(db, &c, &e) != CBL_OK) {
        rel_failf("reopen stress-mp: %s", e.message);
        return;
    }
    long long total = 0;
    for (int i = 0; i < C; i++) {
        char id[32], *json = NULL;
        snprintf(id, sizeof id, "counter-%d", i);
        CHECK(cbl_doc_get(c, id, 0, &json, NULL) == CBL_OK);
        long long n = rel_json_int(json, "n", -1);
        /* the victim's one increment in flight at the kill may or may not have committed */
        if (n != incr[i] && !(i == victim_inflight && n == incr[i] + 1))
            rel_failf("lost update across processes: %s is %lld, %lld increments acknowledged", id, n, incr[i]);
        else g_pass++;
        total += n;
        cbl_free(json);
    }
    char* report = NULL;
    if (cbl_db_integrity_check(db, &report, &e) != CBL_OK) rel_failf("integrity (processes): %s %s", e.message, report ? report : "");
    else g_pass++;
    cbl_free(report);
    cbl_collection_release(c);
    CHECK(cbl_db_close(db, NULL) == CBL_OK);
    printf("stress processes: %d processes x %d ops on one file plus one SIGKILLed mid-run (%lld increments acknowledged "
           "before the kill), %lld increments verified (%lld update callbacks incl. conflict retries); %.1f s\n",
           P, PK, victim_acked, total, attempts, secs);
}

int main(int argc, char** argv) {
    if (argc == 8 && strcmp(argv[1], "--proc-child") == 0) {
        C = atoi(argv[5]);
        return proc_child(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10), atof(argv[6]), atoi(argv[7]));
    }
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "missing value for %s\n", a); return 2; }
        i++;
        if (!strcmp(a, "--threads")) W = atoi(v);
        else if (!strcmp(a, "--ops")) K = atoi(v);
        else if (!strcmp(a, "--handles")) H = atoi(v);
        else if (!strcmp(a, "--readers")) R = atoi(v);
        else if (!strcmp(a, "--counters")) C = atoi(v);
        else if (!strcmp(a, "--procs")) P = atoi(v);
        else if (!strcmp(a, "--proc-ops")) PK = atoi(v);
        else if (!strcmp(a, "--seed")) SEED = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--watchdog")) WATCHDOG = atoi(v);
        else { fprintf(stderr, "unknown option %s\n", a); return 2; }
    }
    if (W < 1 || W > 256) W = 8;
    if (H < 1 || H > MAX_HANDLES) H = 3;
    if (R < 0 || R > 64) R = 2;
    if (C < 1 || C > MAX_COUNTERS) C = 8;
    if (P < 0 || P > 64) P = 2;
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) { perror("readlink"); return 2; }
    self[n] = 0;
    rel_mktemp(g_dir, sizeof g_dir, "stress");
    printf("stress_test: seed %llu, dir %s, watchdog %d s\n", (unsigned long long)SEED, g_dir, WATCHDOG);
    fflush(stdout);
    pthread_t wd;
    pthread_create(&wd, NULL, watchdog, NULL);
    part_threads();
    if (P > 0) part_processes(self);
    STORE(g_all_done, 1);
    pthread_join(wd, NULL);
    if (g_fail == 0) rel_rm_rf(g_dir);
    return rel_summary();
}
