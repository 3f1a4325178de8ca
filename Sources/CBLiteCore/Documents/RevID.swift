/// A revision ID, "<generation>-<digest>". Ordering is the seeds' tie-break order:
/// generation numerically, then the digest by plain ASCII bytes.
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
        self.generation = generation
        var d = digest
        if generation >= 0 {
            string = d.withUTF8 { d in
                String(unsafeUninitializedCapacity: d.count + 21) { out in
                    var n = RevID.writeDigits(generation, into: out)
                    out[n] = UInt8(ascii: "-")
                    n += 1
                    for b in d { out[n] = b; n += 1 }
                    return n
                }
            }
        } else {
            string = "\(generation)-\(digest)"
        }
        digestStart = string.utf8.count - digest.utf8.count
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
            self.init(generation: gen, string: string, digestStart: RevID.digitCount(gen) + 1)

        }
    }

    public var description: String { string }

    /// The length of `string` in bytes.
    var utf8Count: Int { string.utf8.count }

    /// Appends `string`'s bytes (the tree encoder).
    func appendUTF8(to out: inout [UInt8]) {
        var s = string
        s.withUTF8 { out.append(contentsOf: $0) }
    }

    private static func digitCount(_ value: Int) -> Int {
        var digits = 1, g = value
        while g >= 10 { g /= 10; digits += 1 }
        return digits
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
        // Same generation, so the same "<generation>-" prefix: the strings order as the digests.
        return a.string.utf8.lexicographicallyPrecedes(b.string.utf8)
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
            var digestStart = 0
            let string = String(unsafeUninitializedCapacity: 21 + 2 * SHA1.byteCount) { out in
                var n = RevID.writeDigits(generation, into: out)
                out[n] = UInt8(ascii: "-")
                n += 1
                digestStart = n
                return n + Hex.write(UnsafeBufferPointer(digest), into: UnsafeMutableBufferPointer(rebasing: out[n...]))
            }
            return RevID(generation: generation, string: string, digestStart: digestStart)
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
        s.withUTF8 { for (i, b) in $0.enumerated() { out[i] = b } }
    }
}
