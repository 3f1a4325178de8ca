import CSQLCipher
import Glibc

/// The rows a map function emitted for a run of documents, held until they are written
/// in one transaction: every row's CollatableKey and stored form (IndexRow) in one byte
/// buffer (no allocation per row), and per document its ID, sequence and rows. Writing sorts the rows into index order and hands
/// them to SQLite in a single INSERT ... SELECT (cblite_index_rows), so rows append
/// where the previous one went instead of searching the index from its root.
final class MappedBatch {
    struct Doc {
        let sequence: Int64
        let idStart: UInt32, idLength: UInt32        // the ID's UTF-8 in `bytes`
        var firstRow: UInt32
        var rowCount: UInt32
        var rowRange: Range<Int> { Int(firstRow)..<Int(firstRow + rowCount) }
    }

    /// A row's CollatableKey and its IndexRow lie one after the other in `bytes` (32 bytes
    /// a row).
    private struct Row {
        var keyPrefix: UInt64                       // the key's first 8 bytes, big-endian: most comparisons end here
        var keyStart: UInt32, keyLength: UInt32
        var rowLength: UInt32
        var doc: UInt32, n: UInt32
        var rowStart: UInt32 { keyStart + keyLength }
    }

    private(set) var docs: [Doc] = []
    private var rows: [Row] = []
    private var bytes: [UInt8] = []

    /// A batch is written when it holds this much (bounds memory on huge collections).
    static let maxBytes = 16 << 20
    static let maxRows = 131_072
    /// Rows handed to SQLite per INSERT statement.
    static let sliceRows = 8192
    var isFull: Bool { bytes.count >= MappedBatch.maxBytes || rows.count >= MappedBatch.maxRows }

    /// Reserves room for about `documents` documents of one row each (growing by doubling
    /// would briefly hold two copies of each array).
    func reserve(documents: Int) {
        let n = min(documents, MappedBatch.maxRows)
        docs.reserveCapacity(n)
        rows.reserveCapacity(n)
        bytes.reserveCapacity(n * 40)
    }

    func beginDocument(id: ArraySlice<UInt8>, sequence: Int64) {
        let start = bytes.count
        bytes.append(contentsOf: id)
        docs.append(Doc(sequence: sequence, idStart: offset(start), idLength: offset(bytes.count - start),
                        firstRow: offset(rows.count), rowCount: 0))
    }

    /// The ID of document `i`.
    func docID(_ i: Int) -> String { String(decoding: slice(docs[i].idStart, docs[i].idLength), as: UTF8.self) }

    /// Adds a row to the current document. `keyJSON`, when given, is the key's compact
    /// JSON text already.
    func addRow(key: JSONValue, keyJSON: UnsafeBufferPointer<UInt8>?, value: [UInt8]?) {
        precondition(!docs.isEmpty, "addRow before beginDocument")
        let d = docs.count - 1
        let doc = docs[d]
        let keyStart = bytes.count
        CollatableKey.encode(key, into: &bytes)
        let rowStart = bytes.count
        let id = Int(doc.idStart)..<Int(doc.idStart + doc.idLength)
        if let keyJSON {
            IndexRow.append(sequence: doc.sequence, n: doc.rowCount, docID: id, keyJSON: keyJSON, value: value, to: &bytes)
        } else {
            Collation.compactJSON(key).withUnsafeBufferPointer {
                IndexRow.append(sequence: doc.sequence, n: doc.rowCount, docID: id, keyJSON: $0, value: value, to: &bytes)
            }
        }
        var prefix: UInt64 = 0
        for i in 0..<8 { prefix = prefix << 8 | UInt64(keyStart + i < rowStart ? bytes[keyStart + i] : 0) }
        rows.append(Row(keyPrefix: prefix, keyStart: offset(keyStart), keyLength: offset(rowStart - keyStart),
                        rowLength: offset(bytes.count - rowStart), doc: offset(d), n: doc.rowCount))
        docs[d].rowCount += 1
    }

    private func offset(_ n: Int) -> UInt32 {
        guard let o = UInt32(exactly: n), o < UInt32(Int32.max) else { fatalError("a view batch outgrew 2 GiB") }
        return o
    }

    private func slice(_ start: UInt32, _ length: UInt32) -> [UInt8] {
        Array(bytes[Int(start)..<Int(start + length)])
    }

    /// The rows of document `i`, as values (to compare with the rows it had before).
    func rows(of i: Int) -> [EmittedRow] {
        bytes.withUnsafeBufferPointer { b in
            rows[docs[i].rowRange].map { r in
                let stored = IndexRow(UnsafeBufferPointer(rebasing: b[Int(r.rowStart)..<Int(r.rowStart + r.rowLength)]))!
                return EmittedRow(key: slice(r.keyStart, r.keyLength), keyJSON: Array(stored.keyJSON), value: stored.value.map { Array($0) })
            }
        }
    }

