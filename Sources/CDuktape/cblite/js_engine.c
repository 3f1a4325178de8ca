/* cblite_js.h on Duktape: a counting allocator for the memory cap, the executor's timeout
 * hook for the time limit, every entry into the engine a protected call (an uncaught
 * error never reaches Duktape's fatal handler), JSON in through js_json.c and out through
 * Duktape's own encoder. */
#include "duktape.h"
#include "cblite_js.h"
#include "cblite_js_json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cblite_js {
    duk_context *ctx;
    size_t limit, used, peak;
    int refused;            /* an allocation was refused during this call */
    int64_t deadline_ns;    /* CLOCK_MONOTONIC; 0: no call running */
    int timed_out;          /* once past the deadline, stays so until the call returns */
    cblite_js_log_fn log;
    void *log_context;
};

/* Each block carries its size, so that frees and reallocations keep `used` exact. */
typedef union { size_t size; max_align_t align; } block_header;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *js_alloc(void *udata, duk_size_t size) {
    cblite_js *js = udata;
    if (size > js->limit || js->used + size > js->limit) { js->refused = 1; return NULL; }
    block_header *b = malloc(sizeof(block_header) + size);
    if (!b) { js->refused = 1; return NULL; }
    b->size = size;
    js->used += size;
    if (js->used > js->peak) js->peak = js->used;
    return b + 1;
}

static void js_free(void *udata, void *ptr) {
    cblite_js *js = udata;
    if (!ptr) return;
    block_header *b = (block_header *)ptr - 1;
    js->used -= b->size;
    free(b);
}

static void *js_realloc(void *udata, void *ptr, duk_size_t size) {
    cblite_js *js = udata;
    if (!ptr) return js_alloc(udata, size);
    if (size == 0) { js_free(udata, ptr); return NULL; }
    block_header *b = (block_header *)ptr - 1;
    size_t old = b->size;
    if (size > old && (size - old > js->limit || js->used + (size - old) > js->limit)) { js->refused = 1; return NULL; }
    block_header *n = realloc(b, sizeof(block_header) + size);
    if (!n) { js->refused = 1; return NULL; }
    n->size = size;
    js->used = js->used - old + size;
    if (js->used > js->peak) js->peak = js->used;
    return n + 1;
}

/* DUK_USE_EXEC_TIMEOUT_CHECK (generate.sh): true from the deadline on, until the call
 * returns, so that no catch in the script can resume it. */
int cblite_js_timed_out(void *udata) {
    cblite_js *js = udata;
    if (js->timed_out) return 1;
    if (js->deadline_ns != 0 && now_ns() >= js->deadline_ns) js->timed_out = 1;
    return js->timed_out;
}

/* Only reached by an error outside a protected call, which cblite never makes: a bug. */
static void js_fatal(void *udata, const char *msg) {
    cblite_js *js = udata;
    if (js && js->log) {
        static const char prefix[] = "fatal JavaScript engine error: ";
        char text[512];
        size_t n = strlen(msg ? msg : "");
        if (n > sizeof text - sizeof prefix) n = sizeof text - sizeof prefix;
        memcpy(text, prefix, sizeof prefix - 1);
        memcpy(text + sizeof prefix - 1, msg ? msg : "", n);
        js->log(js->log_context, text, sizeof prefix - 1 + n);
    }
    abort();
}

static cblite_js *engine_of(duk_context *ctx) {
    duk_memory_functions f;
    duk_get_memory_functions(ctx, &f);
    return f.udata;
}

static duk_ret_t native_log(duk_context *ctx) {
    cblite_js *js = engine_of(ctx);
    duk_size_t n = 0;
    const char *text = duk_safe_to_lstring(ctx, 0, &n);
    if (js->log) js->log(js->log_context, text, n);
    return 0;
}

static duk_ret_t install_log(duk_context *ctx, void *udata) {
    (void)udata;
    duk_push_c_function(ctx, native_log, 1);
    duk_put_global_string(ctx, "__cbl_log");
    return 0;
}

