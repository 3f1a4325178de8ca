import Glibc

/// The index form of a view key: bytes whose plain byte order (memcmp) is CouchDB's view
/// collation, so SQLite keeps and searches view indexes with its built-in BINARY
/// comparison instead of calling back into a collation function on every b-tree step.
///
///     null      05
///     false     06
///     true      07
///     number    08 + 8 bytes: the IEEE double, sign-flipped so bytes order as values
///     string    09 + ICU sort key (root collator, tertiary strength; ends with its only 00)
///     array     0A + items + 00
///     object    0B + (01 + member name's sort key + value)* + 00
///
/// A shorter array or object sorts first because its 00 end comes before any item.
/// A key that is a number alone drops the trailing 00 bytes of its double (42 is
/// 08 C0 45, not 9 bytes): nothing follows it, and memcmp puts a prefix first, as the
/// zeros would have (most view keys are small integers, stored twice per index row).
/// Numbers compare as doubles (as JavaScript and Couchbase Lite do), so integers beyond
/// 2^53 that round to the same double are equal keys; an integer beyond 64 bits collates
/// by its value so rounded, and its row still shows the key's exact digits. Strings are collated once, when the
/// key is encoded, by ICU's sort keys — which ICU guarantees order exactly as its
/// comparison does. Sort keys depend on ICU's collation data, so an index records its
/// IndexFormat (which names the collator's version when a key needed it) and is rebuilt
/// when it changes.
public enum CollatableKey {
    static let end: UInt8 = 0x00
    static let member: UInt8 = 0x01
    static let null: UInt8 = 0x05
    static let falseTag: UInt8 = 0x06
    static let trueTag: UInt8 = 0x07
    static let number: UInt8 = 0x08
    static let string: UInt8 = 0x09
    static let array: UInt8 = 0x0A
    static let object: UInt8 = 0x0B

