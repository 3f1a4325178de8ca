/*
 * bench_fts.c — the full-text phase of the cblite benchmark (issue 30): on a real text
 * corpus, the fortunes of Debian's `fortunes` package (/usr/share/games/fortunes, one
 * document {"category", "text"} per fortune, the corpus repeated --repeat times), in the
 * same run,
 *   cblite:  a full-text index on "text" built (by the first search), then searches of
 *            terms, a phrase, a prefix, AND / OR / NOT and NEAR, each the top 25 hits
 *            with their score and a snippet, run --reps times;
 *   SQLite:  the same documents as JSON text in a table; an FTS5 table over
 *            json_extract(body, '$.text') with the same tokenizer built from it; the same
 *            queries as FTS5 MATCH ... ORDER BY bm25 LIMIT 25 with snippet().
 * Medians of --runs; prints one line per step, the ratios and the cblite side's peak RSS.
 * Never fails on numbers.
 */
#define _POSIX_C_SOURCE 200809L

#include "cblite.h"
#include "sqlite3.h"
#include "bench_common.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* cblite's query and the same as FTS5 writes it. */
static const char* const QUERIES[][2] = {
    {"love", "love"},
    {"computer science", "computer science"},
    {"\"the truth\"", "\"the truth\""},
    {"comput*", "comput*"},
    {"life AND death", "life AND death"},
    {"war OR peace", "war OR peace"},
    {"money NOT happiness", "money NOT happiness"},
    {"woman NEAR man", "NEAR(woman man, 10)"},
};
enum { NQ = sizeof QUERIES / sizeof QUERIES[0], S_BUILD = NQ, S_COUNT };

typedef struct { char** text; const char** category; long count; } Corpus;

/* Reads every fortune file (not the .dat indexes, links or subdirectories). */
static void load_corpus(const char* dir, Corpus* c) {
    DIR* d = opendir(dir);
    if (!d) bench_die("no corpus in %s: install Debian's fortunes package (make bench-fts does, as root)", dir);
    long cap = 4096;
    c->text = malloc(sizeof(char*) * (size_t)cap);
    c->category = malloc(sizeof(char*) * (size_t)cap);
    c->count = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || (len > 4 && (!strcmp(e->d_name + len - 4, ".dat") || !strcmp(e->d_name + len - 3, ".u8")))) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        FILE* f = fopen(path, "r");
        if (!f) continue;
        char* buf = malloc((size_t)st.st_size + 1);
        size_t n = fread(buf, 1, (size_t)st.st_size, f);
        fclose(f);
        buf[n] = 0;
        char* category = strdup(e->d_name);
        char* p = buf;
        while (*p) {                                    /* entries end at a line "%" */
            char* end = strstr(p, "\n%\n");
            if (end) *end = 0;
            if (strlen(p) > 1) {
                if (c->count == cap) {
                    cap *= 2;
                    c->text = realloc(c->text, sizeof(char*) * (size_t)cap);
                    c->category = realloc(c->category, sizeof(char*) * (size_t)cap);
                }
                c->text[c->count] = strdup(p);
                c->category[c->count++] = category;
            }
            if (!end) break;
            p = end + 3;
        }
        free(buf);
    }
    closedir(d);
    if (c->count == 0) bench_die("no fortunes found in %s", dir);
}

/* A fortune as a JSON document (control characters escaped). */
static size_t doc_json(char* out, size_t cap, const char* category, const char* text) {
    size_t o = (size_t)snprintf(out, cap, "{\"category\":\"%s\",\"text\":\"", category);
    for (const unsigned char* s = (const unsigned char*)text; *s && o + 8 < cap; s++) {
        if (*s == '"' || *s == '\\') { out[o++] = '\\'; out[o++] = (char)*s; }
        else if (*s == '\n') { out[o++] = '\\'; out[o++] = 'n'; }
        else if (*s == '\t') { out[o++] = '\\'; out[o++] = 't'; }
        else if (*s < 0x20) o += (size_t)snprintf(out + o, cap - o, "\\u%04x", *s);
        else out[o++] = (char)*s;
    }
    o += (size_t)snprintf(out + o, cap - o, "\"}");
    return o;
}

static void ok(cbl_status st, const cbl_error* e, const char* what) {
    if (st != CBL_OK) bench_die("%s: %d %s", what, (int)st, e->message);
}