cblite_js *cblite_js_create(size_t memory_limit, cblite_js_log_fn log, void *log_context) {
    cblite_js *js = calloc(1, sizeof *js);
    if (!js) return NULL;
    js->limit = memory_limit;
    js->log = log;
    js->log_context = log_context;
    js->ctx = duk_create_heap(js_alloc, js_realloc, js_free, js, js_fatal);
    if (!js->ctx) { free(js); return NULL; }
    if (duk_safe_call(js->ctx, install_log, NULL, 0, 1) != DUK_EXEC_SUCCESS) {
        cblite_js_destroy(js);
        return NULL;
    }
    duk_pop(js->ctx);
    return js;
}

void cblite_js_destroy(cblite_js *js) {
    if (!js) return;
    duk_destroy_heap(js->ctx);
    free(js);
}

size_t cblite_js_memory_used(const cblite_js *js) { return js->used; }
size_t cblite_js_memory_peak(const cblite_js *js) { return js->peak; }

void cblite_js_result_free(cblite_js_result *result) {
    free(result->text);
    result->text = NULL;
    result->length = 0;
}

/* The value on top as JSON text in its place ("null" where JSON writes nothing). */
static void to_json(duk_context *ctx) {
    duk_json_encode(ctx, -1);
    if (!duk_is_string(ctx, -1)) { duk_pop(ctx); duk_push_string(ctx, "null"); }
}

/* What a call pushes, inside the protected call: pushing allocates, and an allocation
 * refused outside one would be fatal. */
typedef struct {
    const char *text;       /* the source, or the arguments' JSON */
    size_t length;
    const char *name;       /* the file name, or the function's */
} call_input;

/* -> [json] */
static duk_ret_t eval_unsafe(duk_context *ctx, void *udata) {
    const call_input *in = udata;
    duk_push_lstring(ctx, in->text, in->length);
    duk_push_string(ctx, in->name);
    duk_compile(ctx, 0);
    duk_call(ctx, 0);
    to_json(ctx);
    return 1;
}

/* [] -> [args result] */
static void call_function(duk_context *ctx, const call_input *in) {
    cblite_js_push_json(ctx, in->text, in->length);
    if (!duk_is_array(ctx, 0)) (void)duk_error(ctx, DUK_ERR_TYPE_ERROR, "arguments are not an array");
    if (!duk_get_global_string(ctx, in->name) || !duk_is_callable(ctx, 1))
        (void)duk_error(ctx, DUK_ERR_TYPE_ERROR, "%s is not a function", in->name);
    duk_size_t n = duk_get_length(ctx, 0);
    duk_require_stack(ctx, (duk_idx_t)n + 1);
    for (duk_size_t i = 0; i < n; i++) duk_get_prop_index(ctx, 0, (duk_uarridx_t)i);
    duk_call(ctx, (duk_idx_t)n);     /* [args function a0..an-1] -> [args result] */
}

/* -> [json] */
static duk_ret_t call_unsafe(duk_context *ctx, void *udata) {
    call_function(ctx, udata);
    to_json(ctx);
    return 1;
}

/* A growing text in a Duktape dynamic buffer (freed by the collector, even when an error
 * unwinds the call). */
typedef struct { duk_idx_t at; char *data; size_t length, capacity; } text_out;

static void put(duk_context *ctx, text_out *o, const char *s, size_t n) {
    if (o->length + n > o->capacity) {
        o->capacity = (o->length + n) * 2 + 64;
        o->data = duk_resize_buffer(ctx, o->at, o->capacity);
    }
    memcpy(o->data + o->length, s, n);
    o->length += n;
}

/* The value at `idx` as JSON.stringify writes it ("null" where it writes nothing): null,
 * booleans, integers below 2^53, printable ASCII strings and arrays of these directly;
 * anything else (other numbers, other strings, objects, deep or cyclic arrays) through
 * Duktape's encoder — the common rows without its per-call set-up (callgrind). */
