/// Decimal digits of an unsigned integer written into a buffer, without a String on the
/// way (revision IDs and the changes feed write one per document).
package enum DecimalText {
    /// How many digits `value` has (1 for 0).
    package static func count(_ value: UInt64) -> Int {
        var digits = 1, v = value
        while v >= 10 { v /= 10; digits += 1 }
        return digits
    }

    /// Writes `value`'s digits at the start of `out` (room for count(value), at most 20);
    /// returns how many.
    @discardableResult
    package static func write(_ value: UInt64, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let n = count(value)
        var v = value, i = n
        repeat {
            i -= 1
            out[i] = UInt8(truncatingIfNeeded: 0x30 + v % 10)
            v /= 10
        } while v > 0
        return n
    }
}
