import CCrypto

// The engine's cryptography beyond digests (HMAC, HKDF, AES-GCM, random bytes, P-256) on
// the system's OpenSSL libcrypto: why OpenSSL and not swift-crypto, and how failures
// surface, is said once in CBLiteBase/Digests/Digests.swift, beside openSSLError.

/// HMAC-SHA256.
public enum HMACSHA256 {
    public static let byteCount = 32

    public static func authenticationCode(_ data: UnsafeRawBufferPointer, key: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { k in
            [UInt8](unsafeUninitializedCapacity: byteCount) { out, n in
                guard ccrypto_hmac_sha256(k.baseAddress, k.count, data.baseAddress, data.count, out.baseAddress) == 1 else {
                    openSSLTrap("HMAC-SHA256")
                }
                n = byteCount
            }
        }
    }

    public static func authenticationCode(_ data: [UInt8], key: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { authenticationCode($0, key: key) }
    }

    /// Whether `code` is the code of `data`, compared in constant time.
    public static func isValid(_ code: [UInt8], for data: [UInt8], key: [UInt8]) -> Bool {
        let expected = authenticationCode(data, key: key)
        return constantTimeEqual(code, expected)
    }
}

/// HKDF-SHA256 (RFC 5869): extract with `salt` (none: HashLen zero bytes), expand with `info`.
public enum HKDFSHA256 {
    public static func deriveKey(inputKeyMaterial ikm: [UInt8], salt: [UInt8] = [], info: [UInt8], outputByteCount: Int) -> [UInt8] {
        precondition(outputByteCount > 0 && outputByteCount <= 255 * 32, "HKDF-SHA256 output length")
        return [UInt8](unsafeUninitializedCapacity: outputByteCount) { out, n in
            let ok = ikm.withUnsafeBytes { k in
                salt.withUnsafeBytes { s in
                    info.withUnsafeBytes { i in
                        ccrypto_hkdf_sha256(k.baseAddress, k.count, s.baseAddress, s.count, i.baseAddress, i.count,
                                            out.baseAddress, outputByteCount)
                    }
                }
            }
            guard ok == 1 else { openSSLTrap("HKDF-SHA256") }
            n = outputByteCount
        }
    }
}

/// PBKDF2 (RFC 8018) with HMAC-SHA1 or HMAC-SHA256: CouchDB's password hashes.
public enum PBKDF2 {
    public enum PRF: Sendable { case sha1, sha256 }

    public static func deriveKey(password: [UInt8], salt: [UInt8], iterations: Int, prf: PRF, outputByteCount: Int) -> [UInt8] {
        precondition(iterations >= 1 && iterations <= Int(Int32.max) && outputByteCount > 0, "PBKDF2 parameters")
        return [UInt8](unsafeUninitializedCapacity: outputByteCount) { out, n in
            let ok = password.withUnsafeBytes { p in
                salt.withUnsafeBytes { s in
                    ccrypto_pbkdf2_hmac(prf == .sha1 ? CCRYPTO_SHA1 : CCRYPTO_SHA256, p.baseAddress, p.count, s.baseAddress,
                                        s.count, UInt32(iterations), out.baseAddress, outputByteCount)
                }
            }
            guard ok == 1 else { openSSLTrap("PBKDF2") }
            n = outputByteCount
        }
    }
}

/// AES-256-GCM with 12-byte nonces and 16-byte tags.
public enum AESGCM {
    public static let keySize = 32
    public static let nonceSize = 12
    public static let tagSize = 16

    /// The ciphertext (as long as the plaintext) and the tag.
    public static func seal(_ plaintext: UnsafeRawBufferPointer, key: [UInt8], nonce: [UInt8], authenticating aad: [UInt8])
        throws -> (ciphertext: [UInt8], tag: [UInt8]) {
        precondition(key.count == keySize && nonce.count == nonceSize, "AES-256-GCM key or nonce size")
        var tag = [UInt8](repeating: 0, count: tagSize)
        var ok: Int32 = 0
        let ciphertext = [UInt8](unsafeUninitializedCapacity: plaintext.count) { out, n in
            ok = key.withUnsafeBufferPointer { k in
                nonce.withUnsafeBufferPointer { iv in
                    aad.withUnsafeBytes { a in
                        tag.withUnsafeMutableBufferPointer { t in
                            ccrypto_aes256gcm_seal(k.baseAddress, iv.baseAddress, a.baseAddress, a.count,
                                                   plaintext.baseAddress, plaintext.count, out.baseAddress, t.baseAddress)
                        }
                    }
                }
            }
            n = plaintext.count
        }
        guard ok == 1 else { throw openSSLError("AES-256-GCM encryption") }
        return (ciphertext, tag)
    }

