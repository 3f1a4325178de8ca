/// A revision ID, "<generation>-<digest>". Ordering is the seeds' tie-break order:
/// generation numerically, then the digest by plain ASCII bytes.
public struct RevID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let generation: Int
    public let digest: String

    public init(generation: Int, digest: String) {
        self.generation = generation
        self.digest = digest
    }

    /// Parses "<gen>-<digest>": gen a positive decimal, digest 1–128 printable ASCII
    /// characters (peers may use other digests than ours); a 32-hex-digit digest is
    /// lower-cased, as CouchDB does.
    public init?(_ string: String) {
        var copy = string
        let parsed: (Int, String)? = copy.withUTF8 { buf in
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
            return (gen, String(decoding: digest, as: UTF8.self))
        }
        guard let (gen, digest) = parsed else { return nil }
        generation = gen
        self.digest = digest
    }

    public var description: String { string }

    /// "<generation>-<digest>", written straight into one buffer: the save path makes
    /// this string several times a document, and interpolation cost ~500 instructions
    /// a time (callgrind).
    public var string: String {
        guard generation >= 0 else { return "\(generation)-\(digest)" }
        var digest = self.digest
        return digest.withUTF8 { d in
            String(unsafeUninitializedCapacity: d.count + 21) { out in
                var n = RevID.writeDigits(generation, into: out)
                out[n] = UInt8(ascii: "-")
                n += 1
                for b in d { out[n] = b; n += 1 }
                return n
            }
        }
    }

    /// The length of `string` in bytes.
    var utf8Count: Int {
        guard generation >= 0 else { return string.utf8.count }
        var digits = 1, g = generation
        while g >= 10 { g /= 10; digits += 1 }
        return digits + 1 + digest.utf8.count
    }

    /// Appends `string`'s bytes without making the string (the tree encoder, the revision
    /// ID hash: each string is a heap allocation).
    func appendUTF8(to out: inout [UInt8]) {
        guard generation >= 0 else { out.append(contentsOf: string.utf8); return }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buf in
            let n = RevID.writeDigits(generation, into: buf)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buf[0..<n]))
        }
        out.append(UInt8(ascii: "-"))
        out.append(contentsOf: digest.utf8)
    }

    /// Writes the decimal digits of `value` (>= 0) at the start of `out`; returns how many.
    private static func writeDigits(_ value: Int, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var divisor = 1
        while value / divisor >= 10 { divisor *= 10 }
        var n = 0, g = value
        while divisor > 0 {
            out[n] = UInt8(truncatingIfNeeded: 0x30 + g / divisor)
            g %= divisor
            divisor /= 10
            n += 1
        }
        return n
    }

    public static func < (a: RevID, b: RevID) -> Bool {
        if a.generation != b.generation { return a.generation < b.generation }
        return a.digest.utf8.lexicographicallyPrecedes(b.digest.utf8)
    }

    /// The ID of a new revision: generation parent+1, digest SHA-1 over the parent's ID
    /// (length-prefixed), the deletion flag and the canonical JSON body. Two peers that
    /// make the same change get the same ID.
    public static func make(parent: RevID?, deleted: Bool, canonicalBody: [UInt8]) -> RevID {
        var parentBytes: [UInt8] = []
        if let parent {
            parentBytes.reserveCapacity(parent.utf8Count)
            parent.appendUTF8(to: &parentBytes)
        }
        var prefix: UInt8 = UInt8(truncatingIfNeeded: min(parentBytes.count, 255))
        var flag: UInt8 = deleted ? 1 : 0
        // One call over the four pieces, on a context OpenSSL keeps per thread.
        let digest = withUnsafeBytes(of: &prefix) { p in
            withUnsafeBytes(of: &flag) { f in
                parentBytes.withUnsafeBytes { parentBuf in
                    canonicalBody.withUnsafeBytes { body in SHA1.hash(parts: [p, parentBuf, f, body]) }
                }
            }
        }
        return RevID(generation: (parent?.generation ?? 0) + 1, digest: Hex.encode(digest))
    }
}
