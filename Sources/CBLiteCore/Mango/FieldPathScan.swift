/// FieldPath.lookup over a stored document's JSON text: walks the bytes to the one value
/// the path names, skipping the others unparsed, and parses only that value — what
/// SQLite's json_extract does — instead of parsing the whole document into a tree.
/// The text is a stored document (valid JSON, no duplicate members), so skipping does not
/// re-validate; the value found is parsed (and checked) by JSONParser.
extension FieldPath {
    func lookup(inJSON bytes: UnsafeBufferPointer<UInt8>) throws -> Lookup {
        var s = JSONSkipper(bytes)
        for p in parts {
            s.skipSpace()
            switch s.peek {
            case UInt8(ascii: "{"):
                s.pos += 1
                s.skipSpace()
                if s.peek == UInt8(ascii: "}") { return .notFound }
                while true {
                    s.skipSpace()
                    let keyStart = s.pos
                    try s.skipString()
                    let matched = try s.keyEquals(keyStart..<s.pos, p)
                    s.skipSpace()
                    guard s.peek == UInt8(ascii: ":") else { throw s.error }
                    s.pos += 1
                    if matched { break }
                    try s.skipValue()
                    s.skipSpace()
                    guard s.peek == UInt8(ascii: ",") else { return .notFound }
                    s.pos += 1
                }
            case UInt8(ascii: "["):
                guard let i = Int(p), i >= 0, p.first != "+" else { return .badPath }
                s.pos += 1
                s.skipSpace()
                if s.peek == UInt8(ascii: "]") { return .badPath }
                for _ in 0..<i {
                    try s.skipValue()
                    s.skipSpace()
                    guard s.peek == UInt8(ascii: ",") else { return .badPath }
                    s.pos += 1
                }
            default:
                return .badPath
            }
        }
        s.skipSpace()
        let start = s.pos
        try s.skipValue()
        return .found(try JSONParser.parse(bytes: UnsafeBufferPointer(rebasing: bytes[start..<s.pos])))
    }
}

/// Moves over JSON values in valid text without building them.
private struct JSONSkipper {
    let b: UnsafeBufferPointer<UInt8>
    var pos = 0

    init(_ b: UnsafeBufferPointer<UInt8>) { self.b = b }

    var error: CBLError { CBLError.badRequest("invalid JSON at byte \(pos)") }

    var peek: UInt8 { pos < b.count ? b[pos] : 0 }

    mutating func skipSpace() {
        while pos < b.count, b[pos] == 0x20 || b[pos] == 0x0A || b[pos] == 0x0D || b[pos] == 0x09 { pos += 1 }
    }

    /// From the opening quote to past the closing one.
    mutating func skipString() throws {
        guard peek == UInt8(ascii: "\"") else { throw error }
        pos += 1
        while pos < b.count {
            switch b[pos] {
            case UInt8(ascii: "\""): pos += 1; return
            case UInt8(ascii: "\\"): pos += 2
            default: pos += 1
            }
        }
        throw error
    }

    mutating func skipValue() throws {
        switch peek {
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            repeat {
                switch peek {
                case UInt8(ascii: "\""): try skipString(); continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
                case 0 where pos >= b.count: throw error
                default: break
                }
                pos += 1
            } while depth > 0
        default:    // number or literal: up to the next delimiter
            let start = pos
            while pos < b.count {
                let c = b[pos]
                if c == UInt8(ascii: ",") || c == UInt8(ascii: "}") || c == UInt8(ascii: "]") || c == 0x20
                    || c == 0x0A || c == 0x0D || c == 0x09 { break }
                pos += 1
            }
            if pos == start { throw error }
        }
    }

    /// Whether the quoted key at `r` is `name`, byte for byte as JSONObject compares
    /// (an escaped key is decoded first).
    func keyEquals(_ r: Range<Int>, _ name: String) throws -> Bool {
        let inner = UnsafeBufferPointer(rebasing: b[(r.lowerBound + 1)..<(r.upperBound - 1)])
        if !inner.contains(UInt8(ascii: "\\")) { return inner.elementsEqual(name.utf8) }
        guard case .string(let k) = try JSONParser.parse(bytes: UnsafeBufferPointer(rebasing: b[r])) else { throw error }
        return k.utf8.elementsEqual(name.utf8)
    }
}
