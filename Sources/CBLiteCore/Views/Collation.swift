import CICU
import CSQLCipher
import Glibc

/// CouchDB's view collation, applied to JSON text without building values:
///   null < false < true < numbers < strings < arrays < objects;
/// numbers by value; strings by the Unicode Collation Algorithm (ICU's root collator,
/// tertiary strength: "a" < "A" < "aa" < "b"); arrays element by element (a shorter
/// prefix first); objects member by member (key, then value), in their stored
/// (emitted) order.
///
/// Registered as the SQLite collation `CBL_JSON` on every connection, so view indexes are
/// kept in this order by SQLite itself. Strings that are plain ASCII (printable and
/// whitespace, no escapes) are compared with tables derived from ICU at start-up, which
/// give exactly ICU's order (a differential test holds them to it).
public enum Collation {
    public static let sqliteName = "CBL_JSON"

    /// Registers the collation on a connection (called from Connection.init).
    static func register(on conn: Connection) throws {
        let rc = sqlite3_create_collation_v2(conn.db, sqliteName, SQLITE_UTF8, nil, { _, n1, p1, n2, p2 in
            let a = UnsafeBufferPointer(start: p1?.assumingMemoryBound(to: UInt8.self), count: Int(n1))
            let b = UnsafeBufferPointer(start: p2?.assumingMemoryBound(to: UInt8.self), count: Int(n2))
            return Int32(Collation.compare(a, b))
        }, nil)
        if rc != SQLITE_OK { throw CBLError.internalError("could not register the \(sqliteName) collation (\(rc))") }
    }

    /// -1, 0 or 1 as JSON text `a` sorts before, equal to, or after `b`.
    public static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in compare(pa, pb) } }
    }

    public static func compare(_ a: String, _ b: String) -> Int { compare(Array(a.utf8), Array(b.utf8)) }

    /// The stored form of a key or value: compact JSON with object members in their
    /// given order (CouchDB compares objects member by member as emitted).
    public static func encode(_ v: JSONValue) -> [UInt8] {
        var w = JSONWriter(canonical: false)
        w.write(v)
        return w.bytes
    }

    /// Validates JSON text and returns its stored form.
    public static func encode(json: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        encode(try JSONParser.parse(bytes: json))
    }

    public static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        var ca = JSONCursor(a), cb = JSONCursor(b)
        return compareValues(&ca, &cb)
    }

    /// Compares two strings (already decoded UTF-8, no quotes) by the UCA.
    public static func compareStrings(_ a: String, _ b: String) -> Int {
        var a = a, b = b
        return a.withUTF8 { pa in b.withUTF8 { pb in compareUTF8(pa, pb) } }
    }

    /// Type rank of the value starting with byte `c`.
    @inline(__always)
    static func rank(_ c: UInt8) -> Int {
        switch c {
        case UInt8(ascii: "n"): return 0
        case UInt8(ascii: "f"): return 1
        case UInt8(ascii: "t"): return 2
        case UInt8(ascii: "\""): return 4
        case UInt8(ascii: "["): return 5
        case UInt8(ascii: "{"): return 6
        default: return 3      // '-' or a digit
        }
    }

    private static func compareValues(_ a: inout JSONCursor, _ b: inout JSONCursor) -> Int {
        a.skipSpace(); b.skipSpace()
        guard let x = a.peek() else { return b.peek() == nil ? 0 : -1 }
        guard let y = b.peek() else { return 1 }
        let ra = rank(x), rb = rank(y)
        if ra != rb { return ra < rb ? -1 : 1 }
        switch ra {
        case 0: a.advance(4); b.advance(4); return 0
        case 1: a.advance(5); b.advance(5); return 0
        case 2: a.advance(4); b.advance(4); return 0
        case 3: return compareNumbers(a.number(), b.number())
        case 4:
            let sa = a.stringToken(), sb = b.stringToken()
            return compareStringTokens(sa, sb)
        case 5:
            a.advance(1); b.advance(1)
            while true {
                a.skipSpace(); b.skipSpace()
                let ea = a.peek() == UInt8(ascii: "]") || a.peek() == nil
                let eb = b.peek() == UInt8(ascii: "]") || b.peek() == nil
                if ea || eb {
                    if ea && eb { a.advance(1); b.advance(1); return 0 }
                    return ea ? -1 : 1
                }
                let r = compareValues(&a, &b)
                if r != 0 { return r }
                a.skipSpace(); b.skipSpace()
                if a.peek() == UInt8(ascii: ",") { a.advance(1) }
                if b.peek() == UInt8(ascii: ",") { b.advance(1) }
            }
        default:
            a.advance(1); b.advance(1)
            while true {
                a.skipSpace(); b.skipSpace()
                let ea = a.peek() == UInt8(ascii: "}") || a.peek() == nil
                let eb = b.peek() == UInt8(ascii: "}") || b.peek() == nil
                if ea || eb {
                    if ea && eb { a.advance(1); b.advance(1); return 0 }
                    return ea ? -1 : 1
                }
                let r = compareStringTokens(a.stringToken(), b.stringToken())
                if r != 0 { return r }
                a.skipSpace(); b.skipSpace()
                if a.peek() == UInt8(ascii: ":") { a.advance(1) }
                if b.peek() == UInt8(ascii: ":") { b.advance(1) }
                let v = compareValues(&a, &b)
                if v != 0 { return v }
                a.skipSpace(); b.skipSpace()
                if a.peek() == UInt8(ascii: ",") { a.advance(1) }
                if b.peek() == UInt8(ascii: ",") { b.advance(1) }
            }
        }
    }

    // MARK: numbers

    enum Number { case int(Int64), double(Double) }

    private static func compareNumbers(_ a: Number, _ b: Number) -> Int {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x < y ? -1 : (x > y ? 1 : 0)
        default:
            let x = a.doubleValue, y = b.doubleValue
            return x < y ? -1 : (x > y ? 1 : 0)
        }
    }

    // MARK: strings

    /// A string token: its bytes between the quotes, whether it holds escapes, and
    /// whether it is fast-path ASCII.
    struct StringToken {
        let bytes: UnsafeBufferPointer<UInt8>
        let escaped: Bool
        let ascii: Bool
    }

    private static func compareStringTokens(_ a: StringToken, _ b: StringToken) -> Int {
        if a.ascii && b.ascii { return ASCIICollation.shared.compare(a.bytes, b.bytes) }
        if !a.escaped && !b.escaped { return compareUTF8(a.bytes, b.bytes) }
        let da = a.escaped ? unescape(a.bytes) : Array(a.bytes)
        let db = b.escaped ? unescape(b.bytes) : Array(b.bytes)
        return da.withUnsafeBufferPointer { pa in db.withUnsafeBufferPointer { pb in compareUTF8(pa, pb) } }
    }

    /// UCA comparison of UTF-8 strings (ASCII fast path when both qualify).
    static func compareUTF8(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let t = ASCIICollation.shared
        if t.qualifies(a) && t.qualifies(b) { return t.compare(a, b) }
        return ICU.shared.compare(a, b)
    }

    /// Decodes the JSON escapes of a string's contents into UTF-8, with the parser's rules
    /// (keys in the index were written by our own writer, so they are valid; anything else
    /// compares by its raw bytes).
    static func unescape(_ s: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var quoted = [UInt8](repeating: UInt8(ascii: "\""), count: s.count + 2)
        for (i, c) in s.enumerated() { quoted[i + 1] = c }
        let decoded = quoted.withUnsafeBufferPointer { try? JSONParser.parse(bytes: $0) }
        guard case .string(let text)? = decoded else { return Array(s) }
        return Array(text.utf8)
    }
}