static void put_json(duk_context *ctx, text_out *o, duk_idx_t idx, int depth) {
    char digits[32];
    switch (duk_get_type(ctx, idx)) {
    case DUK_TYPE_NULL: case DUK_TYPE_UNDEFINED: put(ctx, o, "null", 4); return;
    case DUK_TYPE_BOOLEAN: if (duk_get_boolean(ctx, idx)) put(ctx, o, "true", 4); else put(ctx, o, "false", 5); return;
    case DUK_TYPE_NUMBER: {
        double d = duk_get_number(ctx, idx);
        if (d < 9007199254740992.0 && d > -9007199254740992.0 && d == (double)(long long)d) {
            int n = snprintf(digits, sizeof digits, "%lld", (long long)d);   /* -0 writes 0, as JSON does */
            put(ctx, o, digits, (size_t)n);
            return;
        }
        break;
    }
    case DUK_TYPE_STRING: {
        duk_size_t n = 0;
        const char *s = duk_get_lstring(ctx, idx, &n);
        duk_size_t i = 0;
        while (i < n && s[i] >= 0x20 && s[i] < 0x7F && s[i] != '"' && s[i] != '\\') i++;
        if (i < n) break;
        put(ctx, o, "\"", 1);
        put(ctx, o, s, n);
        put(ctx, o, "\"", 1);
        return;
    }
    case DUK_TYPE_OBJECT:
        if (depth < 16 && duk_is_array(ctx, idx) && !duk_has_prop_string(ctx, idx, "toJSON")) {
            duk_idx_t array = duk_normalize_index(ctx, idx);
            duk_size_t n = duk_get_length(ctx, array);
            duk_require_stack(ctx, 2);
            put(ctx, o, "[", 1);
            for (duk_size_t i = 0; i < n; i++) {
                if (i > 0) put(ctx, o, ",", 1);
                duk_get_prop_index(ctx, array, (duk_uarridx_t)i);
                put_json(ctx, o, -1, depth + 1);
                duk_pop(ctx);
            }
            put(ctx, o, "]", 1);
            return;
        }
        break;
    default: break;
    }
    duk_dup(ctx, idx);
    to_json(ctx);
    duk_size_t n = 0;
    const char *s = duk_get_lstring(ctx, -1, &n);
    put(ctx, o, s, n);
    duk_pop(ctx);
}

/* -> [buffer of "key\nvalue\n" per row] */
static duk_ret_t call_rows_unsafe(duk_context *ctx, void *udata) {
    call_function(ctx, udata);
    if (!duk_is_array(ctx, -1)) return duk_error(ctx, DUK_ERR_TYPE_ERROR, "%s did not return rows", ((call_input *)udata)->name);
    duk_idx_t rows = duk_normalize_index(ctx, -1);
    duk_require_stack(ctx, 4);
    text_out o = { 0, NULL, 0, 0 };
    o.data = duk_push_dynamic_buffer(ctx, 0);
    o.at = duk_normalize_index(ctx, -1);
    duk_size_t n = duk_get_length(ctx, rows);
    for (duk_size_t i = 0; i < n; i++) {
        duk_get_prop_index(ctx, rows, (duk_uarridx_t)i);
        if (!duk_is_array(ctx, -1) || duk_get_length(ctx, -1) != 2) return duk_error(ctx, DUK_ERR_TYPE_ERROR, "a row is not [key, value]");
        for (duk_uarridx_t k = 0; k < 2; k++) {
            duk_get_prop_index(ctx, -1, k);
            put_json(ctx, &o, -1, 0);
            put(ctx, &o, "\n", 1);
            duk_pop(ctx);
        }
        duk_pop(ctx);
    }
    duk_resize_buffer(ctx, o.at, o.length);
    return 1;
}

