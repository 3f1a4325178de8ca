/* cblite_document_json: a stored document rendered as its JSON with its metadata, in the
 * common case where neither its ID nor its revision ID needs escaping:
 *
 *   {"_id":"ID","_rev":"REV"[,"_deleted":true],MEMBERS}       (MEMBERS: the body's, if any)
 *
 * The one owner of that layout: the engine's DocumentJSON (Swift) renders through these,
 * and a Mango find's page copy (index_rows.c) renders each joined document while it holds
 * its columns — one pass over the bytes instead of a copy of the ID, revision and body,
 * then a check and a second copy in Swift (bench_mango's range find: ~300 instructions a
 * document less). An ID or revision that needs escaping is rendered by DocumentJSON's
 * JSONWriter path instead. Static inline: used from the amalgamation's unit and Swift. */
#ifndef CBLITE_DOCUMENT_JSON_H
#define CBLITE_DOCUMENT_JSON_H
#include <stdint.h>
#include <string.h>

/* Whether `n` bytes need no escape in a JSON string (no '"', '\\', or byte below 0x20):
 * 8 bytes at a time, a byte that is one of those setting its high bit in one of three
 * masks (a borrow can flag a byte after a real hit, never a word without one); the last
 * word overlaps the one before it, and fewer than 8 bytes are padded with 'a'. */
static inline int cblite_json_escape_free(const unsigned char* p, int64_t n) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
#define CBLITE_JSON_ESCAPE_HIT(x) \
    ((((x) - ones * 0x20) & ~(x)) | ((((x) ^ (ones * 0x22)) - ones) & ~((x) ^ (ones * 0x22))) \
     | ((((x) ^ (ones * 0x5C)) - ones) & ~((x) ^ (ones * 0x5C))))
    uint64_t x;
    if (n < 8) {
        x = ones * 0x61;
        if (n > 0) memcpy(&x, p, (size_t)n);
        return (CBLITE_JSON_ESCAPE_HIT(x) & highs) == 0;
    }
    for (int64_t i = 0; i + 8 <= n; i += 8) {
        memcpy(&x, p + i, 8);
        if (CBLITE_JSON_ESCAPE_HIT(x) & highs) return 0;
    }
    memcpy(&x, p + n - 8, 8);
    return (CBLITE_JSON_ESCAPE_HIT(x) & highs) == 0;
#undef CBLITE_JSON_ESCAPE_HIT
}

#define CBLITE_DOC_HEAD "{\"_id\":\""
#define CBLITE_DOC_MIDDLE "\",\"_rev\":\""
#define CBLITE_DOC_DELETED ",\"_deleted\":true"

/* The rendering's length, or -1 when the ID or revision needs escaping. `body`: the
 * stored body, an object's JSON ("{}" or "{...}"); body_len < 0 for none. */
static inline int64_t cblite_plain_document_length(const unsigned char* id, int64_t id_len, const unsigned char* rev,
                                                   int64_t rev_len, int deleted, int64_t body_len) {
    if (!cblite_json_escape_free(id, id_len) || !cblite_json_escape_free(rev, rev_len)) return -1;
    return (int64_t)(sizeof CBLITE_DOC_HEAD - 1) + id_len + (int64_t)(sizeof CBLITE_DOC_MIDDLE - 1) + rev_len + 1
         + (deleted ? (int64_t)(sizeof CBLITE_DOC_DELETED - 1) : 0) + (body_len > 2 ? body_len : 1);
}

/* Writes the rendering (cblite_plain_document_length bytes, which the caller checked is
 * not -1) at `out`; returns the end. */
static inline unsigned char* cblite_write_plain_document(unsigned char* out, const unsigned char* id, int64_t id_len,
                                                         const unsigned char* rev, int64_t rev_len, int deleted,
                                                         const unsigned char* body, int64_t body_len) {
    memcpy(out, CBLITE_DOC_HEAD, sizeof CBLITE_DOC_HEAD - 1);
    out += sizeof CBLITE_DOC_HEAD - 1;
    if (id_len > 0) memcpy(out, id, (size_t)id_len);
    out += id_len;
    memcpy(out, CBLITE_DOC_MIDDLE, sizeof CBLITE_DOC_MIDDLE - 1);
    out += sizeof CBLITE_DOC_MIDDLE - 1;
    if (rev_len > 0) memcpy(out, rev, (size_t)rev_len);
    out += rev_len;
    *out++ = '"';
    if (deleted) {
        memcpy(out, CBLITE_DOC_DELETED, sizeof CBLITE_DOC_DELETED - 1);
        out += sizeof CBLITE_DOC_DELETED - 1;
    }
    if (body_len > 2) {
        *out++ = ',';
        memcpy(out, body + 1, (size_t)(body_len - 1));      /* the members and the closing brace */
        out += body_len - 1;
    } else {
        *out++ = '}';
    }
    return out;
}
#endif
