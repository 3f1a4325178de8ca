import Glibc

/// Serializes JSON compactly. `canonical` sorts object keys by their UTF-8 bytes, the
/// form revision digests are computed over (and bodies are stored in), so the same
/// content always has the same bytes on every peer.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    private let sortKeys: Bool

    public init(canonical: Bool = true, capacity: Int = 256) {
        sortKeys = canonical
        bytes.reserveCapacity(capacity)
    }

    public static func canonical(_ value: JSONValue) -> [UInt8] {
        var w = JSONWriter()
        w.write(value)
        return w.bytes
    }

    /// Objects' members in their given order (answers shaped like CouchDB's).
    public static func ordered(_ value: JSONValue) -> [UInt8] {
        var w = JSONWriter(canonical: false)
        w.write(value)
        return w.bytes
    }

    public static func canonicalString(_ value: JSONValue) -> String {
        String(decoding: canonical(value), as: UTF8.self)
    }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case .bool(let b): append(b ? "true" : "false")
        case .int(let i): appendInt(i)
        case .double(let d): writeDouble(d)
        case .bigInteger(let text): append(text)
        case .string(let s): writeString(s)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                write(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let o): writeObject(o)
        }
    }

    public mutating func writeObject(_ o: JSONObject, skipping skip: ((String) -> Bool)? = nil) {
        bytes.append(UInt8(ascii: "{"))
        var first = true
        let members = sortKeys && o.members.count > 1
            ? o.members.sorted { JSONWriter.utf8Less($0.key, $1.key) }
            : o.members
        for m in members {
            if let skip, skip(m.key) { continue }
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            writeString(m.key)
            bytes.append(UInt8(ascii: ":"))
            write(m.value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Appends already-serialized JSON (e.g. a stored body).
    public mutating func appendRaw<C: Swift.Collection>(_ raw: C) where C.Element == UInt8 { bytes.append(contentsOf: raw) }
    public mutating func append(_ s: String) {
        var s = s      // contiguous UTF-8: one copy, not the UTF8View's generic iteration (callgrind)
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }
    public mutating func appendByte(_ b: UInt8) { bytes.append(b) }

    /// Appends an integer's decimal digits, with no String made on the way (the changes
    /// feed writes one per entry).
    public mutating func appendInt(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buf in
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buf[0..<DecimalText.write(value.magnitude, into: buf)]))
        }
    }

    private mutating func writeDouble(_ d: Double) {
        // Integral values print as integers so that 1.0 and 1 have one canonical form.
        if d.rounded() == d && abs(d) < 9.007199254740992e15 {
            appendInt(Int64(d))
        } else {
            append(String(describing: d))
        }
    }

    /// Appends a JSON string literal. Runs without escapes are copied in one piece
    /// (this is the hottest function of reads and the changes feed).
    public mutating func writeString(_ s: String) {
        var s = s
        s.withUTF8 { writeString(utf8: $0) }
    }

    /// A JSON string literal from UTF-8 bytes (e.g. straight from a SQLite column).
    public mutating func writeString(utf8 buf: UnsafeBufferPointer<UInt8>) {
        do {
            bytes.append(UInt8(ascii: "\""))
            let clean = JSONWriter.escapeFreePrefix(buf)
            if clean == buf.count {
                bytes.append(contentsOf: buf)
                bytes.append(UInt8(ascii: "\""))
                return
            }
            var start = 0
            for i in clean..<buf.count {
                let c = buf[i]
                guard c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 else { continue }
                if i > start { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buf[start..<i])) }
                appendEscape(c)
                start = i + 1
            }
            if start < buf.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buf[start...])) }
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// How many leading bytes need no escape, found 8 at a time: a byte that is '"', '\\'
    /// or below 0x20 sets its high bit in one of the three masks (SWAR; a borrow can flag
    /// a byte after a real hit, never before one, so the first word with a hit is then
    /// scanned byte by byte). Document IDs and revision IDs are written on every read.
    package static func escapeFreePrefix(_ buf: UnsafeBufferPointer<UInt8>) -> Int {
        guard let p = buf.baseAddress else { return 0 }
        let n = buf.count
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        while i + 8 <= n {
            let x = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
            let quote = x ^ (ones &* 0x22), backslash = x ^ (ones &* 0x5C)
            let hit = ((x &- ones &* 0x20) & ~x) | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
            if hit & highs != 0 { break }
            i += 8
        }
        while i < n {
            let c = p[i]
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 { return i }
            i += 1
        }
        return n
    }

    private mutating func appendEscape(_ c: UInt8) {
        bytes.append(0x5C)
        switch c {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(c)
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        default:
            let hex: StaticString = "0123456789abcdef"
            bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                      hex.utf8Start[Int(c >> 4)], hex.utf8Start[Int(c & 15)]])
        }
    }

    /// Byte-wise (UTF-8) order of two strings: the canonical key order.
    @inline(__always)
    package static func utf8Less(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { pa in
            b.withUTF8 { pb in
                let n = min(pa.count, pb.count)
                if n > 0 {
                    let r = memcmp(pa.baseAddress!, pb.baseAddress!, n)
                    if r != 0 { return r < 0 }
                }
                return pa.count < pb.count
            }
        }
    }
}

extension JSONValue {
    /// Compact JSON text (keys sorted).
    public var jsonString: String { JSONWriter.canonicalString(self) }
}

extension Array where Element == String {
    /// A JSON array of strings.
    public var jsonArrayString: String { JSONValue.array(map { .string($0) }).jsonString }
}