extension Collation.Number {
    var doubleValue: Double {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        }
    }
}

/// A read position in JSON text.
struct JSONCursor {
    let base: UnsafePointer<UInt8>?
    var pos = 0
    let end: Int

    init(_ b: UnsafeBufferPointer<UInt8>) {
        base = b.baseAddress
        end = b.baseAddress == nil ? 0 : b.count
    }

    @inline(__always) func peek() -> UInt8? { pos < end ? base![pos] : nil }
    @inline(__always) mutating func advance(_ n: Int) { pos = min(end, pos + n) }

    @inline(__always) mutating func skipSpace() {
        while pos < end {
            let c = base![pos]
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { pos += 1 } else { break }
        }
    }

    /// Reads a number token.
    mutating func number() -> Collation.Number {
        let start = pos
        var isInt = true
        var digits = 0
        while pos < end {
            let c = base![pos]
            if c >= 0x30 && c <= 0x39 { digits += 1 }
            else if c == UInt8(ascii: "-") || c == UInt8(ascii: "+") {}
            else if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") { isInt = false }
            else { break }
            pos += 1
        }
        let n = pos - start
        if isInt && digits <= 18 && digits > 0 {
            var v: Int64 = 0
            var neg = false
            for i in start..<pos {
                let c = base![i]
                if c == UInt8(ascii: "-") { neg = true } else { v = v * 10 + Int64(c - 0x30) }
            }
            return .int(neg ? -v : v)
        }
        // strtod needs a NUL-terminated copy.
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: n + 1) { buf in
            for i in 0..<n { buf[i] = CChar(bitPattern: base![start + i]) }
            buf[n] = 0
            return .double(strtod(buf.baseAddress!, nil))
        }
    }

    /// Reads a string token (the cursor is on its opening quote).
    mutating func stringToken() -> Collation.StringToken {
        guard peek() == UInt8(ascii: "\"") else {
            return Collation.StringToken(bytes: UnsafeBufferPointer(start: nil, count: 0), escaped: false, ascii: true)
        }
        pos += 1
        let start = pos
        var escaped = false
        var ascii = true
        let table = ASCIICollation.shared
        while pos < end {
            let c = base![pos]
            if c == UInt8(ascii: "\"") { break }
            if c == UInt8(ascii: "\\") { escaped = true; ascii = false; pos += 2; continue }
            if ascii && !table.isFast(c) { ascii = false }
            pos += 1
        }
        let stop = min(pos, end)
        let bytes = UnsafeBufferPointer(start: base! + start, count: stop - start)
        pos = min(end, pos + 1)
        return Collation.StringToken(bytes: bytes, escaped: escaped, ascii: ascii)
    }
}

