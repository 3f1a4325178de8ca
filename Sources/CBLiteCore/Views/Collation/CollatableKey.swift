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
/// A key's last number, when only end markers (00) follow it to the key's end, drops the
/// trailing 00 bytes of its double: 42 is 08 C0 45, not 9 bytes, and `[42]` 0A 08 C0 45 00,
/// not 11 (most view keys are small integers or Mango's `[n]`, stored twice per index
/// row). The dropped bytes are zeros followed only by zeros, so the trimmed key is the full
/// key less some of its trailing zeros, and memcmp order and equality stay: where the full
/// keys first differ, either both trimmed keys still hold that byte, or one has ended or
/// holds an end marker (00) where the other holds a nonzero byte that was the greater, and
/// a key that ends first sorts first; two different numbers differ in a byte both keep or
/// one keeps and the other has not (a nonzero one, the greater). A decoder knows a
/// number's length from what is left: 8 bytes, or fewer when the key ends early (what is
/// left less one end marker per enclosing array or object). A key used as a prefix that
/// is extended (an open bound's `[a, <MAX>]`) is made with every number's 8 bytes
/// (`encodePrefix`).
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
        var lastNumber = -1
        encodeItem(value, into: &out, lastNumber: &lastNumber)
        if lastNumber >= 0 { trimLastNumber(&out, at: lastNumber) }
    }

    /// `value`'s key with every number in 8 bytes: the bytes of a prefix that a bound
    /// extends (a trimmed last number would be a shorter prefix than its longer keys hold).
    static func encodePrefix(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        var lastNumber = -1
        encodeItem(value, into: &out, lastNumber: &lastNumber)
        return out
    }

    /// `lastNumber`: where the bytes of the last number appended start.
    private static func encodeItem(_ value: JSONValue, into out: inout [UInt8], lastNumber: inout Int) {
        switch value {
        case .null: out.append(null)
        case .bool(let b): out.append(b ? trueTag : falseTag)
        case .int(let i): appendNumber(Double(i), into: &out); lastNumber = out.count - 8
        case .double(let d): appendNumber(d, into: &out); lastNumber = out.count - 8
        case .bigInteger: appendNumber(value.doubleValue!, into: &out); lastNumber = out.count - 8
        case .string(let s):
            out.append(string)
            ICU.shared.appendSortKey(s, to: &out)
        case .array(let items):
            out.append(array)
            for item in items { encodeItem(item, into: &out, lastNumber: &lastNumber) }
            out.append(end)
        case .object(let o):
            out.append(object)
            for (name, v) in o.members {
                out.append(member)
                ICU.shared.appendSortKey(name, to: &out)
                encodeItem(v, into: &out, lastNumber: &lastNumber)
            }
            out.append(end)
        }
    }

    /// Drops the trailing zero bytes of the number whose 8 bytes start at `start` when only
    /// end markers follow it: the zeros dropped are the key's last bytes, whichever they are.
    private static func trimLastNumber(_ out: inout [UInt8], at start: Int) {
        let numberEnd = start + 8
        guard numberEnd <= out.count, out[numberEnd...].allSatisfy({ $0 == end }) else { return }
        var ordered: UInt64 = 0
        for i in start..<numberEnd { ordered = ordered << 8 | UInt64(out[i]) }
        out.removeLast(8 - trimmedLength(ordered))
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

    private static func appendNumber(_ d: Double, into out: inout [UInt8]) {
        out.append(number)
        withUnsafeBytes(of: orderedBits(d).bigEndian) { raw in
            out.append(contentsOf: raw.bindMemory(to: UInt8.self))   // one copy
        }
    }

    /// How many bytes the number whose bytes start at `pos` has, inside `depth` arrays and
    /// objects: 8, or what is left less the enclosing end markers when it was trimmed.
    @inline(__always)
    private static func numberLength(_ k: UnsafeBufferPointer<UInt8>, at pos: Int, depth: Int) -> Int {
        min(8, k.count - pos - depth)
    }

    /// The double of a number's ordered bytes (at most 8: missing ones are zeros).
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
        return appendItemJSON(key, &pos, depth: 0, to: &w) && pos == key.count
    }

    private static func appendItemJSON(_ k: UnsafeBufferPointer<UInt8>, _ pos: inout Int, depth: Int,
                                       to w: inout JSONWriter) -> Bool {
        guard pos < k.count else { return false }
        let tag = k[pos]
        pos += 1
        switch tag {
        case null: w.append("null")
        case falseTag: w.append("false")
        case trueTag: w.append("true")
        case number:
            let n = numberLength(k, at: pos, depth: depth)
            guard n > 0 else { return false }
            let d = decodeNumber(k[pos..<(pos + n)])
            pos += n
            guard isIntegral(d) else { return false }
            w.appendInt(Int64(d))
        case array:
            w.appendByte(UInt8(ascii: "["))
            var first = true
            while pos < k.count, k[pos] != end {
                if !first { w.appendByte(UInt8(ascii: ",")) }
                first = false
                guard appendItemJSON(k, &pos, depth: depth + 1, to: &w) else { return false }
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
            guard pos < key.count, key[pos] != end, skipValue(key, &pos, depth: 1) else { return nil }
        }
        return pos < key.count && key[pos] != end ? pos : nil
    }

    /// The order of the item at `start` of `key` and `item` (an encodeItem): both are
    /// self-delimiting, so bytes that agree over the whole of `item` are the same item. A
    /// key that ends first is its full form less trailing zeros: it compares as if padded
    /// with zeros (a well-formed key's full form is longer than any item it holds).
    static func compareItem(_ key: UnsafeBufferPointer<UInt8>, at start: Int, _ item: UnsafeBufferPointer<UInt8>) -> Int {
        let n = min(key.count - start, item.count)
        if n > 0 {
            let r = memcmp(key.baseAddress! + start, item.baseAddress!, n)
            if r != 0 { return r < 0 ? -1 : 1 }
        }
        for i in n..<item.count where item[i] != 0 { return -1 }
        return 0
    }

    /// `value` encoded as an item of an array key (a number keeps its 8 bytes): `item`'s
    /// bytes compare with it as the keys they are in do.
    static func encodeItem(_ value: JSONValue) -> [UInt8] { encodePrefix(value) }

    /// Moves `pos` past the encoded value starting there; false when the bytes are not a
    /// well-formed key.
    /// `depth`: the arrays and objects around the value. `lastNumber`, when the value holds
    /// numbers: where the last one's bytes start.
    private static func skipValue(_ k: UnsafeBufferPointer<UInt8>, _ pos: inout Int, depth: Int) -> Bool {
        var lastNumber = -1
        return skipValue(k, &pos, depth: depth, lastNumber: &lastNumber)
    }

    private static func skipValue(_ k: UnsafeBufferPointer<UInt8>, _ pos: inout Int, depth: Int,
                                  lastNumber: inout Int) -> Bool {
        guard pos < k.count else { return false }
        let tag = k[pos]
        pos += 1
        switch tag {
        case null, falseTag, trueTag: return true
        case number:
            let n = numberLength(k, at: pos, depth: depth)
            guard n > 0 else { return false }
            lastNumber = pos
            pos += n
            return true
        case string: return skipSortKey(k, &pos)
        case array:
            while pos < k.count, k[pos] != end {
                guard skipValue(k, &pos, depth: depth + 1, lastNumber: &lastNumber) else { return false }
            }
            pos += 1
            return pos <= k.count
        case object:
            while pos < k.count, k[pos] == member {
                pos += 1
                guard skipSortKey(k, &pos), skipValue(k, &pos, depth: depth + 1, lastNumber: &lastNumber) else { return false }
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
    /// same group at level 2: a group cut after a number trims it, as a key ending there is.
    static func groupPrefix(_ key: UnsafeBufferPointer<UInt8>, level: Int) -> [UInt8]? {
        guard key.first == array else { return level == 1 ? Array(key) : nil }
        var pos = 1
        var lastNumber = -1
        for _ in 0..<level {
            guard pos < key.count, key[pos] != end, skipValue(key, &pos, depth: 1, lastNumber: &lastNumber) else {
                return Array(key)
            }
        }
        guard pos < key.count - 1 else { return Array(key) }   // the whole key, trimmed already
        // An item follows the cut in the key, so the prefix's numbers have their 8 bytes.
        var out = Array(key[0..<pos]) + [end]
        if lastNumber >= 0 { trimLastNumber(&out, at: lastNumber) }
        return out
    }
}
