/// Strict UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing above
/// U+10FFFF) over raw bytes, with an ASCII fast path. Replaces String(validating:) on the
/// hot path, whose generic implementation costs a runtime metadata lookup per call.
package enum UTF8Validation {
    package static func isValid(_ buf: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let p = buf.baseAddress else { return true }
        let n = buf.count
        var i = 0
        while i < n {
            let c = p[i]
            if c < 0x80 { i += 1; continue }
            let need: Int
            var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
            switch c {
            case 0xC2...0xDF: need = 1
            case 0xE0: need = 2; lo = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: need = 2
            case 0xED: need = 2; hi = 0x9F
            case 0xF0: need = 3; lo = 0x90
            case 0xF1...0xF3: need = 3
            case 0xF4: need = 3; hi = 0x8F
            default: return false
            }
            guard i + need < n else { return false }      // continuation bytes p[i+1...i+need]
            let b1 = p[i + 1]
            guard b1 >= lo && b1 <= hi else { return false }
            if need >= 2 { guard p[i + 2] & 0xC0 == 0x80 else { return false } }
            if need == 3 { guard p[i + 3] & 0xC0 == 0x80 else { return false } }
            i += need + 1
        }
        return true
    }
}
