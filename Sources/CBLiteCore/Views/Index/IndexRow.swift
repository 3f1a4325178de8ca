import CSQLCipher

/// The stored form of one view index row besides its primary key (key, docid, n): one
/// blob holding what a query needs that the primary key does not, so that a scan reads
/// few columns (measured: each column read costs SQLite work on every row).
///
///     sequence, n << 2 | flags: two unsigned LEB128 varints (usually 4 bytes in all)
///     flags & 1: key JSON length (a varint), key JSON, 0
///     flags & 2: value JSON, 0                         (no value: the blob ends)
///
/// The document ID is not repeated here (the docid column has it), and neither is the
/// key's JSON when the CollatableKey gives it back exactly (CollatableKey.appendJSON:
/// null, booleans, integers and arrays of them). Every text is followed by a 0 byte, so
/// rows copied into a page are C strings as they lie. Compact JSON never contains a 0 byte.
struct IndexRow {
    var sequence: Int64
    var n: Int64
    /// nil: the key's JSON is made from its CollatableKey.
    var keyJSON: UnsafeBufferPointer<UInt8>?
    var value: UnsafeBufferPointer<UInt8>?

    private static let storedKeyJSON: UInt64 = 1      // as cblite_decode_index_row reads them
    private static let storedValue: UInt64 = 2

    /// Appends the stored form to `out`; `keyJSON` nil when the key gives it back. (Inlined
    /// into its one caller, the batch's per-row loop.)
    @inline(__always) static func append(sequence: Int64, n: UInt32, keyJSON: UnsafeBufferPointer<UInt8>?,
                       value: UnsafeBufferPointer<UInt8>?, to out: inout [UInt8]) {
        // Assembled in scratch memory and appended at once (appending byte by byte costs a
        // capacity check each).
        let size = 40 + (keyJSON?.count ?? 0) + (value?.count ?? 0) + 2
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
            put(UInt64(n) << 2 | (keyJSON == nil ? 0 : storedKeyJSON) | (value == nil ? 0 : storedValue))
            if let keyJSON {
                put(UInt64(keyJSON.count))
                copy(keyJSON)
            }
            if let value { copy(value) }
            out.append(contentsOf: UnsafeBufferPointer(start: p, count: pos))
        }
    }

    /// Reads a stored row; a column that does not hold one (a damaged index) is a 500 that
    /// says how to recover.
    static func read(_ b: UnsafeBufferPointer<UInt8>?) throws -> IndexRow {
        guard let b, let r = IndexRow(b) else { throw damaged() }
        return r
    }

    static func damaged() -> CBLError { CBLError(.internalError, "a view index row is unreadable; delete the view's index to rebuild it") }

    /// Reads a stored row (nil when it is not one), through the one decoder of the
    /// layout, in C (cblite_decode_index_row), which index scans call while copying rows.
    init?(_ b: UnsafeBufferPointer<UInt8>) {
        guard let p = b.baseAddress else { return nil }
        var f = cblite_row_fields()
        guard cblite_decode_index_row(p, Int64(b.count), &f) != 0 else { return nil }
        sequence = f.sequence
        n = f.n
        keyJSON = f.key_json.length < 0 ? nil : UnsafeBufferPointer(start: p + Int(f.key_json.offset), count: Int(f.key_json.length))
        value = f.value.length < 0 ? nil : UnsafeBufferPointer(start: p + Int(f.value.offset), count: Int(f.value.length))
    }

    /// The key's JSON: stored, or made from `key`, the row's CollatableKey.
    func keyJSONBytes(key: UnsafeBufferPointer<UInt8>?) throws -> [UInt8] {
        if let keyJSON { return Array(keyJSON) }
        var w = JSONWriter(canonical: false, capacity: 16)
        guard let key, CollatableKey.appendJSON(key, to: &w) else { throw IndexRow.damaged() }
        return w.bytes
    }
}
