import Glibc

/// CouchDB's _approx_count_distinct: a HyperLogLog sketch of the distinct keys, with
/// CouchDB's precision of 11 (2048 registers, about 2.3% standard error). Small counts
/// use linear counting, so they come out exact unless two keys share a register's
/// slot. Keys are hashed as their JSON text (CouchDB hashes its own term encoding, so the
/// estimates agree in accuracy, not bit for bit). Sketches merge by taking each
/// register's maximum (a rereduce).
struct HyperLogLog {
    static let precision = 11
    static let registerCount = 1 << precision
    private var registers = [UInt8](repeating: 0, count: HyperLogLog.registerCount)

    mutating func add(_ bytes: UnsafeBufferPointer<UInt8>) {
        let h = HyperLogLog.hash(bytes)
        let index = Int(h >> UInt64(64 - HyperLogLog.precision))
        // The rank of the first 1 bit after the index bits (a sentinel bit caps it).
        let rest = (h << UInt64(HyperLogLog.precision)) | (1 << UInt64(HyperLogLog.precision - 1))
        let rank = UInt8(rest.leadingZeroBitCount + 1)
        if rank > registers[index] { registers[index] = rank }
    }

    mutating func merge(_ other: HyperLogLog) {
        for i in registers.indices where other.registers[i] > registers[i] { registers[i] = other.registers[i] }
    }

    /// The estimated number of distinct keys added.
    var count: Int64 {
        let m = Double(HyperLogLog.registerCount)
        var sum = 0.0, zeros = 0
        for r in registers {
            sum += 1 / Double(UInt64(1) << UInt64(r))
            if r == 0 { zeros += 1 }
        }
        let alpha = 0.7213 / (1 + 1.079 / m)
        let raw = alpha * m * m / sum
        // Linear counting while registers are still empty and the raw estimate is biased.
        if raw <= 2.5 * m, zeros > 0 { return Int64((m * log(m / Double(zeros))).rounded()) }
        return Int64(raw.rounded())
    }

    /// FNV-1a over the bytes, then MurmurHash3's 64-bit finalizer: FNV alone spreads
    /// short, similar keys poorly over the high bits that pick the register.
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        h ^= h >> 33
        h = h &* 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h = h &* 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return h
    }
}
