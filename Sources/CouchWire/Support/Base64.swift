/// Standard base64 (RFC 4648 §4, with padding): Basic credentials and inline
/// attachment `data`. The engine's own encoder is internal to it.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let decodeTable: [Int8] = {
        var t = [Int8](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = Int8(i) }
        return t
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

    /// nil for anything that is not well-formed base64 (whitespace is not skipped).
    public static func decode(_ text: String) -> [UInt8]? {
        let s = Array(text.utf8)
        guard s.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(s.count / 4 * 3)
        var i = 0
        while i < s.count {
            var n: UInt32 = 0
            var pad = 0
            for j in 0..<4 {
                let c = s[i + j]
                if c == UInt8(ascii: "=") {
                    guard i + 4 == s.count, j >= 2 else { return nil }
                    pad += 1
                    n <<= 6
                    continue
                }
                guard pad == 0 else { return nil }
                let v = decodeTable[Int(c)]
                guard v >= 0 else { return nil }
                n = n << 6 | UInt32(v)
            }
            out.append(UInt8(n >> 16 & 255))
            if pad < 2 { out.append(UInt8(n >> 8 & 255)) }
            if pad < 1 { out.append(UInt8(n & 255)) }
            i += 4
        }
        return out
    }
}
