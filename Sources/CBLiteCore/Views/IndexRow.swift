/// The stored form of one view index row besides its primary key: one blob holding what a
/// query returns for the row, so that a scan reads one column per row instead of five
/// (measured: a key scan's SQLite work drops to about 60%).
///
///     sequence, emit number (also in the primary key), document ID length, key JSON
///     length: four unsigned LEB128 varints (usually 6 bytes in all), then
///     document ID, 0, key JSON, 0, [value JSON, 0]     (no value: the blob ends)
///
/// Every text is followed by a 0 byte, so rows copied into a page are C strings as they
/// lie. Document IDs and compact JSON never contain a 0 byte.
struct IndexRow {
    var sequence: Int64
    var n: Int64
    var docID: UnsafeBufferPointer<UInt8>
    var keyJSON: UnsafeBufferPointer<UInt8>
    var value: UnsafeBufferPointer<UInt8>?

    /// Appends the stored form to `out`.
    static func append(sequence: Int64, n: UInt32, docID: UnsafeBufferPointer<UInt8>, keyJSON: UnsafeBufferPointer<UInt8>,
                       value: UnsafeBufferPointer<UInt8>?, to out: inout [UInt8]) {
        // Assembled in scratch memory and appended at once (appending byte by byte costs a
        // capacity check each).
        let size = 40 + docID.count + keyJSON.count + (value?.count ?? 0) + 3
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: size) { buf in
            let p = buf.baseAddress!
            var pos = 0
            func put(_ value: UInt64) {
                var v = value
                while v >= 0x80 { p[pos] = UInt8(truncatingIfNeeded: v) | 0x80; pos += 1; v >>= 7 }
                p[pos] = UInt8(v)
                pos += 1
            }
            func copy(_ src: UnsafeBufferPointer<UInt8>) {
                if let b = src.baseAddress, src.count > 0 { (p + pos).update(from: b, count: src.count) }
                pos += src.count
                p[pos] = 0
                pos += 1
            }
            put(UInt64(bitPattern: sequence))
            put(UInt64(n))
            put(UInt64(docID.count))
            put(UInt64(keyJSON.count))
            copy(docID)
            copy(keyJSON)
            if let value { copy(value) }
            out.append(contentsOf: UnsafeBufferPointer(start: p, count: pos))
        }
    }

    /// Reads a stored row; a column that does not hold one (a damaged index) is a 500 that
    /// says how to recover.
    static func read(_ b: UnsafeBufferPointer<UInt8>?) throws -> IndexRow {
        guard let b, let r = IndexRow(b) else {
            throw CBLError(.internalError, "a view index row is unreadable; delete the view's index to rebuild it")
        }
        return r
    }

    /// Reads a stored row (nil when it is not one).
    init?(_ b: UnsafeBufferPointer<UInt8>) {
        guard let p = b.baseAddress else { return nil }
        let end = b.count
        var pos = 0
        @inline(__always) func get() -> UInt64? {
            if pos < end, p[pos] < 0x80 { pos += 1; return UInt64(p[pos - 1]) }   // most fields: one byte
            var v: UInt64 = 0, shift: UInt64 = 0
            while pos < end, shift < 64 {
                let c = p[pos]
                pos += 1
                v |= UInt64(c & 0x7F) << shift
                if c < 0x80 { return v }
                shift += 7
            }
            return nil
        }
        guard let seq = get(), let n = get(), let idLength = get(), let keyLength = get(),
              idLength < UInt64(end), keyLength < UInt64(end) else { return nil }
        let idStart = pos, keyStart = idStart + Int(idLength) + 1, valueStart = keyStart + Int(keyLength) + 1
        guard valueStart <= end else { return nil }
        sequence = Int64(bitPattern: seq)
        self.n = Int64(truncatingIfNeeded: n)
        docID = UnsafeBufferPointer(start: p + idStart, count: Int(idLength))
        keyJSON = UnsafeBufferPointer(start: p + keyStart, count: Int(keyLength))
        value = valueStart < end ? UnsafeBufferPointer(start: p + valueStart, count: end - 1 - valueStart) : nil
    }
}
