// See include/ccrypto.h: the engine's cryptography on the system's OpenSSL 3 libcrypto,
// replacing swift-crypto (one crypto library the OS patches instead of a vendored
// BoringSSL copy, and ≈ 5 MB less in libcblite.so).
// SHA1_Init/Update/Final are deprecated in OpenSSL 3 in favour of EVP, and still
// maintained: ccrypto_digest_parts uses them for SHA-1 (see there).
#define OPENSSL_SUPPRESS_DEPRECATED
#include "ccrypto.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

void ccrypto_error(char *buf, size_t size) {
    if (size == 0) return;
    unsigned long e = ERR_get_error();
    if (e == 0) {
        snprintf(buf, size, "unknown error");
    } else {
        ERR_error_string_n(e, buf, size);
    }
    ERR_clear_error();
}

// MARK: digests

// Algorithms fetched once (an implicit fetch by name on every init costs a lookup).
static EVP_MD *md_sha1, *md_sha256, *md_md5;
static EVP_CIPHER *cipher_aes256gcm;
static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;
static pthread_key_t tls_ctx_key;

static void free_tls_ctx(void *ctx) { EVP_MD_CTX_free(ctx); }

static void fetch_algorithms(void) {
    md_sha1 = EVP_MD_fetch(NULL, "SHA1", NULL);
    md_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    md_md5 = EVP_MD_fetch(NULL, "MD5", NULL);
    cipher_aes256gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    pthread_key_create(&tls_ctx_key, free_tls_ctx);
}

static const EVP_MD *md_for(ccrypto_digest_alg alg) {
    pthread_once(&fetch_once, fetch_algorithms);
    switch (alg) {
    case CCRYPTO_SHA1: return md_sha1;
    case CCRYPTO_SHA256: return md_sha256;
    case CCRYPTO_MD5: return md_md5;
    }
    return NULL;
}

size_t ccrypto_digest_size(ccrypto_digest_alg alg) {
    switch (alg) {
    case CCRYPTO_SHA1: return 20;
    case CCRYPTO_SHA256: return 32;
    case CCRYPTO_MD5: return 16;
    }
    return 0;
}

