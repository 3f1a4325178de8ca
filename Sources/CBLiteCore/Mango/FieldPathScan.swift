import Glibc

/// FieldPath.lookup over a stored document's JSON text: walks the bytes to the one value
/// the path names, skipping the others unparsed, and parses only that value — what
/// SQLite's json_extract does — instead of parsing the whole document into a tree.
/// The text is a stored document (valid JSON, no duplicate members), so skipping does not
/// re-validate; the value found is parsed (and checked) by JSONParser, except the plain
/// integers, literals and unescaped strings that make most of them, which read as
/// JSONParser reads them without its set-up (callgrind: a third of a match's cost).
extension FieldPath {
    func lookup(inJSON bytes: UnsafeBufferPointer<UInt8>) throws -> Lookup {
        switch try locate(inJSON: bytes) {
        case .found(let text): return .found(try FieldPath.value(text))
        case .notFound: return .notFound
        case .badPath: return .badPath
        }
    }

    /// Where the value lies in the text, unparsed (an index's map reads a plain integer's
    /// digits without making a JSONValue of them).
    enum Location {
        case found(UnsafeBufferPointer<UInt8>)
        case notFound
        case badPath
    }

    func locate(inJSON bytes: UnsafeBufferPointer<UInt8>) throws -> Location {
        try scanner.locate(inJSON: bytes)
    }

    /// The value of one JSON text (valid: it was skipped over).
    static func value(_ text: UnsafeBufferPointer<UInt8>) throws -> JSONValue {
        guard let first = text.first else { throw JSONSkipper.error(0) }
        switch first {
        case UInt8(ascii: "\""):
            let inner = UnsafeBufferPointer(rebasing: text[1..<(text.count - 1)])
            if inner.isEmpty || memchr(inner.baseAddress!, Int32(UInt8(ascii: "\\")), inner.count) == nil {
                return .string(String(decoding: inner, as: UTF8.self))
            }
        case UInt8(ascii: "t") where text.count == 4: return .bool(true)
        case UInt8(ascii: "f") where text.count == 5: return .bool(false)
        case UInt8(ascii: "n") where text.count == 4: return .null
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
            if let n = MappedBatch.plainInteger(text) { return .int(n) }
        default: break
        }
        return try JSONParser.parse(bytes: text)
    }
}

/// A FieldPath's parts as a scan of JSON text reads them: each part's UTF-8 and, when it
/// can name an array position, that position, in memory of plain values made once. A scan
/// then costs no reference counting, where reading the parts out of arrays of arrays
/// retained and released them for every document, and a member name is compared in place
/// where it was skipped then compared through a call: a one-field index's build, N=100,000,
/// 1,177 M -> 1,123 M instructions (the map's lookups 1,628 -> 1,161 a document; callgrind).
final class FieldPathScanner: @unchecked Sendable {    // immutable once made
    fileprivate struct Part {
        let name: UnsafePointer<UInt8>
        let count: Int
        let position: Int?
        /// No quote or backslash in the name: a member name written with no escape is
        /// this name exactly when its bytes are the name's followed by the closing quote.
        let plain: Bool
    }

    private let names: UnsafeMutableBufferPointer<UInt8>
    private let parts: UnsafeMutableBufferPointer<Part>
    private let partCount: Int

    init(_ texts: [String]) {
        let names = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(1, texts.reduce(0) { $0 + $1.utf8.count }))
        let parts = UnsafeMutableBufferPointer<Part>.allocate(capacity: max(1, texts.count))
        var at = 0
        for (i, text) in texts.enumerated() {
            let bytes = Array(text.utf8)
            _ = UnsafeMutableBufferPointer(rebasing: names[at..<(at + bytes.count)]).initialize(from: bytes)
            let plain = !bytes.contains(UInt8(ascii: "\"")) && !bytes.contains(UInt8(ascii: "\\"))
            (parts.baseAddress! + i).initialize(to: Part(
                name: UnsafePointer(names.baseAddress! + at), count: bytes.count,
                position: Int(text).flatMap { n in n >= 0 && text.first != "+" ? n : nil }, plain: plain))
            at += bytes.count
        }
        self.names = names
        self.parts = parts
        partCount = texts.count
    }

    deinit {
        parts.baseAddress!.deinitialize(count: partCount)
        parts.deallocate()
        names.deallocate()
    }

    func locate(inJSON bytes: UnsafeBufferPointer<UInt8>) throws -> FieldPath.Location {
        guard let base = bytes.baseAddress else { throw JSONSkipper.error(0) }
        var s = JSONSkipper(base: base, end: base + bytes.count)
        for k in 0..<partCount {
            let part = parts[k]
            s.skipSpace()
            switch s.peek {
            case UInt8(ascii: "{"):
                s.p += 1
                s.skipSpace()
                if s.peek == UInt8(ascii: "}") { return .notFound }
                while true {
                    s.skipSpace()
                    let matched = try s.skipKey(equalTo: part)
                    s.skipSpace()
                    guard s.peek == UInt8(ascii: ":") else { throw s.error }
                    s.p += 1
                    if matched { break }
                    try s.skipValue()
                    s.skipSpace()
                    guard s.peek == UInt8(ascii: ",") else { return .notFound }
                    s.p += 1
                }
            case UInt8(ascii: "["):
                guard let i = part.position else { return .badPath }
                s.p += 1
                s.skipSpace()
                if s.peek == UInt8(ascii: "]") { return .badPath }
                for _ in 0..<i {
                    try s.skipValue()
                    s.skipSpace()
                    guard s.peek == UInt8(ascii: ",") else { return .badPath }
                    s.p += 1
                }
            default:
                return .badPath
            }
        }
        s.skipSpace()
        let start = s.p
        try s.skipValue()
        return .found(UnsafeBufferPointer(start: start, count: s.p - start))
    }
}

