/* The cblite_stop FTS5 tokenizer: another tokenizer's tokens minus a stop-word list
 * (see ../include/cblite_fts.h). Public SQLite API only; compiled on its own. */
#include <stdlib.h>
#include <string.h>
#include "../include/cblite_fts.h"

typedef struct StopWord { char* text; int len; } StopWord;

typedef struct StopTokenizer {
    fts5_tokenizer parent;
    Fts5Tokenizer* parentTok;
    StopWord* words;       /* sorted by (len, bytes): a binary search per token */
    int count, capacity;
} StopTokenizer;

static int compareWords(const void* a, const void* b) {
    const StopWord* x = a; const StopWord* y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return memcmp(x->text, y->text, (size_t)x->len);
}

static int isStopWord(const StopTokenizer* t, const char* token, int len) {
    StopWord key = { (char*)token, len };
    return t->count > 0 && bsearch(&key, t->words, (size_t)t->count, sizeof(StopWord), compareWords) != NULL;
}

/* Collects the folded form of each stop word (the parent tokenizer's tokens of the list). */
static int collectWord(void* ctx, int flags, const char* token, int len, int start, int end) {
    (void)flags; (void)start; (void)end;
    StopTokenizer* t = ctx;
    if (t->count == t->capacity) {
        int cap = t->capacity ? t->capacity * 2 : 16;
        StopWord* w = sqlite3_realloc(t->words, (int)(cap * sizeof(StopWord)));
        if (!w) return SQLITE_NOMEM;
        t->words = w;
        t->capacity = cap;
    }
    char* copy = sqlite3_malloc(len > 0 ? len : 1);
    if (!copy) return SQLITE_NOMEM;
    memcpy(copy, token, (size_t)len);
    t->words[t->count].text = copy;
    t->words[t->count].len = len;
    t->count++;
    return SQLITE_OK;
}

static void stopDelete(Fts5Tokenizer* p) {
    StopTokenizer* t = (StopTokenizer*)p;
    if (!t) return;
    if (t->parentTok) t->parent.xDelete(t->parentTok);
    for (int i = 0; i < t->count; i++) sqlite3_free(t->words[i].text);
    sqlite3_free(t->words);
    sqlite3_free(t);
}

/* azArg: the stop words, then the wrapped tokenizer's name and arguments (unicode61 when
 * none is named). */
static int stopCreate(void* ctx, const char** azArg, int nArg, Fts5Tokenizer** out) {
    fts5_api* api = ctx;
    *out = NULL;
    if (nArg < 1) return SQLITE_ERROR;
    StopTokenizer* t = sqlite3_malloc(sizeof(StopTokenizer));
    if (!t) return SQLITE_NOMEM;
    memset(t, 0, sizeof(*t));
    const char* parentName = nArg > 1 ? azArg[1] : "unicode61";
    void* parentCtx = NULL;
    int rc = api->xFindTokenizer(api, parentName, &parentCtx, &t->parent);
    if (rc == SQLITE_OK) {
        rc = t->parent.xCreate(parentCtx, nArg > 2 ? &azArg[2] : NULL, nArg > 2 ? nArg - 2 : 0, &t->parentTok);
    }
    if (rc == SQLITE_OK) {
        rc = t->parent.xTokenize(t->parentTok, t, FTS5_TOKENIZE_DOCUMENT, azArg[0], (int)strlen(azArg[0]), collectWord);
    }
    if (rc != SQLITE_OK) { stopDelete((Fts5Tokenizer*)t); return rc; }
    if (t->count > 1) qsort(t->words, (size_t)t->count, sizeof(StopWord), compareWords);
    *out = (Fts5Tokenizer*)t;
    return SQLITE_OK;
}

typedef struct Forward {
    const StopTokenizer* t;
    void* ctx;
    int (*xToken)(void*, int, const char*, int, int, int);
} Forward;

static int forwardToken(void* ctx, int flags, const char* token, int len, int start, int end) {
    Forward* f = ctx;
    if (isStopWord(f->t, token, len)) return SQLITE_OK;
    return f->xToken(f->ctx, flags, token, len, start, end);
}

static int stopTokenize(Fts5Tokenizer* p, void* ctx, int flags, const char* text, int len,
                        int (*xToken)(void*, int, const char*, int, int, int)) {
    StopTokenizer* t = (StopTokenizer*)p;
    Forward f = { t, ctx, xToken };
    return t->parent.xTokenize(t->parentTok, &f, flags, text, len, forwardToken);
}

/* The connection's fts5_api, as FTS5's documentation gets it: SELECT fts5(?1). */
fts5_api* cblite_fts5_api(sqlite3* db) {
    fts5_api* api = NULL;
    sqlite3_stmt* s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &s, NULL) != SQLITE_OK) return NULL;
    sqlite3_bind_pointer(s, 1, (void*)&api, "fts5_api_ptr", NULL);
    sqlite3_step(s);
    sqlite3_finalize(s);
    return api;
}

int cblite_register_fts_tokenizers(sqlite3* db) {
    fts5_api* api = cblite_fts5_api(db);
    if (!api) return SQLITE_ERROR;
    fts5_tokenizer tok = { stopCreate, stopDelete, stopTokenize };
    return api->xCreateTokenizer(api, CBLITE_STOP_TOKENIZER, api, &tok, NULL);
}