void *ccrypto_digest_new(ccrypto_digest_alg alg) {
    const EVP_MD *md = md_for(alg);
    if (md == NULL) return NULL;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == NULL) return NULL;
    if (EVP_DigestInit_ex2(ctx, md, NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

void *ccrypto_digest_dup(const void *ctx) {
    EVP_MD_CTX *copy = EVP_MD_CTX_new();
    if (copy == NULL) return NULL;
    if (EVP_MD_CTX_copy_ex(copy, ctx) != 1) {
        EVP_MD_CTX_free(copy);
        return NULL;
    }
    return copy;
}

int ccrypto_digest_update(void *ctx, const void *data, size_t len) {
    if (len == 0) return 1;
    return EVP_DigestUpdate(ctx, data, len) == 1;
}

int ccrypto_digest_final(void *ctx, uint8_t *out) {
    if (EVP_DigestFinal_ex(ctx, out, NULL) != 1) return 0;
    return EVP_DigestInit_ex2(ctx, NULL, NULL) == 1;
}

void ccrypto_digest_free(void *ctx) { EVP_MD_CTX_free(ctx); }

int ccrypto_digest_parts(ccrypto_digest_alg alg, const ccrypto_part *parts, size_t count, uint8_t *out) {
    if (alg == CCRYPTO_SHA1) {
        // Every save hashes its new revision ID this way. The low-level SHA-1 on a stack
        // context skips what EVP does per digest (provider context made and freed): about
        // two thirds of the hash's instructions (callgrind). Same digest, same assembly.
        SHA_CTX c;
        if (SHA1_Init(&c) != 1) return 0;
        for (size_t i = 0; i < count; i++) {
            if (parts[i].len > 0 && SHA1_Update(&c, parts[i].data, parts[i].len) != 1) return 0;
        }
        return SHA1_Final(out, &c) == 1;
    }
    const EVP_MD *md = md_for(alg);
    if (md == NULL) return 0;
    EVP_MD_CTX *ctx = pthread_getspecific(tls_ctx_key);
    if (ctx == NULL) {
        ctx = EVP_MD_CTX_new();
        if (ctx == NULL) return 0;
        if (pthread_setspecific(tls_ctx_key, ctx) != 0) {
            EVP_MD_CTX_free(ctx);
            return 0;
        }
    }
    if (EVP_DigestInit_ex2(ctx, md, NULL) != 1) return 0;
    for (size_t i = 0; i < count; i++) {
        if (parts[i].len > 0 && EVP_DigestUpdate(ctx, parts[i].data, parts[i].len) != 1) return 0;
    }
    return EVP_DigestFinal_ex(ctx, out, NULL) == 1;
}

// MARK: MAC, KDF, cipher

// OpenSSL wants non-NULL pointers even for empty inputs.
static const unsigned char empty_input[1] = {0};
#define NONNULL(p) ((p) != NULL ? (const void *)(p) : (const void *)empty_input)

int ccrypto_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len, uint8_t out[32]) {
    const EVP_MD *md = md_for(CCRYPTO_SHA256);
    if (md == NULL || key_len > INT_MAX) return 0;
    unsigned int out_len = 0;
    return HMAC(md, NONNULL(key), (int)key_len, NONNULL(data), len, out, &out_len) != NULL && out_len == 32;
}

int ccrypto_pbkdf2_hmac(ccrypto_digest_alg alg, const void *password, size_t password_len, const void *salt,
                        size_t salt_len, unsigned iterations, uint8_t *out, size_t out_len) {
    const EVP_MD *md = md_for(alg);
    if (md == NULL || alg == CCRYPTO_MD5 || password_len > INT_MAX || salt_len > INT_MAX || out_len > INT_MAX
        || iterations == 0 || iterations > INT_MAX) return 0;
    return PKCS5_PBKDF2_HMAC(NONNULL(password), (int)password_len, NONNULL(salt), (int)salt_len, (int)iterations,
                             md, (int)out_len, out) == 1;
}

int ccrypto_hkdf_sha256(const void *ikm, size_t ikm_len, const void *salt, size_t salt_len,
                        const void *info, size_t info_len, uint8_t *out, size_t out_len) {
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    if (kdf == NULL) return 0;
    EVP_KDF_CTX *kctx = EVP_KDF_CTX_new(kdf);
    EVP_KDF_free(kdf);
    if (kctx == NULL) return 0;
    OSSL_PARAM params[5];
    size_t n = 0;
    params[n++] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
    params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)NONNULL(ikm), ikm_len);
    // No salt is RFC 5869's default (HashLen zero bytes): the same HMAC key.
    if (salt_len > 0) params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
    if (info_len > 0) params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_len);
    params[n] = OSSL_PARAM_construct_end();
    int ok = EVP_KDF_derive(kctx, out, out_len, params) == 1;
    EVP_KDF_CTX_free(kctx);
    return ok;
}

static EVP_CIPHER_CTX *gcm_start(int encrypt, const uint8_t key[32], const uint8_t nonce[12],
                                 const void *aad, size_t aad_len, size_t len) {
    pthread_once(&fetch_once, fetch_algorithms);
    if (cipher_aes256gcm == NULL || len > INT_MAX || aad_len > INT_MAX) return NULL;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return NULL;
    int outl = 0;
    // The default nonce length of GCM is 12 bytes.
    if (EVP_CipherInit_ex2(ctx, cipher_aes256gcm, key, nonce, encrypt, NULL) != 1 ||
        (aad_len > 0 && EVP_CipherUpdate(ctx, NULL, &outl, aad, (int)aad_len) != 1)) {
        EVP_CIPHER_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

int ccrypto_aes256gcm_seal(const uint8_t key[32], const uint8_t nonce[12], const void *aad, size_t aad_len,
                           const void *in, size_t len, uint8_t *out, uint8_t tag[16]) {
    EVP_CIPHER_CTX *ctx = gcm_start(1, key, nonce, aad, aad_len, len);
    if (ctx == NULL) return 0;
    int outl = 0, finl = 0;
    int ok = (len == 0 || EVP_EncryptUpdate(ctx, out, &outl, in, (int)len) == 1) &&
             EVP_EncryptFinal_ex(ctx, out + outl, &finl) == 1 && (size_t)(outl + finl) == len &&
             EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

int ccrypto_aes256gcm_open(const uint8_t key[32], const uint8_t nonce[12], const void *aad, size_t aad_len,
                           const void *in, size_t len, const uint8_t tag[16], uint8_t *out) {
    EVP_CIPHER_CTX *ctx = gcm_start(0, key, nonce, aad, aad_len, len);
    if (ctx == NULL) return 0;
    int outl = 0, finl = 0;
    int ok = (len == 0 || EVP_DecryptUpdate(ctx, out, &outl, in, (int)len) == 1) &&
             EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, (void *)tag) == 1 &&
             EVP_DecryptFinal_ex(ctx, out + outl, &finl) == 1 && (size_t)(outl + finl) == len;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok && len > 0) OPENSSL_cleanse(out, len);   // never hand out unauthenticated plaintext
    return ok;
}

int ccrypto_random(void *out, size_t len) {
    unsigned char *p = out;
    while (len > 0) {
        int n = len > INT_MAX ? INT_MAX : (int)len;
        if (RAND_bytes(p, n) != 1) return 0;
        p += n;
        len -= (size_t)n;
    }
    return 1;
}

int ccrypto_equal_ct(const void *a, const void *b, size_t len) { return CRYPTO_memcmp(a, b, len) == 0; }

// MARK: P-256

void ccrypto_free(void *p) { OPENSSL_free(p); }

void ccrypto_pkey_free(void *key) { EVP_PKEY_free(key); }

static int is_p256(EVP_PKEY *key) {
    char group[64];
    size_t len = 0;
    return EVP_PKEY_is_a(key, "EC") &&
           EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &len) == 1 &&
           (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0);
}