/* [error] -> [error description]: {"message": String(e)} plus "thrown" when udata != NULL. */
static duk_ret_t describe_unsafe(duk_context *ctx, void *udata) {
    duk_idx_t error = duk_normalize_index(ctx, -1);
    duk_push_object(ctx);
    duk_dup(ctx, error);
    duk_safe_to_string(ctx, -1);
    duk_put_prop_string(ctx, -2, "message");
    if (udata && !duk_is_error(ctx, error)) {
        duk_dup(ctx, error);
        duk_put_prop_string(ctx, -2, "thrown");
    }
    duk_json_encode(ctx, -1);
    return 1;
}

static int copy_out(duk_context *ctx, cblite_js_result *result) {
    duk_size_t n = 0;
    const char *s = duk_is_buffer_data(ctx, -1) ? duk_get_buffer_data(ctx, -1, &n) : duk_get_lstring(ctx, -1, &n);
    result->text = malloc(n + 1);
    if (!result->text) { result->length = 0; return 0; }
    memcpy(result->text, s ? s : "", n);
    result->text[n] = 0;
    result->length = n;
    return 1;
}

static void copy_text(cblite_js_result *result, const char *text) {
    size_t n = strlen(text);
    result->text = malloc(n + 1);
    result->length = result->text ? n : 0;
    if (result->text) memcpy(result->text, text, n + 1);
}

/* Runs `body` protected and timed; leaves the stack as it found it. */
static int run(cblite_js *js, duk_safe_call_function body, call_input *in, uint32_t timeout_ms,
               cblite_js_result *result) {
    duk_context *ctx = js->ctx;
    result->text = NULL;
    result->length = 0;
    js->refused = 0;
    js->timed_out = 0;
    js->deadline_ns = timeout_ms ? now_ns() + (int64_t)timeout_ms * 1000000 : 0;
    int status = CBLITE_JS_OK;
    if (duk_safe_call(ctx, body, in, 0, 1) == DUK_EXEC_SUCCESS) {
        if (!copy_out(ctx, result)) status = CBLITE_JS_MEMORY;
    } else {
        status = js->timed_out ? CBLITE_JS_TIMEOUT : js->refused ? CBLITE_JS_MEMORY : CBLITE_JS_THREW;
        int described = duk_safe_call(ctx, describe_unsafe, (void *)1, 1, 1) == DUK_EXEC_SUCCESS;
        if (!described) described = duk_safe_call(ctx, describe_unsafe, NULL, 1, 1) == DUK_EXEC_SUCCESS;
        if (!described || !copy_out(ctx, result))
            copy_text(result, status == CBLITE_JS_TIMEOUT ? "{\"message\":\"RangeError: execution timeout\"}"
                              : status == CBLITE_JS_MEMORY ? "{\"message\":\"RangeError: out of memory\"}"
                              : "{\"message\":\"Error\"}");
    }
    duk_pop(ctx);
    js->deadline_ns = 0;
    js->timed_out = 0;
    /* What the call left behind (garbage, caches) goes now, not into the next call's cap. */
    if (status != CBLITE_JS_OK) duk_gc(ctx, 0);
    return status;
}

int cblite_js_eval(cblite_js *js, const char *source, size_t length, const char *file_name,
                   uint32_t timeout_ms, cblite_js_result *result) {
    call_input in = { source, length, file_name ? file_name : "eval" };
    return run(js, eval_unsafe, &in, timeout_ms, result);
}

int cblite_js_call(cblite_js *js, const char *name, const char *args_json, size_t length,
                   uint32_t timeout_ms, cblite_js_result *result) {
    call_input in = { args_json, length, name };
    return run(js, call_unsafe, &in, timeout_ms, result);
}

int cblite_js_call_rows(cblite_js *js, const char *name, const char *args_json, size_t length,
                        uint32_t timeout_ms, cblite_js_result *result) {
    call_input in = { args_json, length, name };
    return run(js, call_rows_unsafe, &in, timeout_ms, result);
}

long cblite_js_version(void) { return (long) DUK_VERSION; }