/* Hits of one search, every row read (score, snippet). */
static long search(cbl_collection* c, const char* query) {
    /* the queries hold quotes: escaped for the JSON string */
    char req[700], esc[600];
    size_t o = 0;
    for (const char* s = query; *s && o + 3 < sizeof esc; s++) { if (*s == '"') esc[o++] = '\\'; esc[o++] = *s; }
    esc[o] = 0;
    snprintf(req, sizeof req, "{\"query\":\"%s\",\"limit\":25}", esc);
    cbl_error e;
    cbl_query_result* r = NULL;
    ok(cbl_collection_search(c, "f", req, &r, &e), &e, "search");
    cbl_query_row rows[32];
    size_t n = 0;
    long total = 0;
    size_t bytes = 0;
    while (cbl_query_result_next_rows(r, rows, 32, &n, &e) == CBL_OK && n > 0) {
        for (size_t i = 0; i < n; i++) bytes += strlen(rows[i].value_json) + strlen(rows[i].key_json);
        total += (long)n;
    }
    cbl_query_result_release(r);
    return bytes ? total : total;
}

static void cblite_run(const char* dir, const Corpus* corpus, int repeat, int reps, double ms[S_COUNT], long found[S_COUNT],
                       long* rss_kib) {
    cbl_error e;
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    bench_remove_tree(dir);
    bench_mkdirs(dir);
    ok(cbl_db_open("fts", dir, NULL, &db, &e), &e, "open");
    ok(cbl_db_default_collection(db, &c, &e), &e, "collection");
    static char body[1 << 20];
    for (int r = 0; r < repeat; r++) {
        ok(cbl_db_begin(db, &e), &e, "begin");
        for (long i = 0; i < corpus->count; i++) {
            char id[32];
            snprintf(id, sizeof id, "f%d-%06ld", r, i);
            doc_json(body, sizeof body, corpus->category[i], corpus->text[i]);
            ok(cbl_doc_put(c, id, body, NULL, 0, NULL, NULL, &e), &e, "put");
        }
        ok(cbl_db_commit(db, &e), &e, "commit");
    }
    char* out = NULL;
    ok(cbl_collection_create_text_index(c, "{\"name\":\"f\",\"fields\":[\"text\"]}", &out, &e), &e, "index");
    cbl_free(out);
    bench_rss_reset_peak();
    long rss0 = bench_rss_kib();
    double t = bench_now_ms();
    found[S_BUILD] = search(c, "zzzyzzyq");                 /* builds the index */
    ms[S_BUILD] = bench_now_ms() - t;
    for (int q = 0; q < NQ; q++) {
        t = bench_now_ms();
        for (int k = 0; k < reps; k++) found[q] = search(c, QUERIES[q][0]);
        ms[q] = bench_now_ms() - t;
    }
    *rss_kib = bench_rss_peak_kib() - rss0;
    cbl_collection_release(c);
    ok(cbl_db_close(db, &e), &e, "close");
}

static void sq(sqlite3* db, const char* sql) {
    char* err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) bench_die("sqlite: %s: %s", sql, err);
}

static long sql_search(sqlite3_stmt* st, const char* match) {
    sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
    long total = 0;
    size_t bytes = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        bytes += (size_t)sqlite3_column_bytes(st, 1) + (size_t)sqlite3_column_bytes(st, 3);
        total++;
    }
    sqlite3_reset(st);
    return bytes ? total : total;
}

