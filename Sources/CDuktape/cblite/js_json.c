/* JSON text -> a Duktape value on the stack, as JSON.parse gives it, for the JSON cblite
 * hands a call (arguments holding stored documents). Not Duktape's decoder: it interns
 * each number's text and parses it with arbitrary-precision arithmetic (callgrind on a
 * design-document view build: half of every map call); here numbers go through strtod
 * (integers of up to 15 digits directly), strings without escapes are pushed as they are.
 * Same results, except that numbers are correctly rounded (Duktape's parser can be a unit
 * off in the last place: 9007199254740993), as the engine's native maps read them:
 * own properties defined (a "__proto__" member is data, not the prototype),
 * the last of duplicate members wins, each \uXXXX one code unit (surrogates unpaired, as
 * Duktape's decoder keeps them), nesting limited as Duktape's (1000). Runs inside a
 * protected call: an error (invalid text, memory) is thrown as a Duktape error. */
#define _GNU_SOURCE
#include "duktape.h"
#include "cblite_js_json.h"
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 1000

typedef struct {
    const char *p, *end, *start;
} json_in;

static duk_ret_t fail(duk_context *ctx, const json_in *in) {
    return duk_error(ctx, DUK_ERR_SYNTAX_ERROR, "invalid JSON at offset %ld", (long)(in->p - in->start));
}

static void skip_space(json_in *in) {
    while (in->p < in->end && (*in->p == ' ' || *in->p == '\t' || *in->p == '\n' || *in->p == '\r')) in->p++;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* The string at in->p (its opening quote). */
static void push_string(duk_context *ctx, json_in *in) {
    const char *s = ++in->p, *q = s;
    while (q < in->end && *q != '"' && *q != '\\') q++;
    if (q < in->end && *q == '"') {
        duk_push_lstring(ctx, s, (duk_size_t)(q - s));
        in->p = q + 1;
        return;
    }
    const char *close = q;                    /* escapes: the decoded text is never longer */
    while (close < in->end && *close != '"') close += *close == '\\' ? 2 : 1;
    if (close >= in->end) fail(ctx, in);
    char *buf = duk_push_fixed_buffer(ctx, (duk_size_t)(close - s));
    size_t n = (size_t)(q - s);
    memcpy(buf, s, n);
    const char *p = q;
    while (p < close) {
        if (*p != '\\') { buf[n++] = *p++; continue; }
        char c = p[1];
        p += 2;
        switch (c) {
        case '"': case '\\': case '/': buf[n++] = c; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (close - p < 4 || !hex4(p, &cp)) { in->p = p; fail(ctx, in); }
            p += 4;
            if (cp < 0x80) buf[n++] = (char)cp;
            else if (cp < 0x800) { buf[n++] = (char)(0xC0 | cp >> 6); buf[n++] = (char)(0x80 | (cp & 0x3F)); }
            else {
                buf[n++] = (char)(0xE0 | cp >> 12);
                buf[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                buf[n++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: in->p = p - 1; fail(ctx, in);
        }
    }
    duk_push_lstring(ctx, buf, (duk_size_t)n);
    duk_remove(ctx, -2);
    in->p = close + 1;
}

static void push_number(duk_context *ctx, json_in *in) {
    const char *s = in->p, *p = s;
    int negative = p < in->end && *p == '-';
    if (negative) p++;
    const char *digits = p;
    long long whole = 0;
    while (p < in->end && *p >= '0' && *p <= '9') whole = whole * 10 + (*p++ - '0');
    size_t count = (size_t)(p - digits);
    if (count == 0 || (count > 1 && *digits == '0')) fail(ctx, in);
    if (count <= 15 && !(p < in->end && (*p == '.' || *p == 'e' || *p == 'E'))) {
        in->p = p;
        duk_push_number(ctx, negative ? (whole == 0 ? -0.0 : -(double)whole) : (double)whole);
        return;
    }
    while (p < in->end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-')) p++;
    char text[64];
    size_t len = (size_t)(p - s);
    if (len >= sizeof text) {                  /* a long literal: through the engine's own */
        duk_push_lstring(ctx, s, len);
        duk_to_number(ctx, -1);
        in->p = p;
        return;
    }
    memcpy(text, s, len);
    text[len] = 0;
    static locale_t c_locale;                  /* strtod in "C", whatever the host set */
    if (!c_locale) c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    char *stop = NULL;
    double v = c_locale ? strtod_l(text, &stop, c_locale) : strtod(text, &stop);
    if (stop != text + len) fail(ctx, in);
    in->p = p;
    duk_push_number(ctx, v);
}

static void push_value(duk_context *ctx, json_in *in, int depth);

static void push_container(duk_context *ctx, json_in *in, int depth, int object) {
    if (depth >= JSON_MAX_DEPTH) duk_error(ctx, DUK_ERR_RANGE_ERROR, "JSON nesting too deep");
    duk_require_stack(ctx, 3);
    duk_idx_t at = object ? duk_push_object(ctx) : duk_push_array(ctx);
    duk_uarridx_t index = 0;
    in->p++;
    skip_space(in);
    if (in->p < in->end && *in->p == (object ? '}' : ']')) { in->p++; return; }
    for (;;) {
        if (object) {
            skip_space(in);
            if (in->p >= in->end || *in->p != '"') fail(ctx, in);
            push_string(ctx, in);
            skip_space(in);
            if (in->p >= in->end || *in->p != ':') fail(ctx, in);
            in->p++;
            push_value(ctx, in, depth + 1);
            duk_def_prop(ctx, at, DUK_DEFPROP_HAVE_VALUE | DUK_DEFPROP_SET_WRITABLE | DUK_DEFPROP_SET_ENUMERABLE |
                                  DUK_DEFPROP_SET_CONFIGURABLE);
        } else {
            push_value(ctx, in, depth + 1);
            duk_put_prop_index(ctx, at, index++);
        }
        skip_space(in);
        if (in->p < in->end && *in->p == ',') { in->p++; continue; }
        if (in->p < in->end && *in->p == (object ? '}' : ']')) { in->p++; return; }
        fail(ctx, in);
    }
}

static int literal(json_in *in, const char *word, size_t n) {
    if ((size_t)(in->end - in->p) < n || memcmp(in->p, word, n) != 0) return 0;
    in->p += n;
    return 1;
}

static void push_value(duk_context *ctx, json_in *in, int depth) {
    skip_space(in);
    if (in->p >= in->end) fail(ctx, in);
    switch (*in->p) {
    case '{': push_container(ctx, in, depth, 1); return;
    case '[': push_container(ctx, in, depth, 0); return;
    case '"': push_string(ctx, in); return;
    case 't': if (literal(in, "true", 4)) { duk_push_true(ctx); return; } break;
    case 'f': if (literal(in, "false", 5)) { duk_push_false(ctx); return; } break;
    case 'n': if (literal(in, "null", 4)) { duk_push_null(ctx); return; } break;
    default:
        if (*in->p == '-' || (*in->p >= '0' && *in->p <= '9')) { push_number(ctx, in); return; }
    }
    fail(ctx, in);
}

void cblite_js_push_json(duk_context *ctx, const char *text, size_t length) {
    json_in in = { text, text + length, text };
    push_value(ctx, &in, 0);
    skip_space(&in);
    if (in.p != in.end) fail(ctx, &in);
}
