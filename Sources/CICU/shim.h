#ifndef CBLITE_CICU_SHIM_H
#define CBLITE_CICU_SHIM_H
/* The few ICU collator functions cblite uses (libicu's ucol API, linked dynamically).
 *
 * ICU's own headers are deliberately not included: Swift's Foundation carries its own
 * copy of ICU's types (_FoundationICU), and a module that re-exports the system's
 * definitions conflicts with it wherever both are imported (the test target). Only
 * <unicode/uvernum.h> (macros, no types) is used, to get the versioned entry-point names
 * (ucol_open -> ucol_open_72) right for whatever ICU the system has. The prototypes below
 * match ICU's C API with its enums as int and UCollator opaque. */
#include <stdint.h>
#include <unicode/uvernum.h>

typedef struct cblite_UCollator cblite_UCollator;

cblite_UCollator* U_ICU_ENTRY_POINT_RENAME(ucol_open)(const char* locale, int* status);
void U_ICU_ENTRY_POINT_RENAME(ucol_close)(cblite_UCollator* coll);
void U_ICU_ENTRY_POINT_RENAME(ucol_setStrength)(cblite_UCollator* coll, int strength);
int U_ICU_ENTRY_POINT_RENAME(ucol_strcollUTF8)(const cblite_UCollator* coll, const char* source,
                                               int32_t sourceLength, const char* target,
                                               int32_t targetLength, int* status);
int32_t U_ICU_ENTRY_POINT_RENAME(ucol_getSortKey)(const cblite_UCollator* coll, const uint16_t* source,
                                                  int32_t sourceLength, uint8_t* result, int32_t resultLength);
void U_ICU_ENTRY_POINT_RENAME(ucol_getVersion)(const cblite_UCollator* coll, uint8_t info[4]);
void U_ICU_ENTRY_POINT_RENAME(ucol_getUCAVersion)(const cblite_UCollator* coll, uint8_t info[4]);

/* The root collator; strength 1 = primary (UCOL_PRIMARY = 0), otherwise the default
 * tertiary strength. *status > 0 is an ICU error. */
static inline cblite_UCollator* cblite_ucol_open_root_strength(int strength, int* status) {
    *status = 0;
    cblite_UCollator* c = U_ICU_ENTRY_POINT_RENAME(ucol_open)("", status);
    if (*status <= 0 && c && strength == 1) U_ICU_ENTRY_POINT_RENAME(ucol_setStrength)(c, 0);
    return c;
}

static inline cblite_UCollator* cblite_ucol_open_root(int* status) {
    return cblite_ucol_open_root_strength(3, status);
}

/* -1, 0, 1 like strcmp (UCOL_LESS = -1, UCOL_EQUAL = 0, UCOL_GREATER = 1). */
static inline int cblite_ucol_strcoll_utf8(const cblite_UCollator* coll, const char* a, int32_t alen,
                                           const char* b, int32_t blen) {
    int st = 0;
    int r = U_ICU_ENTRY_POINT_RENAME(ucol_strcollUTF8)(coll, a, alen, b, blen, &st);
    if (st > 0) return 0;
    return r < 0 ? -1 : (r > 0 ? 1 : 0);
}

/* The sort key of a UTF-16 string: bytes whose memcmp order is the collator's order,
 * ending with one 0 byte (the only 0 byte in it). Returns the key's length, including
 * that byte; when it exceeds `capacity`, nothing useful is written and the caller
 * retries with a buffer of the returned length. */
static inline int32_t cblite_ucol_sort_key(const cblite_UCollator* coll, const uint16_t* s, int32_t n,
                                           uint8_t* out, int32_t capacity) {
    return U_ICU_ENTRY_POINT_RENAME(ucol_getSortKey)(coll, s, n, out, capacity);
}

/* The collator's version (changes when ICU's collation data does, which changes sort
 * keys): four bytes. */
static inline void cblite_ucol_version(const cblite_UCollator* coll, uint8_t out[4]) {
    U_ICU_ENTRY_POINT_RENAME(ucol_getVersion)(coll, out);
}

/* The Unicode Collation Algorithm version the collator implements: four bytes. */
static inline void cblite_uca_version(const cblite_UCollator* coll, uint8_t out[4]) {
    U_ICU_ENTRY_POINT_RENAME(ucol_getUCAVersion)(coll, out);
}

static inline void cblite_ucol_close(cblite_UCollator* coll) { U_ICU_ENTRY_POINT_RENAME(ucol_close)(coll); }

static inline const char* cblite_icu_version(void) { return U_ICU_VERSION; }
/* ICU's regular expressions (Mango's $regex), on UTF-16. A compiled expression is used by
 * one thread at a time (ICU's rule); `pe` may be NULL. */
typedef struct cblite_URegex cblite_URegex;
cblite_URegex* U_ICU_ENTRY_POINT_RENAME(uregex_open)(const uint16_t* pattern, int32_t patternLength, uint32_t flags,
                                                      void* pe, int* status);
void U_ICU_ENTRY_POINT_RENAME(uregex_setText)(cblite_URegex* re, const uint16_t* text, int32_t textLength, int* status);
int8_t U_ICU_ENTRY_POINT_RENAME(uregex_find)(cblite_URegex* re, int32_t startIndex, int* status);
void U_ICU_ENTRY_POINT_RENAME(uregex_close)(cblite_URegex* re);

/* NULL when the pattern does not compile. */
static inline cblite_URegex* cblite_uregex_open(const uint16_t* pattern, int32_t n) {
    int st = 0;
    cblite_URegex* re = U_ICU_ENTRY_POINT_RENAME(uregex_open)(pattern, n, 0, 0, &st);
    if (st > 0) { if (re) U_ICU_ENTRY_POINT_RENAME(uregex_close)(re); return 0; }
    return re;
}

/* 1 when the expression matches somewhere in the text (an unanchored search), else 0. */
static inline int cblite_uregex_search(cblite_URegex* re, const uint16_t* text, int32_t n) {
    int st = 0;
    static const uint16_t empty = 0;
    U_ICU_ENTRY_POINT_RENAME(uregex_setText)(re, text ? text : &empty, n, &st);
    if (st > 0) return 0;
    int8_t found = U_ICU_ENTRY_POINT_RENAME(uregex_find)(re, 0, &st);
    return st > 0 ? 0 : (found != 0);
}

static inline void cblite_uregex_close(cblite_URegex* re) { U_ICU_ENTRY_POINT_RENAME(uregex_close)(re); }
#endif
