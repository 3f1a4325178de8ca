/* JSON text -> Duktape value (js_json.c); internal to the engine. */
#ifndef CBLITE_JS_JSON_H
#define CBLITE_JS_JSON_H
#include <stddef.h>
#include "duktape.h"

/* Pushes the value `text` holds, as JSON.parse would; throws (a Duktape error) when it is
 * not JSON. Call inside a protected call. */
void cblite_js_push_json(duk_context *ctx, const char *text, size_t length);

#endif
