/// Lowercase hexadecimal, as revision digests, UUIDs, raw keys, session cookies and
/// fingerprints are written: one encoder and one decoder for the engine and the listener.
public enum Hex {
    public static func encode<C: Swift.Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        if let s = bytes.withContiguousStorageIfAvailable({ encode($0) }) { return s }
        return Array(bytes).withUnsafeBufferPointer { encode($0) }
    }

    /// Written straight into the string's storage: no intermediate array.
    public static func encode(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { write(bytes, into: $0) }
    }

    /// Writes the digits of `bytes` at the start of `out` (room for 2 per byte); returns how many.
    package static func write(_ bytes: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        guard let src = bytes.baseAddress, let dst = out.baseAddress else { return 0 }
        // Raw pointers, no per-byte bounds checks or iterator: every saved revision's
        // digest goes through here (~23 instructions a byte before; callgrind).
        for i in 0..<bytes.count {
            let b = src[i]
            dst[2 * i] = digit(b >> 4)
            dst[2 * i + 1] = digit(b & 15)
        }
        return 2 * bytes.count
    }

    @inline(__always) private static func digit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x57 + v }

    /// Upper- or lowercase digits, an even number of them; nil for anything else.
    public static func decode(_ text: String) -> [UInt8]? {
        let u = Array(text.utf8)
        guard u.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i < u.count {
            guard let hi = nibble(u[i]), let lo = nibble(u[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    /// Whether `c` is a hex digit of either case.
    public static func isDigit(_ c: UInt8) -> Bool { nibble(c) != nil }

    /// The value of a hex digit of either case; nil for anything else.
    package static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
}