/// ICU's root collator (tertiary strength), opened once. ICU collators are thread-safe
/// for comparisons (const use since ICU 53).
final class ICU: @unchecked Sendable {
    static let shared = ICU()
    let collator: OpaquePointer?

    private init() {
        var status: Int32 = 0
        collator = cblite_ucol_open_root(&status)
        if status > 0 || collator == nil {
            Loggers.database.error("ICU collator could not be opened (status \(status)); strings compare by code point")
        }
    }

    func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        guard let collator else {
            let n = min(a.count, b.count)
            if n > 0, let pa = a.baseAddress, let pb = b.baseAddress {
                let r = memcmp(pa, pb, n)
                if r != 0 { return r < 0 ? -1 : 1 }
            }
            return a.count < b.count ? -1 : (a.count > b.count ? 1 : 0)
        }
        let empty: [CChar] = [0]
        return empty.withUnsafeBufferPointer { e in
            let pa = a.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) } ?? e.baseAddress!
            let pb = b.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) } ?? e.baseAddress!
            return Int(cblite_ucol_strcoll_utf8(collator, pa, Int32(a.count), pb, Int32(b.count)))
        }
    }

    static var version: String { String(cString: cblite_icu_version()) }
}

/// ICU's order for ASCII strings, precomputed from ICU itself: every printable ASCII
/// character and whitespace maps to one collation element in the root collation (no
/// contractions, expansions or ignorables), so comparing primary ranks, then the
/// tertiary (case) ranks, gives ICU's answer.
final class ASCIICollation: @unchecked Sendable {
    static let shared = ASCIICollation()

    /// primary[c] / tertiary[c]; fast[c] tells whether `c` may take the fast path.
    private var primary = [UInt16](repeating: 0, count: 128)
    private var tertiary = [UInt8](repeating: 0, count: 128)
    private var fast = [Bool](repeating: false, count: 256)

    private init() {
        var chars: [UInt8] = [0x09, 0x0A, 0x0B, 0x0C, 0x0D]
        chars += Array(0x20...0x7E)
        var status: Int32 = 0
        guard let prim = cblite_ucol_open_root_strength(1, &status), status <= 0 else { return }
        defer { cblite_ucol_close(prim) }
        func cmp(_ coll: OpaquePointer, _ x: UInt8, _ y: UInt8) -> Int32 {
            var a = CChar(bitPattern: x), b = CChar(bitPattern: y)
            return cblite_ucol_strcoll_utf8(coll, &a, 1, &b, 1)
        }
        guard let full = ICU.shared.collator else { return }
        // A character that compares equal to the empty string is ignorable: not fast.
        chars = chars.filter { c in
            var a = CChar(bitPattern: c), e: CChar = 0
            return cblite_ucol_strcoll_utf8(prim, &a, 1, &e, 0) != 0
        }
        let sorted = chars.sorted { cmp(full, $0, $1) < 0 }
        var rank: UInt16 = 0
        var groupStart = 0
        for (i, c) in sorted.enumerated() {
            if i > 0 && cmp(prim, sorted[i - 1], c) != 0 {
                rank += 1
                groupStart = i
            }
            primary[Int(c)] = rank + 1
            tertiary[Int(c)] = UInt8(i - groupStart)
            fast[Int(c)] = true
        }
    }

    @inline(__always) func isFast(_ c: UInt8) -> Bool { fast[Int(c)] }

    func qualifies(_ s: UnsafeBufferPointer<UInt8>) -> Bool {
        for c in s where !fast[Int(c)] { return false }
        return true
    }

    /// Both strings must qualify.
    func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let n = min(a.count, b.count)
        var tert = 0
        for i in 0..<n {
            let x = a[i], y = b[i]
            if x == y { continue }
            let px = primary[Int(x)], py = primary[Int(y)]
            if px != py { return px < py ? -1 : 1 }
            if tert == 0 { tert = tertiary[Int(x)] < tertiary[Int(y)] ? -1 : 1 }
        }
        if a.count != b.count { return a.count < b.count ? -1 : 1 }
        return tert
    }
}
