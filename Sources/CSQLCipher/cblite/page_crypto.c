/* SQLCipher's page HMAC and AES through OpenSSL objects made once per connection, instead
 * of once per page. Part of ../sqlite_unit.c: it reaches SQLCipher's provider (crypto.c,
 * crypto_openssl.c of the amalgamation).
 *
 * Why: SQLCipher 4.6.1's OpenSSL provider, for every page it reads or writes, fetches the
 * HMAC and AES-256-CBC implementations from OpenSSL 3's global store, makes both contexts
 * and keys them (SQLCipher issue #597). A page read from disk cost 4.35 us that way and
 * 3.0 us with the implementations fetched once and the keyed contexts kept (a
 * micro-benchmark of the two call sequences; bench/RESULTS.md, session 9). An encrypted
 * database pays that on every page its cache misses.
 *
 * What: the registered provider keeps SQLCipher's own functions except four. ctx_init
 * gives each codec (one encrypted connection's) a page_crypto; hmac and cipher keep there an HMAC
 * context and an encrypting and a decrypting cipher context, keyed with the last key
 * they were given, and only re-key when a call brings another key (a re-key); ctx_free
 * wipes and frees them. Same algorithms, keys, IVs and bytes as the stock provider (a
 * Swift test compares them on random pages). SQLCipher frees its provider when its last
 * codec closes and makes a stock one at the next; cblite holds one activation for the
 * process's life so that this one stays. */
#include "pinned_sqlite.h"

#if defined(SQLCIPHER_CRYPTO_OPENSSL) && OPENSSL_VERSION_NUMBER >= 0x30000000L

typedef struct {
    EVP_MAC_CTX* mac;
    int mac_algorithm;                          /* -1: not keyed */
    int mac_key_sz;
    unsigned char mac_key[64];
    EVP_CIPHER_CTX* cipher[2];                  /* [CIPHER_DECRYPT], [CIPHER_ENCRYPT] */
    int cipher_key_sz[2];                       /* 0: not keyed */
    unsigned char cipher_key[2][64];
} page_crypto;

static EVP_MAC* page_hmac_impl;
static EVP_CIPHER* page_aes_impl;
static sqlcipher_provider stock_provider;       /* SQLCipher's, as registered */

/* Fetched at the first encrypted connection, not at SQLite's configuration: a process
 * with plain databases only does not bring OpenSSL's providers in (~1.9 MiB of
 * libcrypto's pages, measured with BENCH_SMAPS). */
static void page_crypto_fetch(void) {
    page_hmac_impl = EVP_MAC_fetch(NULL, "HMAC", NULL);
    page_aes_impl = EVP_CIPHER_fetch(NULL, EVP_CIPHER_get0_name(OPENSSL_CIPHER), NULL);
}

static int page_ctx_init(void** ctx) {
    int rc = stock_provider.ctx_init(ctx);
    if (rc != SQLITE_OK) return rc;
    static pthread_once_t fetched = PTHREAD_ONCE_INIT;
    pthread_once(&fetched, page_crypto_fetch);
    if (!page_hmac_impl || !page_aes_impl) return SQLITE_OK;    /* no context: the stock functions */
    page_crypto* p = sqlcipher_malloc(sizeof *p);          /* zeroed */
    if (!p) { stock_provider.ctx_free(ctx); return SQLITE_NOMEM; }
    p->mac_algorithm = -1;
    *ctx = p;
    return SQLITE_OK;
}

static int page_ctx_free(void** ctx) {
    page_crypto* p = *ctx;
    if (p) {
        EVP_MAC_CTX_free(p->mac);
        EVP_CIPHER_CTX_free(p->cipher[0]);
        EVP_CIPHER_CTX_free(p->cipher[1]);
        sqlcipher_free(p, sizeof *p);                      /* wipes the key copies */
        *ctx = NULL;
    }
    return stock_provider.ctx_free(ctx);
}

static const char* page_hmac_digest(int algorithm) {
    switch (algorithm) {
    case SQLCIPHER_HMAC_SHA1: return "sha1";
    case SQLCIPHER_HMAC_SHA256: return "sha256";
    case SQLCIPHER_HMAC_SHA512: return "sha512";
    default: return NULL;
    }
}

static int page_hmac(void* ctx, int algorithm, unsigned char* key, int key_sz, unsigned char* in, int in_sz,
                     unsigned char* in2, int in2_sz, unsigned char* out) {
    page_crypto* p = ctx;
    const char* digest = page_hmac_digest(algorithm);
    if (!p || !digest || key_sz <= 0 || key_sz > (int)sizeof p->mac_key)
        return stock_provider.hmac(ctx, algorithm, key, key_sz, in, in_sz, in2, in2_sz, out);
    if (in == NULL) return SQLITE_ERROR;
    if (!p->mac && !(p->mac = EVP_MAC_CTX_new(page_hmac_impl))) return SQLITE_NOMEM;
    int ok;
    if (p->mac_algorithm == algorithm && p->mac_key_sz == key_sz && CRYPTO_memcmp(p->mac_key, key, key_sz) == 0) {
        ok = EVP_MAC_init(p->mac, NULL, 0, NULL);                  /* HMAC: the same key again */
    } else {
        OSSL_PARAM params[] = { OSSL_PARAM_construct_utf8_string("digest", (char*)digest, 0), OSSL_PARAM_END };
        p->mac_algorithm = -1;
        ok = EVP_MAC_init(p->mac, key, key_sz, params);
        if (ok) {
            memcpy(p->mac_key, key, key_sz);
            p->mac_key_sz = key_sz;
            p->mac_algorithm = algorithm;
        }
    }
    size_t written = 0, size = ok ? EVP_MAC_CTX_get_mac_size(p->mac) : 0;
    ok = ok && EVP_MAC_update(p->mac, in, in_sz) && (in2 == NULL || EVP_MAC_update(p->mac, in2, in2_sz))
            && EVP_MAC_final(p->mac, out, &written, size);
    if (!ok) { p->mac_algorithm = -1; return SQLITE_ERROR; }
    return SQLITE_OK;
}