void *ccrypto_p256_generate(void) { return EVP_EC_gen("P-256"); }

void *ccrypto_p256_from_pem(const char *pem, size_t len) {
    if (len > INT_MAX) return NULL;
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    if (bio == NULL) return NULL;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (key != NULL && !is_p256(key)) {
        EVP_PKEY_free(key);
        ERR_raise_data(ERR_LIB_EVP, EVP_R_UNSUPPORTED_ALGORITHM, "not a P-256 key");
        return NULL;
    }
    return key;
}

size_t ccrypto_p256_spki_der(void *key, uint8_t **out) {
    *out = NULL;
    int n = i2d_PUBKEY(key, out);   // allocates *out (OPENSSL_malloc)
    if (n <= 0) { *out = NULL; return 0; }
    return (size_t)n;
}

size_t ccrypto_p256_pkcs8_pem(void *key, char **out) {
    *out = NULL;
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio == NULL) return 0;
    size_t result = 0;
    // OpenSSL 3 writes PKCS#8 ("BEGIN PRIVATE KEY") here.
    if (PEM_write_bio_PKCS8PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) == 1) {
        char *data = NULL;
        long n = BIO_get_mem_data(bio, &data);
        if (n > 0 && (*out = OPENSSL_malloc((size_t)n)) != NULL) {
            memcpy(*out, data, (size_t)n);
            result = (size_t)n;
        }
    }
    BIO_free(bio);
    return result;
}

size_t ccrypto_p256_sign_sha256(void *key, const void *data, size_t len, uint8_t **out) {
    *out = NULL;
    const EVP_MD *md = md_for(CCRYPTO_SHA256);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (md == NULL || ctx == NULL) { EVP_MD_CTX_free(ctx); return 0; }
    size_t sig_len = 0;
    size_t result = 0;
    if (EVP_DigestSignInit(ctx, NULL, md, NULL, key) == 1 &&
        EVP_DigestSign(ctx, NULL, &sig_len, NONNULL(data), len) == 1 &&
        (*out = OPENSSL_malloc(sig_len)) != NULL) {
        if (EVP_DigestSign(ctx, *out, &sig_len, NONNULL(data), len) == 1) {
            result = sig_len;
        } else {
            OPENSSL_free(*out);
            *out = NULL;
        }
    }
    EVP_MD_CTX_free(ctx);
    return result;
}

int ccrypto_p256_verify_sha256(const uint8_t *spki, size_t spki_len, const void *data, size_t len,
                               const uint8_t *sig, size_t sig_len) {
    if (spki_len > LONG_MAX) return 0;
    const unsigned char *p = spki;
    EVP_PKEY *key = d2i_PUBKEY(NULL, &p, (long)spki_len);
    if (key == NULL) return 0;
    const EVP_MD *md = md_for(CCRYPTO_SHA256);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = md != NULL && ctx != NULL && is_p256(key) &&
             EVP_DigestVerifyInit(ctx, NULL, md, NULL, key) == 1 &&
             EVP_DigestVerify(ctx, sig, sig_len, NONNULL(data), len) == 1;
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    ERR_clear_error();   // an invalid signature is an answer, not an error
    return ok;
}
