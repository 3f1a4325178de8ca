/*
 * bench_cblite.c — the cblite side of the benchmark: the workload of WORKLOAD.md through
 * the C interface only (include/cblite.h, linked against build/lib/libcblite.so.1), as
 * users call it.
 *
 * Every phase of the workload is built; a phase marked 0 in `available` would be
 * printed as "not built" and left out of the JSON (and skipped by the baseline).
 * Usage: bench_cblite --n N --dir DIR [--phases ...]   (see bench_common.h)
 */
#define _XOPEN_SOURCE 700
#include "bench_common.h"
#include "cblite.h"

#include <stdlib.h>
#include <string.h>

static cbl_error err;

static void ck(cbl_status st, const char* call, const char* arg) {
    if (st == CBL_OK) return;
    bench_die("cblite: %s(%s) failed: %d (%s) detail %d: %s", call, arg ? arg : "",
              (int)st, cbl_status_name(st), (int)err.detail, err.message);
}

static long count_occurrences(const char* s, const char* needle) {
    long c = 0;
    size_t len = strlen(needle);
    for (const char* p = strstr(s, needle); p; p = strstr(p + len, needle)) c++;
    return c;
}

/* The workload's view: emit (age, null) for documents of type person. A tiny scanner
 * suffices: bodies are the workload's own, canonical JSON. */
static void map_by_age(void* ctx, const char* doc_json, cbl_emitter* emitter) {
    (void)ctx;
    const char* type = bench_json_find(doc_json, "type");
    long long age = 0;
    if (!type || strncmp(type, "\"person\"", 8) != 0) return;
    if (!bench_json_int(bench_json_find(doc_json, "age"), &age)) return;
    char key[32];
    snprintf(key, sizeof key, "%lld", age);
    cbl_status st = cbl_emitter_emit(emitter, key, NULL, &err);
    if (st != CBL_OK) ck(st, "cbl_emitter_emit", key);
}

/* Rows per cbl_query_result_next_rows call: the streaming path reads a page per call,
 * as a program reading many rows would (one handle lookup and lock per page, not per row). */
#define BENCH_PAGE_ROWS 256

/* Runs a map-only query and reads its rows a page at a time (the streaming path). */
static long query_rows(cbl_view* view, const char* options) {
    cbl_query_result* r = NULL;
    ck(cbl_view_query(view, options, &r, &err), "cbl_view_query", options);
    cbl_query_row page[BENCH_PAGE_ROWS];
    size_t count = 0;
    long rows = 0;
    for (;;) {
        ck(cbl_query_result_next_rows(r, page, BENCH_PAGE_ROWS, &count, &err), "cbl_query_result_next_rows", NULL);
        if (count == 0) break;
        for (size_t i = 0; i < count; i++)
            if (page[i].doc_id) rows++;
    }
    cbl_query_result_release(r);
    return rows;
}

