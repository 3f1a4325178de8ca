import Crypto

/// The identity of an attachment's content: the SHA-1 digest of its bytes, written
/// "sha1-<base64 of the 20 bytes>" as in CouchDB and Couchbase Lite.
public struct BlobDigest: Hashable, Sendable, CustomStringConvertible {
    /// The 20 bytes of the SHA-1 digest.
    public let bytes: [UInt8]

    init(bytes: [UInt8]) {
        precondition(bytes.count == 20, "a SHA-1 digest has 20 bytes")
        self.bytes = bytes
    }

    /// Parses "sha1-<base64>" (exactly 20 bytes after decoding); nil otherwise.
    public init?(_ string: String) {
        guard string.utf8.count == 33, string.hasPrefix("sha1-"),
              let decoded = Base64.decode(string.utf8.dropFirst(5)), decoded.count == 20 else { return nil }
        bytes = decoded
    }

    /// Parses a digest given by a caller: 400 when malformed.
    static func parse(_ string: String, what: String = "digest") throws -> BlobDigest {
        guard let d = BlobDigest(string) else {
            throw CBLError.badRequest("\(what) \"\(string.prefix(80))\" is not a \"sha1-<base64>\" digest")
        }
        return d
    }

    public var string: String { "sha1-" + Base64.encode(bytes) }
    public var description: String { string }

    /// 40 uppercase hex digits (the file name scheme of Couchbase Lite 1.x).
    public var hex: String {
        let digits: [UInt8] = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(40)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The digest of bytes in memory.
    public static func of(_ bytes: UnsafeRawBufferPointer) -> BlobDigest {
        var h = Insecure.SHA1()
        h.update(bufferPointer: bytes)
        return BlobDigest(hasher: h)
    }

    public static func of(_ bytes: [UInt8]) -> BlobDigest { bytes.withUnsafeBytes { of($0) } }

    init(hasher: Insecure.SHA1) {
        self.init(bytes: Array(hasher.finalize()))
    }
}

/// Incremental SHA-1 of content, giving its BlobDigest.
struct BlobHasher {
    private var h = Insecure.SHA1()
    mutating func update(_ bytes: UnsafeRawBufferPointer) { h.update(bufferPointer: bytes) }
    mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { h.update(bufferPointer: $0) } }
    var digest: BlobDigest { BlobDigest(hasher: h) }
}

/// Standard base64 (RFC 4648, '+' and '/', '=' padding), without Foundation.
enum Base64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let reverse: [UInt8] = {
        var r = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { r[Int(c)] = UInt8(i) }
        return r
    }()

    static func encode<C: Swift.Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var it = bytes.makeIterator()
        while let a = it.next() {
            let b = it.next(), c = it.next()
            let n = UInt32(a) << 16 | UInt32(b ?? 0) << 8 | UInt32(c ?? 0)
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(b == nil ? UInt8(ascii: "=") : alphabet[Int(n >> 6 & 63)])
            out.append(c == nil ? UInt8(ascii: "=") : alphabet[Int(n & 63)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64; ASCII whitespace is skipped, padding is optional but must be
    /// correct when present. nil for anything else.
    static func decode<C: Swift.Collection>(_ text: C) -> [UInt8]? where C.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3 + 3)
        var acc: UInt32 = 0
        var n = 0          // sextets in acc
        var padding = 0
        for c in text {
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { continue }
            if c == UInt8(ascii: "=") { padding += 1; continue }
            guard padding == 0 else { return nil }        // data after padding
            let v = reverse[Int(c)]
            guard v != 0xFF else { return nil }
            acc = acc << 6 | UInt32(v)
            n += 1
            if n == 4 {
                out.append(UInt8(acc >> 16 & 0xFF)); out.append(UInt8(acc >> 8 & 0xFF)); out.append(UInt8(acc & 0xFF))
                acc = 0; n = 0
            }
        }
        switch n {
        case 0: guard padding == 0 else { return nil }
        case 2:
            guard padding == 0 || padding == 2, acc & 0xF == 0 else { return nil }
            out.append(UInt8(acc >> 4 & 0xFF))
        case 3:
            guard padding == 0 || padding == 1, acc & 0x3 == 0 else { return nil }
            out.append(UInt8(acc >> 10 & 0xFF)); out.append(UInt8(acc >> 2 & 0xFF))
        default: return nil
        }
        return out
    }
}
