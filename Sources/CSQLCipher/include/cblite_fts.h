/* cblite's FTS5 tokenizer with stop words. FTS5 has no stop-word list of its own; this
 * tokenizer wraps another one (unicode61 by default) and drops the tokens that are in
 * its list, the way FTS5's own porter tokenizer wraps its parent:
 *
 *   tokenize = "porter cblite_stop 'the a of' unicode61 remove_diacritics 2"
 *
 * Its first argument is the stop words, separated by spaces; the rest name the wrapped
 * tokenizer and its arguments. The words go through the wrapped tokenizer when the
 * tokenizer is created, so they are folded exactly as the text is (case, diacritics).
 * Placed under porter, it sees words before they are stemmed. Public SQLite API only. */
#ifndef CBLITE_FTS_H
#define CBLITE_FTS_H
#include "sqlite3.h"

#define CBLITE_STOP_TOKENIZER "cblite_stop"

/* Registers the tokenizer on a connection (each connection has its own FTS5 API object).
 * SQLITE_OK, or SQLite's error when FTS5 is missing or the registration failed. */
int cblite_register_fts_tokenizers(sqlite3* db);

/* The connection's fts5_api (NULL when FTS5 is missing). */
fts5_api* cblite_fts5_api(sqlite3* db);

/* cblite_matches(table): an FTS5 auxiliary function giving where the current row's text
 * (the table's first column) matched the query, as FTS4's offsets() did: "term start
 * length" triples separated by spaces, one per matched token in text order. start and
 * length are UTF-8 byte offsets into the text; term numbers the query's words from 0 in
 * the order they appear in the query, a word repeated keeping its first number (words are
 * the query's tokens after the table's tokenizer: folded, stemmed, stop words gone). A
 * phrase's match gives one triple per token. "" when nothing matched in that column. */
#define CBLITE_MATCHES_FUNCTION "cblite_matches"

/* Registers cblite_matches on a connection. SQLITE_OK, or SQLite's error. */
int cblite_register_fts_functions(sqlite3* db);

#endif
