/// Standard base64 (RFC 4648, '+' and '/', '=' padding), without Foundation: attachment
/// digests and data, Basic credentials, PEM. One encoder for the engine, the wire format
/// and the listener.
public enum Base64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let reverse: [UInt8] = {
        var r = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { r[Int(c)] = UInt8(i) }
        return r
    }()

    public static func encode<C: Swift.Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var it = bytes.makeIterator()
        while let a = it.next() {
            let b = it.next(), c = it.next()
            let n = UInt32(a) << 16 | UInt32(b ?? 0) << 8 | UInt32(c ?? 0)
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(b == nil ? UInt8(ascii: "=") : alphabet[Int(n >> 6 & 63)])
            out.append(c == nil ? UInt8(ascii: "=") : alphabet[Int(n & 63)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64; ASCII whitespace is skipped, padding is optional but must be
    /// correct when present. nil for anything else.
    public static func decode<C: Swift.Collection>(_ text: C) -> [UInt8]? where C.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3 + 3)
        var acc: UInt32 = 0
        var n = 0          // sextets in acc
        var padding = 0
        for c in text {
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { continue }
            if c == UInt8(ascii: "=") { padding += 1; continue }
            guard padding == 0 else { return nil }        // data after padding
            let v = reverse[Int(c)]
            guard v != 0xFF else { return nil }
            acc = acc << 6 | UInt32(v)
            n += 1
            if n == 4 {
                out.append(UInt8(acc >> 16 & 0xFF)); out.append(UInt8(acc >> 8 & 0xFF)); out.append(UInt8(acc & 0xFF))
                acc = 0; n = 0
            }
        }
        switch n {
        case 0: guard padding == 0 else { return nil }
        case 2:
            guard padding == 0 || padding == 2, acc & 0xF == 0 else { return nil }
            out.append(UInt8(acc >> 4 & 0xFF))
        case 3:
            guard padding == 0 || padding == 1, acc & 0x3 == 0 else { return nil }
            out.append(UInt8(acc >> 10 & 0xFF)); out.append(UInt8(acc >> 2 & 0xFF))
        default: return nil
        }
        return out
    }

    public static func decode(_ text: String) -> [UInt8]? { decode(text.utf8) }
}