    /// The CollatableKeys of document `i`'s rows.
    func keys(of i: Int) -> [[UInt8]] {
        let d = docs[i]
        return rows[d.rowRange].map { slice($0.keyStart, $0.keyLength) }
    }

    /// Inserts the rows of the given documents into a view index table, in index order.
    /// `bulk` (an empty index): the document-ID index is dropped first and built after
    /// from the sorted table, as CREATE INDEX does best.
    func insert(documents: [Int], into table: String, conn: Connection, bulk: Bool) throws {
        var order: [UInt32] = []
        for i in documents { order.append(contentsOf: docs[i].firstRow..<(docs[i].firstRow + docs[i].rowCount)) }
        if order.isEmpty { return }
        try bytes.withUnsafeBufferPointer { buf in
            let base = buf.baseAddress!
            // Index order: key bytes, document ID bytes, emit number (the primary key's).
            func less(_ aStart: UInt32, _ aLength: UInt32, _ bStart: UInt32, _ bLength: UInt32) -> Bool? {
                let c = memcmp(base + Int(aStart), base + Int(bStart), Int(min(aLength, bLength)))
                if c != 0 { return c < 0 }
                return aLength == bLength ? nil : aLength < bLength
            }
            order.sort { a, b in
                let x = rows[Int(a)], y = rows[Int(b)]
                if x.keyPrefix != y.keyPrefix { return x.keyPrefix < y.keyPrefix }
                if let l = less(x.keyStart, x.keyLength, y.keyStart, y.keyLength) { return l }
                if x.doc == y.doc { return x.n < y.n }
                let dx = docs[Int(x.doc)], dy = docs[Int(y.doc)]
                return less(dx.idStart, dx.idLength, dy.idStart, dy.idLength) ?? (x.doc < y.doc)
            }
            let raw = UnsafeRawPointer(base)
            func cRow(_ i: UInt32) -> cblite_index_row {
                let r = rows[Int(i)]
                let d = docs[Int(r.doc)]
                var c = cblite_index_row()
                c.key = raw + Int(r.keyStart)
                c.key_len = Int32(r.keyLength)
                c.docid = (raw + Int(d.idStart)).assumingMemoryBound(to: CChar.self)
                c.docid_len = Int32(d.idLength)
                c.row = raw + Int(r.rowStart)
                c.row_len = Int32(r.rowLength)
                c.n = Int64(r.n)
                return c
            }
            if bulk { try conn.exec("DROP INDEX IF EXISTS \(table)_doc") }
            let ins = try conn.prepare("INSERT INTO \(table)(key, docid, n, row) SELECT key, docid, n, row FROM cblite_index_rows(?)")
            // In slices, so the C view of the rows stays small; each slice's first row
            // seeks, the others append.
            var cRows: [cblite_index_row] = []
            cRows.reserveCapacity(min(order.count, MappedBatch.sliceRows))
            for sliceStart in stride(from: 0, to: order.count, by: MappedBatch.sliceRows) {
                cRows.removeAll(keepingCapacity: true)
                for i in order[sliceStart..<min(order.count, sliceStart + MappedBatch.sliceRows)] { cRows.append(cRow(i)) }
                try cRows.withUnsafeBufferPointer { rowsBuf in
                    var set = cblite_index_rows(rows: rowsBuf.baseAddress, count: Int64(rowsBuf.count))
                    try withUnsafePointer(to: &set) { p in
                        ins.bindIndexRows(1, p)
                        try ins.run()
                    }
                }
            }
            if bulk { try conn.exec("CREATE INDEX IF NOT EXISTS \(table)_doc ON \(table)(docid)") }
        }
    }

    /// The value of a key written as a plain integer literal that a double holds exactly
    /// (`-?(0|[1-9][0-9]{0,14})`), without parsing JSON; nil for anything else.
    static func plainInteger(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        var i = 0, neg = false
        if text.first == UInt8(ascii: "-") { neg = true; i = 1 }
        let digits = text.count - i
        guard digits >= 1, digits <= 15 else { return nil }
        if digits > 1 && text[i] == UInt8(ascii: "0") { return nil }
        var v: Int64 = 0
        while i < text.count {
            let c = text[i]
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
            v = v * 10 + Int64(c - UInt8(ascii: "0"))
            i += 1
        }
        if neg && v == 0 { return nil }          // "-0": the parser's path makes it 0
        return neg ? -v : v
    }
}
