// The engine's cryptography, on the system's OpenSSL libcrypto (the one SQLCipher already
// links): digests, HMAC, HKDF, AES-256-GCM, random bytes, P-256 ECDSA keys. A small C layer
// so that Swift never imports OpenSSL's headers (which would clash with the BoringSSL of
// swift-nio-ssl in the same program); CBLiteCore/Crypto/ wraps it for Swift.
//
// Why not swift-crypto: it vendored a second BoringSSL (plus FoundationEssentials, which it
// imports), ≈ 5 MB of the 25 MB budget of libcblite.so, and a crypto library the OS does not
// patch; OpenSSL was linked anyway for SQLCipher.
//
// Conventions: functions return 1 on success and 0 on failure (OpenSSL's); after a failure
// ccrypto_error() gives OpenSSL's reason. Nothing here is exported from libcblite.so
// (compiled with -fvisibility=hidden).
#ifndef CCRYPTO_H
#define CCRYPTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Writes OpenSSL's reason for the last failure on this thread (or "unknown error") into
/// buf, NUL-terminated, and clears OpenSSL's error queue.
void ccrypto_error(char *buf, size_t size);

// MARK: digests

typedef enum { CCRYPTO_SHA1 = 1, CCRYPTO_SHA256 = 2, CCRYPTO_MD5 = 3 } ccrypto_digest_alg;

/// The digest's size in bytes (20, 32, 16).
size_t ccrypto_digest_size(ccrypto_digest_alg alg);

/// An incremental digest context (an EVP_MD_CTX), initialized; NULL on failure.
void *ccrypto_digest_new(ccrypto_digest_alg alg);
/// A copy of a context in its current state; NULL on failure.
void *ccrypto_digest_dup(const void *ctx);
int ccrypto_digest_update(void *ctx, const void *data, size_t len);
/// Writes the digest to out and re-initializes the context for a new message.
int ccrypto_digest_final(void *ctx, uint8_t *out);
void ccrypto_digest_free(void *ctx);

/// One piece of a message hashed at once.
typedef struct { const void *data; size_t len; } ccrypto_part;

/// The digest of the concatenation of parts, on a context kept per thread (no allocation
/// per call: revision IDs are hashed on every save).
int ccrypto_digest_parts(ccrypto_digest_alg alg, const ccrypto_part *parts, size_t count, uint8_t *out);

// MARK: MAC, KDF, cipher

/// HMAC-SHA256 of data under key; out gets 32 bytes.
int ccrypto_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len, uint8_t out[32]);

/// HKDF-SHA256 (RFC 5869, extract and expand); salt may be empty.
int ccrypto_hkdf_sha256(const void *ikm, size_t ikm_len, const void *salt, size_t salt_len,
                        const void *info, size_t info_len, uint8_t *out, size_t out_len);

/// PBKDF2 (RFC 8018) with HMAC over alg (SHA-1 or SHA-256): out_len bytes derived from the
/// password and salt in `iterations` rounds (CouchDB's password hashes).
int ccrypto_pbkdf2_hmac(ccrypto_digest_alg alg, const void *password, size_t password_len, const void *salt,
                        size_t salt_len, unsigned iterations, uint8_t *out, size_t out_len);

/// AES-256-GCM with a 12-byte nonce and a 16-byte tag. out receives len bytes.
int ccrypto_aes256gcm_seal(const uint8_t key[32], const uint8_t nonce[12], const void *aad, size_t aad_len,
                           const void *in, size_t len, uint8_t *out, uint8_t tag[16]);
/// 1 when the tag authenticates the ciphertext and aad (out then holds len bytes of
/// plaintext); 0 when it does not, or on failure.
int ccrypto_aes256gcm_open(const uint8_t key[32], const uint8_t nonce[12], const void *aad, size_t aad_len,
                           const void *in, size_t len, const uint8_t tag[16], uint8_t *out);

/// Cryptographically secure random bytes (RAND_bytes).
int ccrypto_random(void *out, size_t len);

/// 1 when the len bytes at a and b are equal, compared in constant time (CRYPTO_memcmp).
int ccrypto_equal_ct(const void *a, const void *b, size_t len);

// MARK: P-256 ECDSA keys (EVP_PKEY *)

void *ccrypto_p256_generate(void);
/// A private key from PEM (PKCS#8 or SEC1); NULL on failure or when it is not a P-256 key.
void *ccrypto_p256_from_pem(const char *pem, size_t len);
void ccrypto_pkey_free(void *key);

/// Results of variable size are malloc'd: *out receives them (free with ccrypto_free), the
/// return value is their length, or 0 on failure.
void ccrypto_free(void *p);
/// SubjectPublicKeyInfo (DER) of the public key.
size_t ccrypto_p256_spki_der(void *key, uint8_t **out);
/// The private key as PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"), not NUL-terminated.
size_t ccrypto_p256_pkcs8_pem(void *key, char **out);
/// ECDSA-SHA256 signature of data, DER (SEQUENCE of r and s).
size_t ccrypto_p256_sign_sha256(void *key, const void *data, size_t len, uint8_t **out);
/// 1 when sig (DER) is a valid ECDSA-SHA256 signature of data by the public key given as
/// SubjectPublicKeyInfo DER; 0 otherwise.
int ccrypto_p256_verify_sha256(const uint8_t *spki, size_t spki_len, const void *data, size_t len,
                               const uint8_t *sig, size_t sig_len);

#ifdef __cplusplus
}
#endif

#endif
