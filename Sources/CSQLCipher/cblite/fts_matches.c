/* The cblite_matches FTS5 auxiliary function: where a row's text matched the query (see
 * ../include/cblite_fts.h). FTS5 has no offsets() as FTS4 had; this one gives what
 * Couchbase Lite 1.x's full-text rows read from it. Public SQLite API only; compiled on
 * its own. */
#include <stdlib.h>
#include <string.h>
#include "../include/cblite_fts.h"

/* One token of the text a match covers: its position among the text's tokens, the
 * query word it matched, and its byte range (filled by the tokenizer walk). */
typedef struct Hit { int pos; int term; int start; int end; } Hit;

static int compareHits(const void* a, const void* b) {
    const Hit* x = a; const Hit* y = b;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    return x->term < y->term ? -1 : x->term > y->term;
}

/* Walks the text's tokens, giving the hits (sorted by position) their byte ranges. */
typedef struct Walk { Hit* hits; int count; int next; int pos; } Walk;

static int onToken(void* ctx, int flags, const char* token, int len, int start, int end) {
    (void)token; (void)len;
    Walk* w = ctx;
    if (flags & FTS5_TOKEN_COLOCATED) return SQLITE_OK;     /* a synonym: no position of its own */
    int pos = w->pos++;
    while (w->next < w->count && w->hits[w->next].pos == pos) {
        w->hits[w->next].start = start;
        w->hits[w->next].end = end;
        w->next++;
    }
    return w->next < w->count ? SQLITE_OK : SQLITE_DONE;   /* the rest of the text is not needed */
}

static void matchesFunction(const Fts5ExtensionApi* api, Fts5Context* fts, sqlite3_context* ctx,
                            int argc, sqlite3_value** argv) {
    (void)argc; (void)argv;
    if (api->iVersion < 3) { sqlite3_result_error(ctx, "cblite_matches needs FTS5 API version 3", -1); return; }
    int rc = SQLITE_OK;
    int phrases = api->xPhraseCount(fts);
    int* firstToken = sqlite3_malloc64((sqlite3_uint64)(phrases + 1) * sizeof(int));
    if (!firstToken) { sqlite3_result_error_nomem(ctx); return; }
    int tokens = 0, longest = 0;
    for (int p = 0; p < phrases; p++) {
        firstToken[p] = tokens;
        int n = api->xPhraseSize(fts, p);
        tokens += n;
        if (n > longest) longest = n;
    }
    firstToken[phrases] = tokens;
    /* The query's words, each numbered once (a repeated word keeps its first number). */
    int* termOf = sqlite3_malloc64((sqlite3_uint64)(tokens + 1) * sizeof(int));
    const char** words = sqlite3_malloc64((sqlite3_uint64)(tokens + 1) * sizeof(char*));
    int* wordLengths = sqlite3_malloc64((sqlite3_uint64)(tokens + 1) * sizeof(int));
    int wordCount = 0;
    Hit* hits = NULL;
    int hitCount = 0;
    if (!termOf || !words || !wordLengths) rc = SQLITE_NOMEM;
    for (int p = 0; rc == SQLITE_OK && p < phrases; p++) {
        for (int t = 0; rc == SQLITE_OK && t < firstToken[p + 1] - firstToken[p]; t++) {
            const char* tok = NULL; int n = 0;
            rc = api->xQueryToken(fts, p, t, &tok, &n);
            if (rc != SQLITE_OK) break;
            int w = 0;
            while (w < wordCount && !(wordLengths[w] == n && memcmp(words[w], tok, (size_t)n) == 0)) w++;
            if (w == wordCount) { words[w] = tok; wordLengths[w] = n; wordCount++; }
            termOf[firstToken[p] + t] = w;
        }
    }
    int instances = 0;
    if (rc == SQLITE_OK) rc = api->xInstCount(fts, &instances);
    if (rc == SQLITE_OK && instances > 0 && longest > 0) {
        hits = sqlite3_malloc64((sqlite3_uint64)instances * (sqlite3_uint64)longest * sizeof(Hit));
        if (!hits) rc = SQLITE_NOMEM;
    }
    for (int i = 0; rc == SQLITE_OK && i < instances; i++) {
        int phrase = 0, column = 0, offset = 0;
        rc = api->xInst(fts, i, &phrase, &column, &offset);
        if (rc != SQLITE_OK || column != 0) continue;
        for (int t = 0; t < firstToken[phrase + 1] - firstToken[phrase]; t++) {
            hits[hitCount++] = (Hit){ offset + t, termOf[firstToken[phrase] + t], -1, -1 };
        }
    }
    if (rc == SQLITE_OK && hitCount > 0) {
        qsort(hits, (size_t)hitCount, sizeof(Hit), compareHits);
        const char* text = NULL; int length = 0;
        rc = api->xColumnText(fts, 0, &text, &length);
        if (rc == SQLITE_OK && text) {
            Walk walk = { hits, hitCount, 0, 0 };
            rc = api->xTokenize(fts, text, length, &walk, onToken);
            if (rc == SQLITE_DONE) rc = SQLITE_OK;
        }
    }
    if (rc == SQLITE_OK) {
        /* "term start length" per matched token, in text order; one per token and word. */
        sqlite3_str* out = sqlite3_str_new(NULL);
        for (int i = 0; i < hitCount; i++) {
            if (hits[i].start < 0) continue;
            if (i > 0 && hits[i].pos == hits[i - 1].pos && hits[i].term == hits[i - 1].term) continue;
            sqlite3_str_appendf(out, sqlite3_str_length(out) ? " %d %d %d" : "%d %d %d",
                                hits[i].term, hits[i].start, hits[i].end - hits[i].start);
        }
        rc = sqlite3_str_errcode(out);
        int n = sqlite3_str_length(out);
        char* s = sqlite3_str_finish(out);
        if (rc == SQLITE_OK) sqlite3_result_text(ctx, s ? s : "", s ? n : 0, s ? sqlite3_free : SQLITE_STATIC);
        else sqlite3_free(s);
    }
    if (rc != SQLITE_OK) sqlite3_result_error_code(ctx, rc);
    sqlite3_free(hits);
    sqlite3_free(wordLengths);
    sqlite3_free((void*)words);
    sqlite3_free(termOf);
    sqlite3_free(firstToken);
}

int cblite_register_fts_functions(sqlite3* db) {
    fts5_api* api = cblite_fts5_api(db);
    if (!api) return SQLITE_ERROR;
    return api->xCreateFunction(api, CBLITE_MATCHES_FUNCTION, NULL, matchesFunction, NULL);
}