/// Moves over JSON values in valid text without building them.
private struct JSONSkipper {
    var p: UnsafePointer<UInt8>
    let end: UnsafePointer<UInt8>
    let base: UnsafePointer<UInt8>

    init(base: UnsafePointer<UInt8>, end: UnsafePointer<UInt8>) {
        self.base = base
        self.end = end
        p = base
    }

    static func error(_ at: Int) -> CBLError { CBLError.badRequest("invalid JSON at byte \(at)") }
    var error: CBLError { JSONSkipper.error(p - base) }

    @inline(__always) var peek: UInt8 { p < end ? p.pointee : 0 }

    @inline(__always) mutating func skipSpace() {
        while p < end, p.pointee == 0x20 || p.pointee == 0x0A || p.pointee == 0x0D || p.pointee == 0x09 { p += 1 }
    }

    /// From the opening quote to past the closing one: the next quote found by memchr
    /// (a byte loop cost ~6 instructions a byte, most of a build's lookups), unless an odd
    /// run of backslashes escapes it.
    mutating func skipString() throws {
        guard peek == UInt8(ascii: "\"") else { throw error }
        p += 1
        while p < end {
            guard let q = memchr(p, Int32(UInt8(ascii: "\"")), end - p) else { break }
            let quote = q.assumingMemoryBound(to: UInt8.self)
            var backslashes = 0
            while quote - backslashes - 1 >= p && (quote - backslashes - 1).pointee == UInt8(ascii: "\\") { backslashes += 1 }
            p = UnsafePointer(quote) + 1
            if backslashes % 2 == 0 { return }
        }
        throw error
    }

    /// Skips a member's quoted name; whether it is the part's name, compared as JSONObject
    /// compares names: bytes, once an escaped name is decoded. A plain name is compared in
    /// place first, byte by byte (most names differ at their first byte).
    @inline(__always) fileprivate mutating func skipKey(equalTo part: FieldPathScanner.Part) throws -> Bool {
        guard peek == UInt8(ascii: "\"") else { throw error }
        let start = p
        let q = p + 1
        if part.plain {
            var i = 0
            while i < part.count && q + i < end && q[i] == part.name[i] { i += 1 }
            if i == part.count && q + i < end && q[i] == UInt8(ascii: "\"") {
                p = q + i + 1
                return true
            }
        }
        p = q
        var escaped = false
        while true {
            guard p < end else { throw error }
            let c = p.pointee
            if c == UInt8(ascii: "\"") { break }
            if c == UInt8(ascii: "\\") { escaped = true; p += 2 } else { p += 1 }
        }
        p += 1
        // Unescaped, the name is its bytes: a plain part's were compared above, and a part
        // holding a quote or a backslash cannot be written without escapes.
        if !escaped { return false }
        let name = UnsafeBufferPointer(start: part.name, count: part.count)
        guard case .string(let k) = try JSONParser.parse(bytes: UnsafeBufferPointer(start: start, count: p - start)) else { throw error }
        return k.utf8.elementsEqual(name)
    }

    mutating func skipValue() throws {
        switch peek {
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            repeat {
                guard p < end else { throw error }
                switch p.pointee {
                case UInt8(ascii: "\""): try skipString(); continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
                default: break
                }
                p += 1
            } while depth > 0
        default:    // number or literal: up to the next delimiter
            let start = p
            while p < end {
                let c = p.pointee
                if c == UInt8(ascii: ",") || c == UInt8(ascii: "}") || c == UInt8(ascii: "]") || c == 0x20
                    || c == 0x0A || c == 0x0D || c == 0x09 { break }
                p += 1
            }
            if p == start { throw error }
        }
    }
}

extension UnsafeBufferPointer where Element == UInt8 {
    /// Byte equality by memcmp (the generic elementsEqual cost ~10 instructions a byte).
    @inline(__always) func sameBytes(_ other: UnsafeBufferPointer<UInt8>) -> Bool {
        count == other.count && (count == 0 || memcmp(baseAddress!, other.baseAddress!, count) == 0)
    }
}