    public static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], authenticating aad: [UInt8])
        throws -> (ciphertext: [UInt8], tag: [UInt8]) {
        try plaintext.withUnsafeBytes { try seal($0, key: key, nonce: nonce, authenticating: aad) }
    }

    /// The plaintext, or nil when the tag does not authenticate the ciphertext and `aad`
    /// under `key` (wrong key, or damaged data).
    public static func open(_ ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, key: [UInt8], nonce: [UInt8],
                            authenticating aad: [UInt8]) -> [UInt8]? {
        precondition(key.count == keySize && nonce.count == nonceSize, "AES-256-GCM key or nonce size")
        guard tag.count == tagSize else { return nil }
        var ok: Int32 = 0
        let plaintext = [UInt8](unsafeUninitializedCapacity: ciphertext.count) { out, n in
            ok = key.withUnsafeBufferPointer { k in
                nonce.withUnsafeBufferPointer { iv in
                    aad.withUnsafeBytes { a in
                        ccrypto_aes256gcm_open(k.baseAddress, iv.baseAddress, a.baseAddress, a.count,
                                               ciphertext.baseAddress, ciphertext.count,
                                               tag.baseAddress!.assumingMemoryBound(to: UInt8.self), out.baseAddress)
                    }
                }
            }
            n = ciphertext.count
        }
        if ok != 1 {
            var discard = [CChar](repeating: 0, count: 8)
            ccrypto_error(&discard, discard.count)   // clear OpenSSL's queue on this thread
            return nil
        }
        return plaintext
    }

    public static func open(_ ciphertext: [UInt8], tag: [UInt8], key: [UInt8], nonce: [UInt8], authenticating aad: [UInt8]) -> [UInt8]? {
        ciphertext.withUnsafeBytes { c in tag.withUnsafeBytes { t in open(c, tag: t, key: key, nonce: nonce, authenticating: aad) } }
    }
}

/// `count` cryptographically secure random bytes (OpenSSL's RAND_bytes).
public func secureRandomBytes(_ count: Int) throws -> [UInt8] {
    var ok: Int32 = 1
    let bytes = [UInt8](unsafeUninitializedCapacity: count) { out, n in
        if count > 0 { ok = ccrypto_random(out.baseAddress, count) }
        n = count
    }
    guard ok == 1 else { throw openSSLError("random bytes") }
    return bytes
}

/// Whether a and b are equal, in time that depends only on their lengths.
public func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    if a.isEmpty { return true }
    return a.withUnsafeBytes { x in b.withUnsafeBytes { y in ccrypto_equal_ct(x.baseAddress, y.baseAddress, a.count) == 1 } }
}

/// A P-256 private key for ECDSA-SHA256 signatures (the listener's anonymous TLS identity).
public final class SigningKeyP256: @unchecked Sendable {   // immutable after init
    private let key: UnsafeMutableRawPointer

    /// A new random key.
    public init() throws {
        guard let k = ccrypto_p256_generate() else { throw openSSLError("P-256 key generation") }
        key = k
    }

    /// A private key from PEM (PKCS#8 or SEC1). 500 when it is not a P-256 private key.
    public init(pem: String) throws {
        var text = pem
        let k = text.withUTF8 { ccrypto_p256_from_pem(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), $0.count) }
        guard let k else { throw openSSLError("reading a P-256 private key") }
        key = k
    }

    deinit { ccrypto_pkey_free(key) }

    private static func take(_ what: String, _ body: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>) -> Int) throws -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        let n = body(&out)
        guard n > 0, let out else { throw openSSLError(what) }
        defer { ccrypto_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: n))
    }

    /// The public key as SubjectPublicKeyInfo DER.
    public func publicKeyDER() throws -> [UInt8] {
        try SigningKeyP256.take("encoding a P-256 public key") { ccrypto_p256_spki_der(key, $0) }
    }

    /// The private key as PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----").
    public func pkcs8PEM() throws -> String {
        var out: UnsafeMutablePointer<CChar>?
        let n = ccrypto_p256_pkcs8_pem(key, &out)
        guard n > 0, let out else { throw openSSLError("encoding a P-256 private key") }
        defer { ccrypto_free(out) }
        return String(decoding: UnsafeRawBufferPointer(start: out, count: n), as: UTF8.self)
    }

    /// The ECDSA-SHA256 signature of `data`, DER-encoded.
    public func signatureDER(for data: [UInt8]) throws -> [UInt8] {
        try data.withUnsafeBytes { d in
            try SigningKeyP256.take("ECDSA signing") { ccrypto_p256_sign_sha256(key, d.baseAddress, d.count, $0) }
        }
    }

    /// Whether `signature` (DER) is a valid ECDSA-SHA256 signature of `data` by the P-256
    /// public key `publicKeyDER` (SubjectPublicKeyInfo).
    public static func isValidSignature(_ signature: [UInt8], for data: [UInt8], publicKeyDER: [UInt8]) -> Bool {
        publicKeyDER.withUnsafeBufferPointer { k in
            data.withUnsafeBytes { d in
                signature.withUnsafeBufferPointer { s in
                    ccrypto_p256_verify_sha256(k.baseAddress, k.count, d.baseAddress, d.count, s.baseAddress, s.count) == 1
                }
            }
        }
    }
}