static void sqlite_run(const char* dir, const Corpus* corpus, int repeat, int reps, double ms[S_COUNT], long found[S_COUNT]) {
    char path[600];
    bench_remove_tree(dir);
    bench_mkdirs(dir);
    snprintf(path, sizeof path, "%s/raw.sqlite", dir);
    sqlite3* db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK) bench_die("sqlite open");
    sq(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
           "CREATE TABLE docs(seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, body TEXT NOT NULL)");
    sqlite3_stmt* ins = NULL;
    sqlite3_prepare_v2(db, "INSERT INTO docs(id, body) VALUES (?, ?)", -1, &ins, NULL);
    static char body[1 << 20];
    for (int r = 0; r < repeat; r++) {
        sq(db, "BEGIN");
        for (long i = 0; i < corpus->count; i++) {
            char id[32];
            snprintf(id, sizeof id, "f%d-%06ld", r, i);
            size_t len = doc_json(body, sizeof body, corpus->category[i], corpus->text[i]);
            sqlite3_bind_text(ins, 1, id, -1, SQLITE_STATIC);
            sqlite3_bind_text(ins, 2, body, (int)len, SQLITE_STATIC);
            if (sqlite3_step(ins) != SQLITE_DONE) bench_die("sqlite insert");
            sqlite3_reset(ins);
        }
        sq(db, "COMMIT");
    }
    sqlite3_finalize(ins);
    double t = bench_now_ms();
    sq(db, "BEGIN;"
           "CREATE VIRTUAL TABLE fts USING fts5(id UNINDEXED, text, tokenize='unicode61 remove_diacritics 2');"
           "INSERT INTO fts(rowid, id, text) SELECT seq, id, json_extract(body, '$.text') FROM docs;"
           "COMMIT");
    ms[S_BUILD] = bench_now_ms() - t;
    found[S_BUILD] = 0;
    sqlite3_stmt* st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT rowid, id, -bm25(fts) AS score, snippet(fts, 1, '<b>', '</b>', '…', 16) FROM fts "
                               "WHERE fts MATCH ?1 ORDER BY score DESC, rowid LIMIT 25", -1, &st, NULL) != SQLITE_OK)
        bench_die("sqlite: %s", sqlite3_errmsg(db));
    for (int q = 0; q < NQ; q++) {
        t = bench_now_ms();
        for (int k = 0; k < reps; k++) found[q] = sql_search(st, QUERIES[q][1]);
        ms[q] = bench_now_ms() - t;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

int main(int argc, char** argv) {
    int runs = 3, repeat = 4, reps = 50;
    const char* dir = "build/bench/fts-data";
    const char* corpus_dir = "/usr/share/games/fortunes";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "--corpus")) corpus_dir = argv[i + 1];
    }
    if (runs < 1 || runs > 50 || repeat < 1 || reps < 1)
        bench_die("usage: bench_fts [--runs R] [--repeat K] [--reps N] [--dir DIR] [--corpus DIR]");
    Corpus corpus;
    load_corpus(corpus_dir, &corpus);
    double cb[50][S_COUNT], sl[50][S_COUNT], rss[50];
    long fc[S_COUNT], fs[S_COUNT];
    char d1[512], d2[512];
    snprintf(d1, sizeof d1, "%s/cblite", dir);
    snprintf(d2, sizeof d2, "%s/sqlite", dir);
    for (int r = 0; r < runs; r++) {
        long kib = 0;
        cblite_run(d1, &corpus, repeat, reps, cb[r], fc, &kib);
        rss[r] = (double)kib;
        sqlite_run(d2, &corpus, repeat, reps, sl[r], fs);
    }
    printf("fts: %ld fortunes x %d = %ld documents (%s), %d searches of each query (top 25, snippets), medians of %d runs (ms)\n",
           corpus.count, repeat, corpus.count * repeat, corpus_dir, reps, runs);
    printf("  %-22s %10s %10s %8s %6s\n", "step", "cblite", "fts5", "ratio", "hits");
    static const int order[S_COUNT] = {S_BUILD, 0, 1, 2, 3, 4, 5, 6, 7};
    _Static_assert(NQ == 8, "order lists every query");
    for (int i = 0; i < S_COUNT; i++) {
        int s = order[i];
        double a[50], b[50];
        for (int r = 0; r < runs; r++) { a[r] = cb[r][s]; b[r] = sl[r][s]; }
        double ma = bench_median(a, runs), mb = bench_median(b, runs);
        if (s != S_BUILD && fc[s] != fs[s]) bench_check("fts", "%s: cblite found %ld, fts5 %ld", QUERIES[s][0], fc[s], fs[s]);
        printf("  %-22s %10.1f %10.1f %7.2fx %6ld\n", s == S_BUILD ? "index build" : QUERIES[s][0], ma, mb,
               mb > 0 ? ma / mb : 0.0, s == S_BUILD ? corpus.count * repeat : fc[s]);
    }
    printf("  cblite peak RSS above the start of the build: %.0f KiB\n", bench_median(rss, runs));
    bench_remove_tree(dir);
    return 0;
}
