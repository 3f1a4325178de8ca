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

static inline void cblite_ucol_close(cblite_UCollator* coll) { U_ICU_ENTRY_POINT_RENAME(ucol_close)(coll); }

static inline const char* cblite_icu_version(void) { return U_ICU_VERSION; }
#endif
