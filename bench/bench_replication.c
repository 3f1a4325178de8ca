/*
 * bench_replication.c — the replication phase of `make bench` (issue 11): N documents
 * of the workload pushed from one database to another served by the listener, then
 * pulled from it into a third, over loopback, in one process; the same N written with
 * cbl_collection_docs_save in the same run is the baseline the rates are compared with.
 *
 * Usage: bench_replication --n N --dir DIR [--runs R]
 * Prints per run, then the medians:
 *   replication <push|pull|capi_write> <ms> <docs_per_s>
 *   replication <push|pull>_ratio <ms / capi_write ms>
 *   replication <push|pull>_rss_kib <peak resident set above the start of the phase>
 * Memory should not grow with N: run with two values of N and compare the rss lines.
 */
#include "bench_common.h"
#include "cblite.h"

#include <stdlib.h>
#include <string.h>

static cbl_error err;

static void ck(cbl_status st, const char* call) {
    if (st != CBL_OK) bench_die("%s: %d %s", call, err.code, err.message);
}




static void write_docs(cbl_collection* coll, long n, char* json) {
    for (long lo = 0; lo < n; lo += BENCH_BATCH) {
        long hi = lo + BENCH_BATCH < n ? lo + BENCH_BATCH : n;
        bench_batch_json(json, lo, hi);
        char* results = NULL;
        ck(cbl_collection_docs_save(coll, json, &results, &err), "cbl_collection_docs_save");
        if (strstr(results, "\"error\"")) bench_die("cbl_collection_docs_save: %.200s", results);
        cbl_free(results);
    }
}

/* Runs a one-shot replication to its end; returns ms and the peak RSS above its start. */
static double replicate(cbl_collection* coll, const char* config, long* rss_kib) {
    bench_rss_reset_peak();
    long start = bench_rss_kib();
    double t = bench_now_ms();
    cbl_replicator* r;
    ck(cbl_replicator_start(coll, config, NULL, NULL, NULL, &r, &err), "cbl_replicator_start");
    ck(cbl_replicator_wait(r, -1, &err), "cbl_replicator_wait");
    double ms = bench_now_ms() - t;
    char* status = NULL;
    ck(cbl_replicator_status(r, &status, &err), "cbl_replicator_status");
    if (strstr(status, "\"error\"")) bench_die("replication failed: %s", status);
    cbl_free(status);
    cbl_replicator_stop(r);
    *rss_kib = bench_rss_peak_kib() - start;
    return ms;
}

static void expect_count(cbl_collection* coll, long n, const char* what) {
    uint64_t count = 0;
    ck(cbl_collection_count(coll, &count, &err), "cbl_collection_count");
    if ((long)count != n) bench_check("replication", "%s holds %llu documents, expected %ld", what, (unsigned long long)count, n);
}

int main(int argc, char** argv) {
    long n = 100000;
    int runs = 3;
    const char* base = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atol(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) base = argv[++i];
        else bench_die("usage: bench_replication --n N --dir DIR [--runs R]");
    }
    if (!base || n <= 0 || runs <= 0 || runs > 15) bench_die("usage: bench_replication --n N --dir DIR [--runs R]");
    char* json = malloc((size_t)BENCH_BATCH * (BENCH_BODY_SIZE + BENCH_ID_SIZE + 16) + 64);
    double capi[15], push[15], pull[15];
    long push_rss[15], pull_rss[15];
    for (int run = 0; run < runs; run++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/run%d", base, run);
        bench_remove_tree(dir);
        bench_mkdirs(dir);
        cbl_db *src_db, *served_db, *pulled_db, *capi_db;
        cbl_collection *src, *served, *pulled, *capi_coll;
        ck(cbl_db_open("source", dir, NULL, &src_db, &err), "cbl_db_open");
        ck(cbl_db_open("served", dir, NULL, &served_db, &err), "cbl_db_open");
        ck(cbl_db_open("pulled", dir, NULL, &pulled_db, &err), "cbl_db_open");
        ck(cbl_db_open("capi", dir, NULL, &capi_db, &err), "cbl_db_open");
        ck(cbl_db_default_collection(src_db, &src, &err), "cbl_db_default_collection");
        ck(cbl_db_default_collection(served_db, &served, &err), "cbl_db_default_collection");
        ck(cbl_db_default_collection(pulled_db, &pulled, &err), "cbl_db_default_collection");
        ck(cbl_db_default_collection(capi_db, &capi_coll, &err), "cbl_db_default_collection");
        write_docs(src, n, json);

        double t = bench_now_ms();
        write_docs(capi_coll, n, json);
        capi[run] = bench_now_ms() - t;

        cbl_server* server;
        ck(cbl_server_start("{\"port\":0}", &server, &err), "cbl_server_start");
        ck(cbl_server_serve(server, "served", served_db, &err), "cbl_server_serve");
        uint16_t port;
        ck(cbl_server_port(server, &port, &err), "cbl_server_port");
        char config[256];
        snprintf(config, sizeof config, "{\"url\":\"http://127.0.0.1:%u/served\",\"direction\":\"push\"}", port);
        push[run] = replicate(src, config, &push_rss[run]);
        expect_count(served, n, "the pushed-to database");
        snprintf(config, sizeof config, "{\"url\":\"http://127.0.0.1:%u/served\",\"direction\":\"pull\"}", port);
        pull[run] = replicate(pulled, config, &pull_rss[run]);
        expect_count(pulled, n, "the pulled-into database");

        cbl_server_stop(server, 5000);
        cbl_collection_release(src);
        cbl_collection_release(served);
        cbl_collection_release(pulled);
        cbl_collection_release(capi_coll);
        ck(cbl_db_close(src_db, &err), "cbl_db_close");
        ck(cbl_db_close(served_db, &err), "cbl_db_close");
        ck(cbl_db_close(pulled_db, &err), "cbl_db_close");
        ck(cbl_db_close(capi_db, &err), "cbl_db_close");
        bench_remove_tree(dir);
        printf("run %d: capi write %.0f ms, push %.0f ms (%ld KiB), pull %.0f ms (%ld KiB)\n",
               run + 1, capi[run], push[run], push_rss[run], pull[run], pull_rss[run]);
        fflush(stdout);
    }
    long pr[15], lr[15];
    memcpy(pr, push_rss, sizeof pr);
    memcpy(lr, pull_rss, sizeof lr);
    double c = bench_median(capi, runs), p = bench_median(push, runs), l = bench_median(pull, runs);
    long max_push_rss = 0, max_pull_rss = 0;
    for (int i = 0; i < runs; i++) {
        if (pr[i] > max_push_rss) max_push_rss = pr[i];
        if (lr[i] > max_pull_rss) max_pull_rss = lr[i];
    }
    printf("replication capi_write %.1f %.0f\n", c, n / c * 1000);
    printf("replication push %.1f %.0f\n", p, n / p * 1000);
    printf("replication pull %.1f %.0f\n", l, n / l * 1000);
    printf("replication push_ratio %.2f\n", p / c);
    printf("replication pull_ratio %.2f\n", l / c);
    printf("replication push_rss_kib %ld\n", max_push_rss);
    printf("replication pull_rss_kib %ld\n", max_pull_rss);
    free(json);
    return 0;
}
