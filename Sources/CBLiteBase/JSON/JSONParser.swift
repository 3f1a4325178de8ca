/// A strict RFC 8259 parser over UTF-8 bytes: rejects invalid UTF-8, duplicate object
/// keys, non-finite numbers and nesting deeper than `maxDepth` (so hostile input cannot
/// exhaust the stack). Written here rather than taken from Foundation because
/// JSONSerialization needs full Foundation (+34 MB of ICU data) and Codable
/// loses number fidelity, which revision digests depend on.
public struct JSONParser {
    /// The deepest nesting of arrays and objects taken. CouchDB has no limit below its
    /// memory; real data nests a few dozen levels, and Python's json module (a common
    /// client's) gives up near 1,000. The consumers recurse once per level (parser,
    /// canonicalizer, writer, collation, JSONValue's == and release). Measured on a
    /// painted stack, a level of a save costs ~1.0 KB (arrays) to ~1.4 KB (objects) in the
    /// release library (Tests/c test_deep_documents: 1.4 MB at this limit) and up to
    /// ~5.7 KB in a debug build (DeepNestingTests): 1,000 levels fit, with room for the
    /// callers' frames, in the 8 MiB glibc gives every thread by default — callers',
    /// NIO event loops', Dispatch workers'.
    public static let maxDepth = 1000

    /// Protocol messages carry documents a few levels down (`_bulk_get`'s
    /// `{"results":[{"docs":[{"ok": doc}]}]}`: 5; `_bulk_docs`' `{"docs":[doc]}`: 2): they
    /// are read to this depth, and each document in them is held to `maxDepth` where it is
    /// stored (JSONDepth).
    public static let messageDepth = maxDepth + 8

    public static func parse(_ text: String) throws -> JSONValue {
        var copy = text
        return try copy.withUTF8 { try parse(bytes: $0) }
    }

    /// `depthLimit`: `maxDepth`, or `messageDepth` for a message that holds documents.
    public static func parse(bytes: UnsafeBufferPointer<UInt8>, depthLimit: Int = maxDepth) throws -> JSONValue {
        var p = JSONParser(bytes)
        p.depthLimit = depthLimit
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        guard p.pos == p.end else { throw p.error("unexpected data after the JSON value") }
        return v
    }

    /// Parses a JSON object (documents, options); anything else is a 400.
    public static func parseObject(bytes: UnsafeBufferPointer<UInt8>, what: String = "body") throws -> JSONObject {
        guard case .object(let o) = try parse(bytes: bytes) else {
            throw CBLError.badRequest("\(what) must be a JSON object")
        }
        return o
    }

    public static func parseObject(_ text: String, what: String = "body") throws -> JSONObject {
        var copy = text
        return try copy.withUTF8 { try parseObject(bytes: $0, what: what) }
    }