int main(int argc, char** argv) {
    static const int available[PH_COUNT] = {
        [PH_INSERT] = 1, [PH_READ] = 1, [PH_UPDATE] = 1,
        [PH_VIEW_BUILD] = 1, [PH_VIEW_QUERY] = 1,
        [PH_DELETE] = 1, [PH_CHANGES] = 1,
        [PH_ATTACHMENTS] = 1,
    };
    bench_opts o;
    if (bench_parse_side_args(argc, argv, available, &o)) return 0;
    bench_side s;
    bench_side_init(&s, "cblite");
    const long n = o.n;
    char id[BENCH_ID_SIZE], body[BENCH_BODY_SIZE];
    cbl_db* db = NULL;
    cbl_collection* coll = NULL;

    if (bench_remove_tree(o.dir) != 0 || bench_mkdirs(o.dir) != 0)
        bench_die("cblite: cannot create %s", o.dir);
    printf("info version %s\n", cbl_version());
    {
        char* v = NULL;
        ck(cbl_storage_versions(&v, &err), "cbl_storage_versions", NULL);
        printf("info storage %s\n", v);
        cbl_free(v);
    }
    double t_open = bench_now_ms();
    /* --encrypted: the same work on a SQLCipher-encrypted database (raw 256-bit key, so
     * the figure is the cipher's cost, not the password KDF's). */
    const char* open_options = o.encrypted
        ? "{\"encryption_key\":{\"raw_hex\":\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}}"
        : NULL;
    ck(cbl_db_open("bench", o.dir, open_options, &db, &err), "cbl_db_open", o.dir);
    ck(cbl_db_default_collection(db, &coll, &err), "cbl_db_default_collection", NULL);
    printf("info open_ms %.3f\n", bench_now_ms() - t_open);

    /* 1. insert: N documents with given IDs, 1,000 per transaction */
    if (o.phases[PH_INSERT]) {
        bench_phase_begin(&s, PH_INSERT);
        for (long i = 0; i < n; i++) {
            if (i % BENCH_BATCH == 0) ck(cbl_db_begin(db, &err), "cbl_db_begin", NULL);
            bench_doc_id(id, i);
            bench_doc_body(body, i, (int)(i % 90));
            ck(cbl_doc_put(coll, id, body, NULL, 0, NULL, NULL, &err), "cbl_doc_put", id);
            if (i % BENCH_BATCH == BENCH_BATCH - 1 || i == n - 1)
                ck(cbl_db_commit(db, &err), "cbl_db_commit", NULL);
        }
        bench_phase_end(&s, n);
    }

    /* 2. read: all N by ID in LCG order, finding `age` in the returned JSON */
    if (o.phases[PH_READ]) {
        long* order = bench_read_order(n);
        long bad = 0;
        bench_phase_begin(&s, PH_READ);
        for (long k = 0; k < n; k++) {
            long i = order[k];
            char* json = NULL;
            long long age = -1;
            bench_doc_id(id, i);
            ck(cbl_doc_get(coll, id, 0, &json, &err), "cbl_doc_get", id);
            if (!bench_json_int(bench_json_find(json, "age"), &age) || age != i % 90) bad++;
            cbl_free(json);
        }
        bench_phase_end(&s, n);
        if (bad) bench_check("read", "%ld documents without the expected age", bad);
        free(order);
    }

    /* 3. update: every 10th document (i % 10 == 0): age + 1 as a new revision on the
     * current one (read it, then cbl_doc_put with its _rev as parent), 1,000 per transaction */
    if (o.phases[PH_UPDATE]) {
        long count = 0, bad = 0;
        char rev[256];
        bench_phase_begin(&s, PH_UPDATE);
        for (long i = 0; i < n; i += 10) {
            if (count % BENCH_BATCH == 0) ck(cbl_db_begin(db, &err), "cbl_db_begin", NULL);
            char* json = NULL;
            long long age = -1;
            bench_doc_id(id, i);
            ck(cbl_doc_get(coll, id, 0, &json, &err), "cbl_doc_get", id);
            if (bench_json_str(bench_json_find(json, "_rev"), rev, sizeof rev) &&
                bench_json_int(bench_json_find(json, "age"), &age)) {
                bench_doc_body(body, i, (int)age + 1);
                ck(cbl_doc_put(coll, id, body, rev, 0, NULL, NULL, &err), "cbl_doc_put", id);
            } else {
                bad++;
            }
            cbl_free(json);
            count++;
            if (count % BENCH_BATCH == 0 || i + 10 >= n) ck(cbl_db_commit(db, &err), "cbl_db_commit", NULL);
        }
        bench_phase_end(&s, count);
        if (bad) bench_check("update", "%ld documents without _rev or age", bad);
    }

    /* 4. view build: map emitting (age, null) for documents of type person, with the
     * _count reducer; the first query (key = 42, map only) builds the index. */
    cbl_view* view = NULL;
    if (o.phases[PH_VIEW_BUILD] || o.phases[PH_VIEW_QUERY]) {
        ck(cbl_collection_view(coll, "byAge", &view, &err), "cbl_collection_view", NULL);
        ck(cbl_view_set_map_reduce(view, map_by_age, NULL, "_count", "1", NULL, &err), "cbl_view_set_map_reduce", NULL);
    }
    char key_query[64];
    snprintf(key_query, sizeof key_query, "{\"key\":%d,\"reduce\":false}", BENCH_VIEW_KEY);
    if (o.phases[PH_VIEW_BUILD]) {
        bench_phase_begin(&s, PH_VIEW_BUILD);
        long rows = query_rows(view, key_query);
        bench_phase_end(&s, n);
        long want = bench_expected_key_count(n, BENCH_VIEW_KEY, 0);
        if (rows != want) bench_check("view_build", "key %d: %ld rows, expected %ld", BENCH_VIEW_KEY, rows, want);
    }

    /* 5. view query: key = 42, 100 times, rows read a page at a time; then _count grouped
     *    by age, its groups read a page at a time too */
    if (o.phases[PH_VIEW_QUERY]) {
        long rows = 0, groups = 0, total = 0;
        bench_phase_begin(&s, PH_VIEW_QUERY);
        for (int k = 0; k < BENCH_VIEW_QUERIES; k++) rows += query_rows(view, key_query);
        cbl_query_result* r = NULL;
        ck(cbl_view_query(view, "{\"group\":true}", &r, &err), "cbl_view_query", "group");
        cbl_query_row page[BENCH_PAGE_ROWS];
        size_t count = 0;
        for (;;) {
            ck(cbl_query_result_next_rows(r, page, BENCH_PAGE_ROWS, &count, &err), "cbl_query_result_next_rows", NULL);
            if (count == 0) break;
            for (size_t i = 0; i < count; i++) {
                groups++;
                total += page[i].value_json ? atol(page[i].value_json) : 0;
            }
        }
        cbl_query_result_release(r);
        bench_phase_end(&s, BENCH_VIEW_QUERIES + 1);
        long want = bench_expected_key_count(n, BENCH_VIEW_KEY, 0) * BENCH_VIEW_QUERIES;
        long wantg = bench_expected_groups(n, 0);
        if (rows != want || groups != wantg || total != n)
            bench_check("view_query", "%ld rows (expected %ld), %ld groups (expected %ld) counting %ld docs (expected %ld)",
                        rows, want, groups, wantg, total, n);
    }
    if (view) cbl_view_release(view);

    /* 6. delete: every 10th document (i % 10 == 5), tombstones on the current revision */
    long deleted_docs = 0;
    if (o.phases[PH_DELETE]) {
        bench_phase_begin(&s, PH_DELETE);
        for (long i = 5; i < n; i += 10) {
            if (deleted_docs % BENCH_BATCH == 0) ck(cbl_db_begin(db, &err), "cbl_db_begin", NULL);
            bench_doc_id(id, i);
            ck(cbl_doc_delete(coll, id, NULL, NULL, &err), "cbl_doc_delete", id);
            deleted_docs++;
            if (deleted_docs % BENCH_BATCH == 0 || i + 10 >= n) ck(cbl_db_commit(db, &err), "cbl_db_commit", NULL);
        }
        bench_phase_end(&s, deleted_docs);
    }

    /* 7. changes: the whole feed from sequence 0, paged with "limit" (BENCH_CHANGES_PAGE,
     * default 1000; 0 = one call); entries counted in the JSON. */
    if (o.phases[PH_CHANGES]) {
        long entries = 0, tombstones = 0;
        uint64_t since = 0;
        char opts[64];
        if (o.changes_page > 0) snprintf(opts, sizeof opts, "{\"limit\":%ld}", o.changes_page);
        bench_phase_begin(&s, PH_CHANGES);
        for (;;) {
            char* json = NULL;
            ck(cbl_collection_changes(coll, since, o.changes_page > 0 ? opts : NULL, &json, &err),
               "cbl_collection_changes", NULL);
            long page = 0;
            uint64_t max_seq = since;
            for (const char* p = strstr(json, "\"seq\":"); p; p = strstr(p + 6, "\"seq\":")) {
                unsigned long long seq = strtoull(p + 6, NULL, 10);
                if (seq > max_seq) max_seq = seq;
                page++;
            }
            tombstones += count_occurrences(json, "\"deleted\":true");
            cbl_free(json);
            entries += page;
            if (page == 0 || o.changes_page <= 0) break;
            if (max_seq <= since) bench_die("cblite: the changes feed does not advance past sequence %llu",
                                            (unsigned long long)since);
            since = max_seq;
        }
        bench_phase_end(&s, entries);
        if (entries != n || tombstones != deleted_docs)
            bench_check("changes", "%ld entries (expected %ld), %ld deleted (expected %ld)",
                        entries, n, tombstones, deleted_docs);
    }

    /* 8. attachments: 1,000 of 64 KiB random bytes, each stored (cbl_db_blob_put) and
     * attached to its own document in one transaction; then all read back whole. */
    if (o.phases[PH_ATTACHMENTS]) {
        unsigned char* data = malloc(BENCH_ATT_SIZE);
        unsigned char (*heads)[8] = malloc(sizeof(*heads) * BENCH_ATT_COUNT);
        if (!data || !heads) bench_die("out of memory");
        long bad = 0;
        bench_phase_begin(&s, PH_ATTACHMENTS);
        ck(cbl_db_begin(db, &err), "cbl_db_begin", NULL);
        for (long k = 0; k < BENCH_ATT_COUNT; k++) {
            bench_att_bytes(data, BENCH_ATT_SIZE, k);
            memcpy(heads[k], data, 8);
            char* digest = NULL;
            ck(cbl_db_blob_put(db, data, BENCH_ATT_SIZE, &digest, &err), "cbl_db_blob_put", NULL);
            snprintf(id, sizeof id, "att-%06ld", k);
            ck(cbl_doc_set_attachment(coll, id, NULL, "data.bin", "application/octet-stream", digest, NULL, &err),
               "cbl_doc_set_attachment", id);
            cbl_free(digest);
        }
        ck(cbl_db_commit(db, &err), "cbl_db_commit", NULL);
        for (long k = 0; k < BENCH_ATT_COUNT; k++) {
            void* bytes = NULL;
            size_t len = 0;
            snprintf(id, sizeof id, "att-%06ld", k);
            ck(cbl_doc_get_attachment(coll, id, "data.bin", &bytes, &len, &err), "cbl_doc_get_attachment", id);
            if (len != BENCH_ATT_SIZE || memcmp(bytes, heads[k], 8) != 0) bad++;
            cbl_free(bytes);
        }
        bench_phase_end(&s, BENCH_ATT_COUNT);
        if (bad) bench_check("attachments", "%ld attachments missing or wrong", bad);
        free(data); free(heads);
        /* the attachment documents are not part of the workload's document count */
        deleted_docs -= BENCH_ATT_COUNT;

        /* Outside the timings: one large attachment (BENCH_BIG_ATTACHMENT_MB, default 200)
         * streamed in through a writer and out through a reader in 64 KiB chunks; the
         * peak memory above the level before it shows that streaming is constant-memory. */
        const char* env_mb = getenv("BENCH_BIG_ATTACHMENT_MB");
        long mb = env_mb ? atol(env_mb) : 200;
        if (mb > 0) {
            enum { CHUNK = 64 * 1024 };
            unsigned char* chunk = malloc(CHUNK);
            if (!chunk) bench_die("out of memory");
            /* in a database of its own, so the workload's size on disk is not affected */
            char big_dir[4200];
            snprintf(big_dir, sizeof big_dir, "%s-large", o.dir);
            if (bench_remove_tree(big_dir) != 0 || bench_mkdirs(big_dir) != 0) bench_die("cblite: cannot create %s", big_dir);
            cbl_db* bdb = NULL;
            cbl_collection* bcoll = NULL;
            ck(cbl_db_open("large", big_dir, NULL, &bdb, &err), "cbl_db_open", big_dir);
            ck(cbl_db_default_collection(bdb, &bcoll, &err), "cbl_db_default_collection", NULL);
            bench_rss_reset_peak();
            long before = bench_rss_kib();
            double t0 = bench_now_ms();
            cbl_blob_writer* w = NULL;
            ck(cbl_blob_writer_create(bdb, &w, &err), "cbl_blob_writer_create", NULL);
            for (long k = 0; k < mb * 16; k++) {
                bench_att_bytes(chunk, CHUNK, BENCH_ATT_COUNT + k);
                ck(cbl_blob_writer_write(w, chunk, CHUNK, &err), "cbl_blob_writer_write", NULL);
            }
            char* digest = NULL;
            ck(cbl_blob_writer_finish(w, &digest, &err), "cbl_blob_writer_finish", NULL);
            ck(cbl_doc_set_attachment(bcoll, "big", NULL, "big.bin", "application/octet-stream", digest, NULL, &err),
               "cbl_doc_set_attachment", "big");
            cbl_free(digest);
            cbl_blob_reader* r = NULL;
            ck(cbl_doc_open_attachment(bcoll, "big", "big.bin", &r, &err), "cbl_doc_open_attachment", "big");
            long long total = 0;
            for (;;) {
                size_t got = 0;
                ck(cbl_blob_reader_read(r, chunk, CHUNK, &got, &err), "cbl_blob_reader_read", "big");
                if (got == 0) break;
                total += (long long)got;
            }
            cbl_blob_reader_close(r);
            long peak = bench_rss_peak_kib() - before;
            printf("info big_attachment %ld %.1f %ld\n", mb, bench_now_ms() - t0, peak);
            if (total != (long long)mb * 1024 * 1024) bench_check("attachments", "large attachment read back %lld bytes", total);
            free(chunk);
            cbl_collection_release(bcoll);
            ck(cbl_db_close(bdb, &err), "cbl_db_close", big_dir);
            if (bench_remove_tree(big_dir) != 0) bench_die("cblite: cannot remove %s", big_dir);
        }
    }

    /* Outside the timings: the count the workload implies. */
    {
        uint64_t count = 0;
        ck(cbl_db_count(db, &count, &err), "cbl_db_count", NULL);
        long want = o.phases[PH_INSERT] ? n - deleted_docs : 0;
        if ((long)count != want) bench_check("count", "%llu documents (expected %ld)", (unsigned long long)count, want);
    }

    /* 9. size: all files of the bundle, while open and after close */
    long long open_bytes = bench_tree_bytes(o.dir);
    cbl_collection_release(coll);
    ck(cbl_db_close(db, &err), "cbl_db_close", NULL);
    bench_print_sizes(bench_tree_bytes(o.dir), open_bytes);
    bench_print_rss(&s);
    if (cbl_instance_count() != 0)
        bench_check("handles", "%lld live handles after close", (long long)cbl_instance_count());
    if (!o.keep && bench_remove_tree(o.dir) != 0) bench_die("cblite: cannot remove %s", o.dir);
    return 0;
}
