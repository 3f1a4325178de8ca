/// The identity of an attachment's content: the SHA-1 digest of its bytes, written
/// "sha1-<base64 of the 20 bytes>" as in CouchDB and Couchbase Lite.
public struct BlobDigest: Hashable, Sendable, CustomStringConvertible {
    /// The 20 bytes of the SHA-1 digest.
    public let bytes: [UInt8]

    package init(bytes: [UInt8]) {
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
    public static func parse(_ string: String, what: String = "digest") throws -> BlobDigest {
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
        BlobDigest(bytes: SHA1.hash(bytes))
    }

    public static func of(_ bytes: [UInt8]) -> BlobDigest { bytes.withUnsafeBytes { of($0) } }

    /// The digest of what `hasher` was given (which then starts over).
    package init(hasher: inout SHA1) {
        self.init(bytes: hasher.finalize())
    }
}

/// Incremental SHA-1 of content, giving its BlobDigest.
package struct BlobHasher {
    private var h = SHA1()
    package init() {}
    package mutating func update(_ bytes: UnsafeRawBufferPointer) { h.update(bytes) }
    package mutating func update(_ bytes: [UInt8]) { h.update(bytes) }
    /// The digest of the content so far.
    package var digest: BlobDigest {
        var copy = h
        return BlobDigest(hasher: &copy)
    }
}
