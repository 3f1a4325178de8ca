/// The stored form of one view index row besides its primary key: one blob holding what a
/// query returns for the row, so that a scan reads one column per row instead of five
/// (measured: a key scan's SQLite work drops to about 60%).
///
///     sequence      8 bytes, big-endian   the emitting document's sequence
///     n             4 bytes, big-endian   emit number (also in the primary key)
///     id length     2 bytes, big-endian   document IDs are at most 1024 bytes
///     key length    4 bytes, big-endian
///     document ID, 0, key JSON, 0, [value JSON, 0]     (no value: the blob ends)
///
/// Every text is followed by a 0 byte, so rows copied into a page are C strings as they
/// lie. Document IDs and compact JSON never contain a 0 byte.
struct IndexRow {
    static let headerSize = 18

    var sequence: Int64
    var n: Int64
    var docID: UnsafeBufferPointer<UInt8>
    var keyJSON: UnsafeBufferPointer<UInt8>
    var value: UnsafeBufferPointer<UInt8>?

    /// Appends the stored form to `out`, whose bytes at `docID` hold the document ID
    /// (the batch being indexed keeps each ID once, in the same buffer).
    static func append(sequence: Int64, n: UInt32, docID: Range<Int>, keyJSON: UnsafeBufferPointer<UInt8>,
                       value: [UInt8]?, to out: inout [UInt8]) {
        func put(_ v: UInt64, _ bytes: Int) {
            for i in stride(from: bytes - 1, through: 0, by: -1) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(8 * i))) }
        }
        put(UInt64(bitPattern: sequence), 8)
        put(UInt64(n), 4)
        put(UInt64(docID.count), 2)
        put(UInt64(keyJSON.count), 4)
        for i in docID { out.append(out[i]) }
        out.append(0)
        out.append(contentsOf: keyJSON)
        out.append(0)
        if let value {
            out.append(contentsOf: value)
            out.append(0)
        }
    }

    /// Reads a stored row (nil when it is not one).
    init?(_ b: UnsafeBufferPointer<UInt8>) {
        guard b.count >= IndexRow.headerSize + 2 else { return nil }
        func get(_ at: Int, _ bytes: Int) -> UInt64 {
            var v: UInt64 = 0
            for i in 0..<bytes { v = v << 8 | UInt64(b[at + i]) }
            return v
        }
        sequence = Int64(bitPattern: get(0, 8))
        n = Int64(get(8, 4))
        let idLength = Int(get(12, 2)), keyLength = Int(get(14, 4))
        let idStart = IndexRow.headerSize, keyStart = idStart + idLength + 1, valueStart = keyStart + keyLength + 1
        guard valueStart <= b.count else { return nil }
        docID = UnsafeBufferPointer(rebasing: b[idStart..<(idStart + idLength)])
        keyJSON = UnsafeBufferPointer(rebasing: b[keyStart..<(keyStart + keyLength)])
        value = valueStart < b.count ? UnsafeBufferPointer(rebasing: b[valueStart..<(b.count - 1)]) : nil
    }
}