    private let base: UnsafePointer<UInt8>?
    private var pos = 0
    private let end: Int
    private var depthLimit = JSONParser.maxDepth

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        base = bytes.baseAddress
        end = bytes.count
    }

    private func error(_ message: String) -> CBLError {
        CBLError.badRequest("invalid JSON: \(message) at byte \(pos)")
    }

    @inline(__always) private func peek() -> UInt8? { pos < end ? base![pos] : nil }

    @inline(__always) private mutating func skipSpace() {
        while pos < end {
            let c = base![pos]
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { pos += 1 } else { break }
        }
    }

    private mutating func expect(_ literal: StaticString) throws {
        let n = literal.utf8CodeUnitCount
        guard end - pos >= n else { throw error("truncated literal") }
        for i in 0..<n where base![pos + i] != literal.utf8Start[i] { throw error("invalid literal") }
        pos += n
    }

    private mutating func value(depth: Int) throws -> JSONValue {
        guard let c = peek() else { throw error("unexpected end of input") }
        switch c {
        case UInt8(ascii: "{"):
            guard depth < depthLimit else { throw error("nesting deeper than \(depthLimit)") }
            return .object(try object(depth: depth + 1))
        case UInt8(ascii: "["):
            guard depth < depthLimit else { throw error("nesting deeper than \(depthLimit)") }
            return .array(try array(depth: depth + 1))
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character")
        }
    }

    private mutating func object(depth: Int) throws -> JSONObject {
        pos += 1
        var members: [(key: String, value: JSONValue)] = []
        skipSpace()
        if peek() == UInt8(ascii: "}") { pos += 1; return JSONObject(members) }
        while true {
            skipSpace()
            guard peek() == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let key = try string()
            skipSpace()
            guard peek() == UInt8(ascii: ":") else { throw error("expected ':'") }
            pos += 1
            skipSpace()
            let v = try value(depth: depth)
            // Keys are compared as code points (bytes), not by Swift's canonical equivalence:
            // "\u00e9" and "e\u0301" are different keys.
            if members.count < 32 {
                for m in members where m.key.utf8.elementsEqual(key.utf8) { throw error("duplicate key \"\(key)\"") }
            }
            members.append((key, v))
            skipSpace()
            guard let c = peek() else { throw error("unterminated object") }
            pos += 1
            if c == UInt8(ascii: "}") { break }
            guard c == UInt8(ascii: ",") else { throw error("expected ',' or '}'") }
        }
        if members.count > 32 {
            var seen = Set<[UInt8]>(minimumCapacity: members.count)
            for m in members where !seen.insert(Array(m.key.utf8)).inserted { throw error("duplicate key \"\(m.key)\"") }
        }
        return JSONObject(members)
    }

    private mutating func array(depth: Int) throws -> [JSONValue] {
        pos += 1
        var items: [JSONValue] = []
        skipSpace()
        if peek() == UInt8(ascii: "]") { pos += 1; return items }
        while true {
            skipSpace()
            items.append(try value(depth: depth))
            skipSpace()
            guard let c = peek() else { throw error("unterminated array") }
            pos += 1
            if c == UInt8(ascii: "]") { break }
            guard c == UInt8(ascii: ",") else { throw error("expected ',' or ']'") }
        }
        return items
    }

    private mutating func string() throws -> String {
        pos += 1
        let start = pos
        // Fast path: no escapes.
        while pos < end {
            let c = base![pos]
            if c == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(start: base! + start, count: pos - start)
                pos += 1
                guard UTF8Validation.isValid(raw) else { throw error("invalid UTF-8 in string") }
                return String(decoding: raw, as: UTF8.self)
            }
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw error("control character in string") }
            pos += 1
        }
        var buf = [UInt8](UnsafeBufferPointer(start: base! + start, count: pos - start))
        while true {
            guard pos < end else { throw error("unterminated string") }
            let c = base![pos]
            pos += 1
            if c == UInt8(ascii: "\"") { break }
            if c < 0x20 { throw error("control character in string") }
            if c != UInt8(ascii: "\\") { buf.append(c); continue }
            guard pos < end else { throw error("unterminated escape") }
            let e = base![pos]
            pos += 1
            switch e {
            case UInt8(ascii: "\""): buf.append(0x22)
            case UInt8(ascii: "\\"): buf.append(0x5C)
            case UInt8(ascii: "/"): buf.append(0x2F)
            case UInt8(ascii: "b"): buf.append(0x08)
            case UInt8(ascii: "f"): buf.append(0x0C)
            case UInt8(ascii: "n"): buf.append(0x0A)
            case UInt8(ascii: "r"): buf.append(0x0D)
            case UInt8(ascii: "t"): buf.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard end - pos >= 6, base![pos] == UInt8(ascii: "\\"), base![pos + 1] == UInt8(ascii: "u") else {
                        throw error("unpaired surrogate")
                    }
                    pos += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw error("unpaired surrogate")
                }
                buf.append(contentsOf: Array(String(Character(Unicode.Scalar(scalar)!)).utf8))
            default: throw error("invalid escape")
            }
        }
        guard let s = String(validating: buf, as: UTF8.self) else { throw error("invalid UTF-8 in string") }
        return s
    }

    private mutating func hex4() throws -> UInt32 {
        guard end - pos >= 4 else { throw error("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = base![pos]
            pos += 1
            let d: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape")
            }
            v = v << 4 | UInt32(d)
        }
        return v
    }

    private mutating func number() throws -> JSONValue {
        let start = pos
        guard let isInteger = JSONParser.scanNumber(base!, &pos, end) else { throw error("invalid number") }
        let text = String(decoding: UnsafeBufferPointer(start: base! + start, count: pos - start), as: UTF8.self)
        if isInteger { return Int64(text).map { .int($0) } ?? .bigInteger(text) }
        guard let d = Double(text), d.isFinite else { throw error("number out of range") }
        return .double(d)
    }

    /// Scans a number (RFC 8259 grammar) at base[pos...], advancing pos past it. Returns
    /// whether it is an integer literal (no fraction, no exponent), or nil when invalid.
    /// Shared with JSONCanonicalizer so both accept exactly the same numbers.
    package static func scanNumber(_ base: UnsafePointer<UInt8>, _ pos: inout Int, _ end: Int) -> Bool? {
        @inline(__always) func digit(_ i: Int) -> Bool { i < end && base[i] >= UInt8(ascii: "0") && base[i] <= UInt8(ascii: "9") }
        var isInteger = true
        if pos < end && base[pos] == UInt8(ascii: "-") { pos += 1 }
        guard digit(pos) else { return nil }
        if base[pos] == UInt8(ascii: "0") { pos += 1 } else { while digit(pos) { pos += 1 } }
        if pos < end && base[pos] == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            guard digit(pos) else { return nil }
            while digit(pos) { pos += 1 }
        }
        if pos < end && (base[pos] == UInt8(ascii: "e") || base[pos] == UInt8(ascii: "E")) {
            isInteger = false
            pos += 1
            if pos < end && (base[pos] == UInt8(ascii: "+") || base[pos] == UInt8(ascii: "-")) { pos += 1 }
            guard digit(pos) else { return nil }
            while digit(pos) { pos += 1 }
        }
        return isInteger
    }
}
