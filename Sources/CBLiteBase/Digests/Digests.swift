import CCrypto

// The engine's cryptography — these digests (SHA-1, SHA-256, MD5) here, HMAC, HKDF,
// AES-GCM and P-256 in CBLiteCore/Crypto — on the system's OpenSSL libcrypto (through the C target
// CCrypto), replacing swift-crypto: libcblite.so then carries one crypto library fewer —
// no vendored BoringSSL copy that the OS cannot patch, and ≈ 5 MB less (swift-crypto also
// pulled in FoundationEssentials) — while SQLCipher already links OpenSSL.
//
// Digests, HMAC and HKDF cannot fail short of OpenSSL itself being unusable (no memory, no
// default provider): they do not throw, and trap with OpenSSL's reason then, as
// swift-crypto did. The others throw CBLError 500 with OpenSSL's reason.

/// CBLError 500 naming what failed and OpenSSL's reason.
package func openSSLError(_ what: String) -> CBLError {
    var buf = [CChar](repeating: 0, count: 256)
    ccrypto_error(&buf, buf.count)
    let reason = buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    return CBLError.internalError("\(what) failed (OpenSSL: \(reason))")
}

package func openSSLTrap(_ what: String) -> Never {
    fatalError(openSSLError(what).message)
}

/// The context of an incremental digest (an EVP_MD_CTX).
private final class DigestContext {
    package let ctx: UnsafeMutableRawPointer

    package init(_ alg: ccrypto_digest_alg) {
        guard let c = ccrypto_digest_new(alg) else { openSSLTrap("digest init") }
        ctx = c
    }

    package init(copying other: DigestContext) {
        guard let c = ccrypto_digest_dup(other.ctx) else { openSSLTrap("digest copy") }
        ctx = c
    }

    deinit { ccrypto_digest_free(ctx) }
}

/// What SHA1, SHA256 and MD5 share: an incremental state with value semantics (the
/// context is copied on write), and one-shot hashing on a context kept per thread (no
/// allocation but the result's).
package struct DigestState {
    package let alg: ccrypto_digest_alg
    private var context: DigestContext

    package init(_ alg: ccrypto_digest_alg) {
        self.alg = alg
        context = DigestContext(alg)
    }

    package var byteCount: Int { ccrypto_digest_size(alg) }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        if !isKnownUniquelyReferenced(&context) { context = DigestContext(copying: context) }
        guard ccrypto_digest_update(context.ctx, bytes.baseAddress, bytes.count) == 1 else { openSSLTrap("digest update") }
    }

    package mutating func finalize() -> [UInt8] {
        if !isKnownUniquelyReferenced(&context) { context = DigestContext(copying: context) }
        let size = byteCount
        return [UInt8](unsafeUninitializedCapacity: size) { out, n in
            guard ccrypto_digest_final(context.ctx, out.baseAddress) == 1 else { openSSLTrap("digest") }
            n = size
        }
    }

    package static func hash(_ alg: ccrypto_digest_alg, parts: [UnsafeRawBufferPointer]) -> [UInt8] {
        var pieces = parts.map { ccrypto_part(data: $0.baseAddress, len: $0.count) }
        let size = ccrypto_digest_size(alg)
        return [UInt8](unsafeUninitializedCapacity: size) { out, n in
            guard ccrypto_digest_parts(alg, &pieces, pieces.count, out.baseAddress) == 1 else { openSSLTrap("digest") }
            n = size
        }
    }

    package static func hash(_ alg: ccrypto_digest_alg, _ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var piece = ccrypto_part(data: bytes.baseAddress, len: bytes.count)
        let size = ccrypto_digest_size(alg)
        return [UInt8](unsafeUninitializedCapacity: size) { out, n in
            guard ccrypto_digest_parts(alg, &piece, 1, out.baseAddress) == 1 else { openSSLTrap("digest") }
            n = size
        }
    }
}

/// SHA-1: attachment digests and revision IDs (content identities, as in CouchDB; not
/// used for security).
public struct SHA1 {
    public static let byteCount = 20
    private var state = DigestState(CCRYPTO_SHA1)

    public init() {}
    public mutating func update(_ bytes: UnsafeRawBufferPointer) { state.update(bytes) }
    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { state.update($0) } }
    /// The digest of everything given so far; the state is then that of a new digest.
    public mutating func finalize() -> [UInt8] { state.finalize() }

    public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] { DigestState.hash(CCRYPTO_SHA1, bytes) }
    public static func hash(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { hash($0) } }
    /// The digest of the concatenation of `parts`.
    public static func hash(parts: [UnsafeRawBufferPointer]) -> [UInt8] { DigestState.hash(CCRYPTO_SHA1, parts: parts) }
    /// The digest of four pieces one after the other, into `out` (byteCount bytes), with
    /// nothing allocated: a revision ID is hashed on every save.
    package static func hash(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, _ c: UnsafeRawBufferPointer,
                     _ d: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt8>) {
        precondition(out.count >= byteCount)
        withUnsafeTemporaryAllocation(of: ccrypto_part.self, capacity: 4) { p in
            p[0] = ccrypto_part(data: a.baseAddress, len: a.count)
            p[1] = ccrypto_part(data: b.baseAddress, len: b.count)
            p[2] = ccrypto_part(data: c.baseAddress, len: c.count)
            p[3] = ccrypto_part(data: d.baseAddress, len: d.count)
            guard ccrypto_digest_parts(CCRYPTO_SHA1, p.baseAddress, 4, out.baseAddress) == 1 else { openSSLTrap("digest") }
        }
    }
}

public struct SHA256 {
    public static let byteCount = 32
    private var state = DigestState(CCRYPTO_SHA256)

    public init() {}
    public mutating func update(_ bytes: UnsafeRawBufferPointer) { state.update(bytes) }
    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { state.update($0) } }
    /// The digest of everything given so far; the state is then that of a new digest.
    public mutating func finalize() -> [UInt8] { state.finalize() }

    public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] { DigestState.hash(CCRYPTO_SHA256, bytes) }
    public static func hash(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { hash($0) } }
    public static func hash(parts: [UnsafeRawBufferPointer]) -> [UInt8] { DigestState.hash(CCRYPTO_SHA256, parts: parts) }
}

/// MD5: CouchDB's attachment digests ("md5-…"); not used for security.
public struct MD5 {
    public static let byteCount = 16
    private var state = DigestState(CCRYPTO_MD5)

    public init() {}
    public mutating func update(_ bytes: UnsafeRawBufferPointer) { state.update(bytes) }
    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { state.update($0) } }
    /// The digest of everything given so far; the state is then that of a new digest.
    public mutating func finalize() -> [UInt8] { state.finalize() }

    public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] { DigestState.hash(CCRYPTO_MD5, bytes) }
    public static func hash(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { hash($0) } }
}
