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

#endif
