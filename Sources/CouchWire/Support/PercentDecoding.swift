/// Percent-decoding of URL paths and query components.
public enum PercentDecoding {
    /// Decodes %XX escapes (and '+' as a space when `plusAsSpace`, as in query strings and
    /// form bodies). nil when an escape is malformed or the result is not UTF-8.
    public static func decode<C: Swift.Collection>(_ raw: C, plusAsSpace: Bool) -> String? where C.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = raw.startIndex
        while i != raw.endIndex {
            let c = raw[i]
            if c == UInt8(ascii: "%") {
                let h = raw.index(after: i)
                guard h != raw.endIndex else { return nil }
                let l = raw.index(after: h)
                guard l != raw.endIndex, let hi = hexValue(raw[h]), let lo = hexValue(raw[l]) else { return nil }
                out.append(hi << 4 | lo)
                i = raw.index(after: l)
                continue
            }
            out.append(plusAsSpace && c == UInt8(ascii: "+") ? UInt8(ascii: " ") : c)
            i = raw.index(after: i)
        }
        return String(validating: out, as: UTF8.self)
    }

    /// Encodes everything but RFC 3986's unreserved characters (for Location headers and
    /// paths built from IDs).
    public static func encode(_ s: String) -> String {
        var out: [UInt8] = []
        let hex = Array("0123456789ABCDEF".utf8)
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.append(c)
            default:
                out.append(UInt8(ascii: "%")); out.append(hex[Int(c >> 4)]); out.append(hex[Int(c & 15)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
