/// A revision ID, "<generation>-<digest>". Ordered as CouchDB orders them (so every peer
/// picks the same winner, the seeds' rule): generation numerically, then the digest as
/// CouchDB stores it — exactly 32 hex digits as the 16 bytes they encode, any other
/// digest as its text — compared byte by byte, a prefix before a longer one.
public struct RevID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let generation: Int
    /// "<generation>-<digest>": the stored form. It is bound, returned and sent several
    /// times per save, and making it from its parts cost ~800 instructions a time
    /// (callgrind), so it is made once, or kept as parsed.
    public let string: String
    /// Where the digest starts in `string`'s UTF-8 (after the '-').
    private let digestStart: Int

    /// The part after "<generation>-".
    public var digest: String { String(decoding: string.utf8.dropFirst(digestStart), as: UTF8.self) }

    public init(generation: Int, digest: String) {
        guard generation >= 0 else {
            self.init(generation: generation, string: "\(generation)-\(digest)", digestStart: "\(generation)-".utf8.count)
            return
        }
        var d = digest
        self = d.withUTF8 { d in
            RevID.compose(generation: generation, digestCount: d.count) { out in
                for (i, b) in d.enumerated() { out[i] = b }
            }
        }
    }

    /// Makes "<generation>-<digest>" in one buffer: the digits, '-', then `writeDigest`
    /// fills the last `digestCount` bytes.
    private static func compose(generation: Int, digestCount: Int,
                                _ writeDigest: (UnsafeMutableBufferPointer<UInt8>) -> Void) -> RevID {
        let prefix = DecimalText.count(UInt64(generation)) + 1
        let string = String(unsafeUninitializedCapacity: prefix + digestCount) { out in
            DecimalText.write(UInt64(generation), into: out)
            out[prefix - 1] = UInt8(ascii: "-")
            writeDigest(UnsafeMutableBufferPointer(rebasing: out[prefix..<(prefix + digestCount)]))
            return prefix + digestCount
        }
        return RevID(generation: generation, string: string, digestStart: prefix)
    }

    /// Parses "<gen>-<digest>": gen a positive decimal, digest 1–128 printable ASCII
    /// characters (peers may use other digests than ours); a 32-hex-digit digest is
    /// lower-cased, as CouchDB does.
    public init?(_ string: String) {
        var copy = string
        let parsed: (Int, String?)? = copy.withUTF8 { buf in
            guard buf.count <= 160 else { return nil }
            var gen = 0
            var i = 0
            while i < buf.count && buf[i] != UInt8(ascii: "-") {
                let c = buf[i]
                guard c >= 0x30 && c <= 0x39, i < 9, !(i == 0 && c == 0x30) else { return nil }
                gen = gen * 10 + Int(c - 0x30)
                i += 1
            }
            let digestStart = i + 1
            guard i > 0, i < buf.count, buf.count - digestStart >= 1, buf.count - digestStart <= 128 else { return nil }
            for j in digestStart..<buf.count where !(buf[j] > 0x20 && buf[j] < 0x7F) { return nil }
            let digest = UnsafeBufferPointer(rebasing: buf[digestStart...])
            // CouchDB stores a 32-hex-digit digest as 16 bytes and writes it back in lower
            // case, so "2-ABC…" and "2-abc…" are one revision there: the same here, or a
            // replicated tree would keep two leaves where CouchDB keeps one.
            if digest.count == 32, digest.allSatisfy({ Hex.isDigit($0) }), digest.contains(where: { $0 >= 0x41 && $0 <= 0x46 }) {
                return (gen, String(decoding: digest.map { $0 >= 0x41 && $0 <= 0x46 ? $0 + 0x20 : $0 }, as: UTF8.self))
            }
            return (gen, nil)      // the string is already canonical
        }
        guard let (gen, digest) = parsed else { return nil }
        if let digest {
            self.init(generation: gen, digest: digest)
        } else {
            // As given, no copy; no leading zeros, so the digest starts after gen's digits and '-'.
            self.init(generation: gen, string: string, digestStart: DecimalText.count(UInt64(gen)) + 1)

        }
    }

    public var description: String { string }

    /// The length of `string` in bytes.
    package var utf8Count: Int { string.utf8.count }

    public static func < (a: RevID, b: RevID) -> Bool {
        if a.generation != b.generation { return a.generation < b.generation }
        // Same generation, so the same "<generation>-" prefix: the strings order as the
        // digests when neither is binary (ours among themselves).
        let aBinary = a.isBinaryDigest, bBinary = b.isBinaryDigest
        guard aBinary || bBinary else { return a.string.utf8.lexicographicallyPrecedes(b.string.utf8) }
        return a.withOrderBytes(binary: aBinary) { ka in b.withOrderBytes(binary: bBinary) { kb in ka.lexicographicallyPrecedes(kb) } }
    }

    /// Whether CouchDB keeps the digest as bytes: exactly 32 hex digits.
    private var isBinaryDigest: Bool {
        let d = string.utf8.dropFirst(digestStart)
        return d.count == 32 && d.allSatisfy { Hex.isDigit($0) }
    }

    /// The digest as CouchDB compares it: the 16 bytes of a binary digest (`binary`, as
    /// `isBinaryDigest` answered), else its text.
    private func withOrderBytes<T>(binary: Bool, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        var s = string
        return s.withUTF8 { utf8 in
            let digest = UnsafeBufferPointer(rebasing: utf8[digestStart...])
            guard binary else { return body(digest) }
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { bytes in
                for i in 0..<16 { bytes[i] = Hex.nibble(digest[2 * i])! << 4 | Hex.nibble(digest[2 * i + 1])! }
                return body(UnsafeBufferPointer(bytes))
            }
        }
    }

    /// The ID of a new revision: generation parent+1, digest SHA-1 over the parent's ID
    /// (length-prefixed), the deletion flag and the canonical JSON body. Two peers that
    /// make the same change get the same ID.
    public static func make(parent: RevID?, deleted: Bool, canonicalBody: [UInt8]) -> RevID {
        // The parent's ID, the length prefix, the flag and the digest on the stack: this
        // runs on every save (arrays for them cost ~1,500 instructions; callgrind).
        let parentCount = parent?.utf8Count ?? 0
        let generation = (parent?.generation ?? 0) + 1
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: parentCount + 2 + SHA1.byteCount) { buf in
            if let parent { parent.write(into: buf) }
            buf[parentCount] = UInt8(truncatingIfNeeded: min(parentCount, 255))     // length prefix
            buf[parentCount + 1] = deleted ? 1 : 0
            let raw = UnsafeRawBufferPointer(buf)
            let digest = UnsafeMutableBufferPointer(rebasing: buf[(parentCount + 2)...])
            canonicalBody.withUnsafeBytes { body in
                SHA1.hash(UnsafeRawBufferPointer(rebasing: raw[parentCount..<(parentCount + 1)]),
                          UnsafeRawBufferPointer(rebasing: raw[0..<parentCount]),
                          UnsafeRawBufferPointer(rebasing: raw[(parentCount + 1)..<(parentCount + 2)]),
                          body, into: digest)
            }
            return RevID.compose(generation: generation, digestCount: 2 * SHA1.byteCount) {
                _ = Hex.write(UnsafeBufferPointer(digest), into: $0)
            }
        }
    }

    private init(generation: Int, string: String, digestStart: Int) {
        self.generation = generation
        self.string = string
        self.digestStart = digestStart
    }

    /// Writes `string`'s utf8Count bytes at the start of `out`.
    private func write(into out: UnsafeMutableBufferPointer<UInt8>) {
        var s = string
        s.withUTF8 { out.baseAddress!.update(from: $0.baseAddress!, count: $0.count) }   // never empty
    }
}
