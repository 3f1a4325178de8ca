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

    public static func canonicalString(_ value: JSONValue) -> String {
        String(decoding: canonical(value), as: UTF8.self)
    }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case .bool(let b): append(b ? "true" : "false")
        case .int(let i): append(String(i))
        case .double(let d): writeDouble(d)
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
            ? o.members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
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
    public mutating func append(_ s: String) { bytes.append(contentsOf: s.utf8) }
    public mutating func appendByte(_ b: UInt8) { bytes.append(b) }

    private mutating func writeDouble(_ d: Double) {
        // Integral values print as integers so that 1.0 and 1 have one canonical form.
        if d.rounded() == d && abs(d) < 9.007199254740992e15 {
            append(String(Int64(d)))
        } else {
            append(String(describing: d))
        }
    }

    public mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""): bytes.append(0x5C); bytes.append(c)
            case UInt8(ascii: "\\"): bytes.append(0x5C); bytes.append(c)
            case 0x0A: bytes.append(0x5C); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(0x5C); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(0x5C); bytes.append(UInt8(ascii: "t"))
            case 0x08: bytes.append(0x5C); bytes.append(UInt8(ascii: "b"))
            case 0x0C: bytes.append(0x5C); bytes.append(UInt8(ascii: "f"))
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(c >> 4)], hex[Int(c & 15)]])
            default: bytes.append(c)
            }
        }
        bytes.append(UInt8(ascii: "\""))
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