static int page_cipher(void* ctx, int mode, unsigned char* key, int key_sz, unsigned char* iv, unsigned char* in,
                       int in_sz, unsigned char* out) {
    page_crypto* p = ctx;
    if (!p || (mode != CIPHER_DECRYPT && mode != CIPHER_ENCRYPT) || key_sz <= 0 || key_sz > (int)sizeof p->cipher_key[0])
        return stock_provider.cipher(ctx, mode, key, key_sz, iv, in, in_sz, out);
    EVP_CIPHER_CTX** c = &p->cipher[mode];
    if (!*c && !(*c = EVP_CIPHER_CTX_new())) return SQLITE_NOMEM;
    int ok;
    if (p->cipher_key_sz[mode] == key_sz && CRYPTO_memcmp(p->cipher_key[mode], key, key_sz) == 0) {
        ok = EVP_CipherInit_ex2(*c, NULL, NULL, iv, mode, NULL);   /* the key schedule kept, a new IV */
    } else {
        p->cipher_key_sz[mode] = 0;
        ok = EVP_CipherInit_ex2(*c, page_aes_impl, key, iv, mode, NULL) && EVP_CIPHER_CTX_set_padding(*c, 0);
        if (ok) {
            memcpy(p->cipher_key[mode], key, key_sz);
            p->cipher_key_sz[mode] = key_sz;
        }
    }
    int n = 0, last = 0;
    ok = ok && EVP_CipherUpdate(*c, out, &n, in, in_sz) && EVP_CipherFinal_ex(*c, out + n, &last);
    if (!ok || n + last != in_sz) { p->cipher_key_sz[mode] = 0; return SQLITE_ERROR; }
    return SQLITE_OK;
}

static int page_crypto_rc = SQLITE_ERROR;

static void page_crypto_install(void) {
    sqlcipher_activate();                      /* held: the provider below is never freed */
    sqlite3_mutex_enter(sqlcipher_mutex(SQLCIPHER_MUTEX_PROVIDER));
    sqlcipher_provider* p = sqlcipher_get_provider();
    /* Only over SQLCipher's own OpenSSL provider: its other functions stay in use. */
    if (p && p->hmac == sqlcipher_openssl_hmac && p->cipher == sqlcipher_openssl_cipher) {
        stock_provider = *p;
        p->ctx_init = page_ctx_init;
        p->ctx_free = page_ctx_free;
        p->hmac = page_hmac;
        p->cipher = page_cipher;
        page_crypto_rc = SQLITE_OK;
    }
    sqlite3_mutex_leave(sqlcipher_mutex(SQLCIPHER_MUTEX_PROVIDER));
}

int cblite_sqlcipher_keep_crypto_contexts(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, page_crypto_install);
    return page_crypto_rc;
}

/* For tests: one page's HMAC, encryption and decryption through SQLCipher's stock
 * functions (stock = 1: no context, as SQLCipher's own take none) or through this
 * provider, with the page_crypto in *state (made on the first call, kept across calls
 * so that they reuse its keyed contexts; freed by cblite_sqlcipher_page_crypto_release). */
int cblite_sqlcipher_page_crypto_check(int stock, int algorithm, unsigned char* hmac_key, unsigned char* key,
                                       int key_sz, unsigned char* iv, unsigned char* in, int in_sz,
                                       unsigned char* mac_out, unsigned char* enc_out, unsigned char* dec_out,
                                       void** state) {
    if (page_crypto_rc != SQLITE_OK) return SQLITE_MISUSE;
    const sqlcipher_provider* p = stock ? &stock_provider : sqlcipher_get_provider();
    void* ctx = NULL;
    int rc = SQLITE_OK;
    if (!stock) {
        if (!*state) rc = p->ctx_init(state);
        ctx = *state;
    }
    if (rc == SQLITE_OK) rc = p->hmac(ctx, algorithm, hmac_key, key_sz, in, in_sz, iv, 16, mac_out);
    if (rc == SQLITE_OK) rc = p->cipher(ctx, CIPHER_ENCRYPT, key, key_sz, iv, in, in_sz, enc_out);
    if (rc == SQLITE_OK) rc = p->cipher(ctx, CIPHER_DECRYPT, key, key_sz, iv, enc_out, in_sz, dec_out);
    return rc;
}

void cblite_sqlcipher_page_crypto_release(void** state) {
    if (*state) page_ctx_free(state);
}

#endif