    public static func encode(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16)
        encode(value, into: &out)
        return out
    }

    public static func encode(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .int(let i): appendNumber(Double(i), into: &out, trimmed: true)
        case .double(let d): appendNumber(d, into: &out, trimmed: true)
        case .bigInteger: appendNumber(value.doubleValue!, into: &out, trimmed: true)
        default: encodeItem(value, into: &out)
        }
    }

    private static func encodeItem(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(null)
        case .bool(let b): out.append(b ? trueTag : falseTag)
        case .int(let i): appendNumber(Double(i), into: &out)
        case .double(let d): appendNumber(d, into: &out)
        case .bigInteger: appendNumber(value.doubleValue!, into: &out)
        case .string(let s):
            out.append(string)
            ICU.shared.appendSortKey(s, to: &out)
        case .array(let items):
            out.append(array)
            for item in items { encodeItem(item, into: &out) }
            out.append(end)
        case .object(let o):
            out.append(object)
            for (name, v) in o.members {
                out.append(member)
                ICU.shared.appendSortKey(name, to: &out)
                encodeItem(v, into: &out)
            }
            out.append(end)
        }
    }

    /// A double's 8 bytes as a big-endian number whose order is the doubles' order.
    @inline(__always)
    static func orderedBits(_ d: Double) -> UInt64 {
        let bits = (d == 0 ? 0.0 : d).bitPattern          // -0 and 0 are one key
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    /// How many of a number's ordered bytes a key of the number alone keeps (its trailing
    /// zero bytes dropped).
    @inline(__always)
    static func trimmedLength(_ ordered: UInt64) -> Int { 8 - ordered.trailingZeroBitCount / 8 }

    private static func appendNumber(_ d: Double, into out: inout [UInt8], trimmed: Bool = false) {
        out.append(number)
        let ordered = orderedBits(d)
        let kept = trimmed ? trimmedLength(ordered) : 8
        withUnsafeBytes(of: ordered.bigEndian) { raw in
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[0..<kept]).bindMemory(to: UInt8.self))   // one copy
        }
    }

    /// The double of the number whose (at most 8) ordered bytes follow `pos`.
    private static func decodeNumber(_ bytes: UnsafeBufferPointer<UInt8>.SubSequence) -> Double {
        var ordered: UInt64 = 0
        for (i, b) in bytes.enumerated() { ordered |= UInt64(b) << (56 - 8 * UInt64(i)) }
        let bits = ordered & (1 << 63) != 0 ? ordered & ~(1 << 63) : ~ordered
        return Double(bitPattern: bits)
    }

    /// Whether a key's compact JSON (Collation.compactJSON) can be made again from its
    /// CollatableKey alone (`appendJSON`): null, booleans, numbers that print as integers,
    /// and arrays of these. Strings cannot (a sort key is not reversible), nor can member
    /// names, nor other numbers (their text would cost a formatting per row read).
    /// Whether encoding `value` asks ICU for a sort key: it holds a string or an object
    /// (member names are strings). Decides the index's format (IndexFormat).
    static func needsCollator(_ value: JSONValue) -> Bool {
        switch value {
        case .null, .bool, .int, .double, .bigInteger: return false
        case .string, .object: return true
        case .array(let items): return items.contains(where: needsCollator)
        }
    }

    public static func jsonIsRecoverable(_ value: JSONValue) -> Bool {
        switch value {
        case .null, .bool: return true
        case .int(let i): return i.magnitude < 1 << 53
        case .double(let d): return isIntegral(d)
        case .array(let items): return items.allSatisfy(jsonIsRecoverable)
        case .string, .object, .bigInteger: return false
        }
    }

    /// What JSONWriter prints as an integer.
    private static func isIntegral(_ d: Double) -> Bool { d.rounded() == d && abs(d) < 9.007199254740992e15 }

    /// Appends the compact JSON of a key `jsonIsRecoverable` accepted, made from its
    /// CollatableKey; false (and nothing reliable appended) for any other key.
    public static func appendJSON(_ key: UnsafeBufferPointer<UInt8>, to w: inout JSONWriter) -> Bool {
        guard let tag = key.first else { return false }
        if tag == number {
            let d = decodeNumber(key[1..<min(key.count, 9)])
            guard isIntegral(d) else { return false }
            w.appendInt(Int64(d))
            return true
        }
        var pos = 0
        return appendItemJSON(key, &pos, to: &w) && pos == key.count
    }

    private static func appendItemJSON(_ k: UnsafeBufferPointer<UInt8>, _ pos: inout Int, to w: inout JSONWriter) -> Bool {
        guard pos < k.count else { return false }
        let tag = k[pos]
        pos += 1
        switch tag {
        case null: w.append("null")
        case falseTag: w.append("false")
        case trueTag: w.append("true")
        case number:
            guard pos + 8 <= k.count else { return false }
            let d = decodeNumber(k[pos..<(pos + 8)])
            pos += 8
            guard isIntegral(d) else { return false }
            w.appendInt(Int64(d))
        case array:
            w.appendByte(UInt8(ascii: "["))
            var first = true
            while pos < k.count, k[pos] != end {
                if !first { w.appendByte(UInt8(ascii: ",")) }
                first = false
                guard appendItemJSON(k, &pos, to: &w) else { return false }
            }
            guard pos < k.count else { return false }
            pos += 1
            w.appendByte(UInt8(ascii: "]"))
        default: return false
        }
        return true
    }

    /// -1, 0 or 1: memcmp order, shorter first on a common prefix.
    public static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let n = min(a.count, b.count)
        if n > 0 {
            let r = memcmp(a.baseAddress!, b.baseAddress!, n)
            if r != 0 { return r < 0 ? -1 : 1 }
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }

    public static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in compare(pa, pb) } }
    }

    /// Where item `index` of an array key (a Mango index's key: one item a column) starts,
    /// nil when the key is not an array that long. Items are self-delimiting, so an item
    /// compares with an encoded value over the value's length (`compareItem`).
    static func itemStart(_ key: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
        guard key.first == array else { return nil }
        var pos = 1
        for _ in 0..<index {
            guard pos < key.count, key[pos] != end, skipValue(key, &pos) else { return nil }
        }
        return pos < key.count && key[pos] != end ? pos : nil
    }

    /// The order of the item at `start` of `key` and `item` (an encodeItem): both are
    /// self-delimiting, so bytes that agree over the whole of `item` are the same item.
    static func compareItem(_ key: UnsafeBufferPointer<UInt8>, at start: Int, _ item: UnsafeBufferPointer<UInt8>) -> Int {
        let n = min(key.count - start, item.count)
        if n > 0 {
            let r = memcmp(key.baseAddress! + start, item.baseAddress!, n)
            if r != 0 { return r < 0 ? -1 : 1 }
        }
        return n == item.count ? 0 : -1          // a truncated key sorts first
    }

    /// `value` encoded as an item of an array key (a number keeps its 8 bytes): `item`'s
    /// bytes compare with it as the keys they are in do.
    static func encodeItem(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        encodeItem(value, into: &out)
        return out
    }

    /// Moves `pos` past the encoded value starting there; false when the bytes are not a
    /// well-formed key.
    private static func skipValue(_ k: UnsafeBufferPointer<UInt8>, _ pos: inout Int) -> Bool {
        guard pos < k.count else { return false }
        let tag = k[pos]
        pos += 1
        switch tag {
        case null, falseTag, trueTag: return true
        case number:
            pos += 8                 // in arrays and objects numbers keep their 8 bytes
            return pos <= k.count
        case string: return skipSortKey(k, &pos)
        case array:
            while pos < k.count, k[pos] != end { guard skipValue(k, &pos) else { return false } }
            pos += 1
            return pos <= k.count
        case object:
            while pos < k.count, k[pos] == member {
                pos += 1
                guard skipSortKey(k, &pos), skipValue(k, &pos) else { return false }
            }
            guard pos < k.count, k[pos] == end else { return false }
            pos += 1
            return true
        default: return false
        }
    }

    private static func skipSortKey(_ k: UnsafeBufferPointer<UInt8>, _ pos: inout Int) -> Bool {
        while pos < k.count, k[pos] != 0 { pos += 1 }
        guard pos < k.count else { return false }
        pos += 1
        return true
    }

    /// The group of a key at a group level, as the seeds define it: an array key's first
    /// `level` items (the whole key when it has no more), a non-array key itself at level
    /// 1; nil when a non-array key is left out (levels above 1). [1,2] and [1,2,3] have the
    /// same group at level 2.
    static func groupPrefix(_ key: UnsafeBufferPointer<UInt8>, level: Int) -> [UInt8]? {
        guard key.first == array else { return level == 1 ? Array(key) : nil }
        var pos = 1
        for _ in 0..<level {
            guard pos < key.count, key[pos] != end, skipValue(key, &pos) else { return Array(key) }
        }
        return Array(key[0..<pos]) + [end]
    }
}
