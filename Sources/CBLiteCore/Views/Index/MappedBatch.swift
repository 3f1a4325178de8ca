import CSQLCipher
import Glibc

/// The rows a map function emitted for a run of documents, held until they are written
/// in one transaction: every row's CollatableKey, key JSON (unless the key gives it back,
/// see IndexRow) and value JSON in one byte buffer (no allocation per row), and per document its ID, sequence and rows. Writing
/// sorts the rows into index order, makes their stored form (IndexRow) a slice at a time,
/// and hands them to SQLite in a single INSERT ... SELECT (cblite_index_rows), so rows
/// append where the previous one went instead of searching the index from its root.
/// About 57 bytes a row of one-number keys and no value (`Doc` 16, `Row` 24, the ID and
/// key 13, the sort order 4).
///
/// `bytes` holds, in order, each document's ID followed by its rows, so what a struct
/// does not record is where the next thing begins: a document's row count (the next
/// document's first row), its ID's end (its first row's key, or the next document's ID)
/// and a row's value (up to the next row's key or the next document's ID); a row's emit
/// number is its place among its document's rows.
final class MappedBatch {
    private struct Doc {
        let sequence: Int64
        let idStart: UInt32                         // the ID's UTF-8 in `bytes`
        let firstRow: UInt32
    }

    /// A row's CollatableKey, key JSON and value JSON lie one after the other in `bytes`.
    private struct Row {
        var keyPrefix: UInt64                       // the key's first 8 bytes, big-endian: most comparisons end here
        var keyStart: UInt32, keyLength: UInt32
        var jsonLength: Int32                       // -1: the key gives its JSON back (none stored)
        var doc: UInt32
        var jsonStart: Int { Int(keyStart + keyLength) }
        var valueStart: Int { jsonStart + Int(max(0, jsonLength)) }
    }

    private var docs: [Doc] = []
    /// Whether a key holds a string or an object, whose sort keys come from ICU: writing
    /// the batch then records the collated format (IndexFormat).
    private(set) var keysNeedCollator = false
    private var rows: [Row] = []
    private var bytes: [UInt8] = []
    /// The texts of text-key rows, by row index (their keys are null): kept apart so that
    /// rows of other keys cost nothing more.
    private var texts: [UInt32: String] = [:]

    /// A batch is written when it holds this much (bounds memory on huge collections).
    /// Fewer rows a batch would hold less memory but cost time: after the first batch of a
    /// build, rows no longer append at the end of the index but each search it from its
    /// root (measured at N=100,000: batches of 32,768 rows, +13% instructions for 3.5 MiB
    /// less peak memory).
    static let maxBytes = 8 << 20
    static let maxRows = 131_072
    /// Rows handed to SQLite per INSERT statement. Each slice's made rows (~56 bytes a row
    /// with their C descriptors) are held beside the whole batch, at the build's peak; a
    /// slice costs one statement run and one seek from the index's root.
    static let sliceRows = 2048
    let maxRows: Int
    var isFull: Bool { bytes.count >= MappedBatch.maxBytes || rows.count >= maxRows || docs.count >= maxRows }

    init(maxRows: Int = MappedBatch.maxRows) { self.maxRows = max(1, maxRows) }

    /// Reserves room for about `documents` documents of one row each (growing by doubling
    /// would briefly hold two copies of each array; pages reserved and never written
    /// cost no memory).
    func reserve(documents: Int) {
        let n = min(documents, maxRows)
        docs.reserveCapacity(n)
        rows.reserveCapacity(n)
        bytes.reserveCapacity(min(n * 48, MappedBatch.maxBytes + 4096))
    }

    /// Gives the memory back (once written).
    func clear() {
        docs = []
        rows = []
        bytes = []
        texts = [:]
    }

    func beginDocument(id: UnsafeBufferPointer<UInt8>, sequence: Int64) {
        let start = bytes.count
        bytes.append(contentsOf: id)
        docs.append(Doc(sequence: sequence, idStart: offset(start), firstRow: offset(rows.count)))
    }

    var docCount: Int { docs.count }
    var lastSequence: Int64? { docs.last?.sequence }
    func sequence(of i: Int) -> Int64 { docs[i].sequence }

    private func rowRange(_ i: Int) -> Range<Int> {
        Int(docs[i].firstRow)..<(i + 1 < docs.count ? Int(docs[i + 1].firstRow) : rows.count)
    }

    func rowCount(of i: Int) -> Int { rowRange(i).count }

    /// The ID of document `i`.
    func docID(_ i: Int) -> String {
        String(decoding: slice(docs[i].idStart, Layout(docs, rows, bytes.count).idLength(i)), as: UTF8.self)
    }

    /// What the structs leave to the layout of `bytes` (see the type's comment), over the
    /// arrays as they are (taken once: a class's arrays read in a loop are checked for
    /// exclusive access on every read).
    private struct Layout {
        let docs: [Doc], rows: [Row], byteCount: Int
        init(_ docs: [Doc], _ rows: [Row], _ byteCount: Int) { (self.docs, self.rows, self.byteCount) = (docs, rows, byteCount) }

        /// Where what follows document `i` (its ID and rows) begins.
        @inline(__always) func end(ofDoc i: Int) -> UInt32 { i + 1 < docs.count ? docs[i + 1].idStart : UInt32(byteCount) }

        @inline(__always) func idLength(_ i: Int) -> UInt32 {
            let first = Int(docs[i].firstRow)
            let idEnd = first < rows.count && rows[first].doc == UInt32(i) ? rows[first].keyStart : end(ofDoc: i)
            return idEnd - docs[i].idStart
        }

        /// Row `r`'s value JSON, nil when none (stored JSON is never empty).
        @inline(__always) func valueRange(_ r: Int) -> Range<Int>? {
            let row = rows[r]
            let rowEnd = r + 1 < rows.count && rows[r + 1].doc == row.doc ? rows[r + 1].keyStart : end(ofDoc: Int(row.doc))
            return Int(rowEnd) > row.valueStart ? row.valueStart..<Int(rowEnd) : nil
        }
    }

    /// Adds a row to the current document. `keyJSON`, when given, is the key's compact
    /// JSON text already.
    func addRow(key: JSONValue, keyJSON: UnsafeBufferPointer<UInt8>?, value: [UInt8]?) {
        precondition(!docs.isEmpty, "addRow before beginDocument")
        precondition(value?.isEmpty != true, "an empty value is not JSON")   // empty reads as none
        let d = docs.count - 1
        let keyStart = bytes.count
        CollatableKey.encode(key, into: &bytes)
        let jsonStart = bytes.count
        let recoverable = CollatableKey.jsonIsRecoverable(key)
        // A key that gives its JSON back holds no string or object: the common number key
        // costs no second walk.
        if !recoverable && !keysNeedCollator { keysNeedCollator = CollatableKey.needsCollator(key) }
        if recoverable {
            // made again from the key when read
        } else if let keyJSON {
            bytes.append(contentsOf: keyJSON)
        } else {
            bytes.append(contentsOf: Collation.compactJSON(key))
        }
        let valueStart = bytes.count
        if let value { bytes.append(contentsOf: value) }
        let prefix: UInt64 = bytes.withUnsafeBufferPointer { b in
            let n = min(8, jsonStart - keyStart)
            var prefix: UInt64 = 0
            for i in 0..<n { prefix = prefix << 8 | UInt64(b[keyStart + i]) }
            return prefix << (8 * UInt64(8 - n) & 63) & (n == 0 ? 0 : ~0)
        }
        rows.append(Row(keyPrefix: prefix, keyStart: offset(keyStart), keyLength: offset(jsonStart - keyStart),
                        jsonLength: recoverable ? -1 : Int32(offset(valueStart - jsonStart)),
                        doc: offset(d)))
    }

    /// Adds a text-key row to the current document: key null, the text indexed for full-text queries.
    func addRow(text: String, value: [UInt8]?) {
        texts[offset(rows.count)] = text
        addRow(key: .null, keyJSON: nil, value: value)
    }

    /// Adds a row to the current document whose key is an integer of at most 15 digits
    /// (`plainInteger`'s), or (`inArray`) an array of that one integer: its CollatableKey
    /// written at once and its prefix computed from the number, where `addRow` walks a
    /// JSONValue (a C map function's common emit; a one-column Mango index's).
    func addRow(integerKey n: Int64, inArray: Bool = false, value: [UInt8]?) {
        precondition(!docs.isEmpty, "addRow before beginDocument")
        precondition(value?.isEmpty != true, "an empty value is not JSON")   // empty reads as none
        precondition(n.magnitude < 1 << 53, "an integer key beyond a double's exact range")
        let ordered = CollatableKey.orderedBits(Double(n))
        // The tag and the kept bytes (the number, last in the key, drops its trailing zeros;
        // in an array, after the array's tag, and before the array's end).
        let keyLength = (inArray ? 3 : 1) + CollatableKey.trimmedLength(ordered)
        // The key's first 8 bytes, big-endian; the bytes it drops are zeros, as a prefix pads.
        let prefix = inArray ? UInt64(CollatableKey.array) << 56 | UInt64(CollatableKey.number) << 48 | ordered >> 16
                             : UInt64(CollatableKey.number) << 56 | ordered >> 8
        let rest = inArray ? ordered << 48 : ordered << 56                // the bytes after the prefix (the end: 00)
        let keyStart = bytes.count
        withUnsafeBytes(of: (prefix.bigEndian, rest.bigEndian)) { raw in
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[0..<keyLength]).bindMemory(to: UInt8.self))
        }
        if let value { bytes.append(contentsOf: value) }
        rows.append(Row(keyPrefix: prefix, keyStart: offset(keyStart), keyLength: UInt32(keyLength), jsonLength: -1,
                        doc: offset(docs.count - 1)))
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
        rowRange(i).map { index in
            let r = rows[index]
            let key = slice(r.keyStart, r.keyLength)
            let keyJSON: [UInt8]
            if r.jsonLength < 0 {
                var w = JSONWriter(canonical: false, capacity: 16)
                let made = key.withUnsafeBufferPointer { CollatableKey.appendJSON($0, to: &w) }
                precondition(made, "a key said to give its JSON back did not")
                keyJSON = w.bytes
            } else {
                keyJSON = slice(UInt32(r.jsonStart), UInt32(r.jsonLength))
            }
            let value = Layout(docs, rows, bytes.count).valueRange(index)
            return EmittedRow(key: key, keyJSON: keyJSON, value: value.map { Array(bytes[$0]) },
                              text: texts.isEmpty ? nil : texts[UInt32(index)])
        }
    }

    /// The CollatableKeys of document `i`'s rows.
    func keys(of i: Int) -> [[UInt8]] {
        rowRange(i).map { slice(rows[$0].keyStart, rows[$0].keyLength) }
    }

    /// The rows of the given documents (nil: all) in index order: key bytes, document ID
    /// bytes, emit number (the primary key's). The order only decides whether rows append;
    /// the primary key orders the index whatever it is.
    func indexOrder(documents: [Int]?) -> [UInt32] {
        var order: [UInt32] = []
        if let documents {
            for i in documents { order.append(contentsOf: rowRange(i).lazy.map { UInt32($0) }) }
        } else {
            order = Array(0..<UInt32(rows.count))
        }
        if order.count < 2 { return order }
        let layout = Layout(docs, rows, bytes.count)
        let docs = layout.docs, rows = layout.rows
        bytes.withUnsafeBufferPointer { buf in
            let base = buf.baseAddress!
            func less(_ aStart: UInt32, _ aLength: UInt32, _ bStart: UInt32, _ bLength: UInt32) -> Bool? {
                let c = memcmp(base + Int(aStart), base + Int(bStart), Int(min(aLength, bLength)))
                if c != 0 { return c < 0 }
                return aLength == bLength ? nil : aLength < bLength
            }
            // Documents whose IDs ascend in batch (sequence) order, as when IDs are made in
            // order: rows of equal keys are ordered by their document's place in the batch,
            // without comparing IDs.
            var idsAscend = true
            for i in docs.indices.dropFirst() {
                if less(docs[i - 1].idStart, layout.idLength(i - 1), docs[i].idStart, layout.idLength(i)) != true {
                    idsAscend = false
                    break
                }
            }
            order.sort { a, b in
                let x = rows[Int(a)], y = rows[Int(b)]
                if x.keyPrefix != y.keyPrefix { return x.keyPrefix < y.keyPrefix }
                if x.keyLength <= 8 && y.keyLength <= 8 {
                    // The prefixes hold both keys whole, zero-padded: the shorter is a prefix
                    // of the longer (memcmp's order), or they are equal.
                    if x.keyLength != y.keyLength { return x.keyLength < y.keyLength }
                } else if let l = less(x.keyStart, x.keyLength, y.keyStart, y.keyLength) {
                    return l
                }
                if x.doc == y.doc { return a < b }             // emit order: a document's rows are in it
                if idsAscend { return x.doc < y.doc }
                return less(docs[Int(x.doc)].idStart, layout.idLength(Int(x.doc)), docs[Int(y.doc)].idStart, layout.idLength(Int(y.doc)))
                    ?? (x.doc < y.doc)
            }
        }
        return order
    }

    /// Inserts the rows of the given documents (nil: all) into a view's index table, in
    /// index order, and adds them to its per-key counts (ViewStorage.countsTable): one
    /// upsert per run of equal keys in a slice. `allNew`: none of their documents has rows
    /// in the table.
    /// Text-key rows also go into the view's full-text table (ViewStorage+Text), made with
    /// `analyzer` when it is not there yet.
    func insert(documents: [Int]?, allNew: Bool, intoView viewID: Int64, analyzer: FullTextAnalyzer,
                conn: Connection) throws {
        let order = indexOrder(documents: documents)
        if order.isEmpty { return }
        if !texts.isEmpty { try insertTexts(documents: documents, viewID: viewID, analyzer: analyzer, conn: conn) }
        let layout = Layout(docs, rows, bytes.count)
        let docs = layout.docs, rows = layout.rows
        try bytes.withUnsafeBufferPointer { buf in
            let base = buf.baseAddress!
            let ins = try ViewStorage.RowInserter(conn, viewID, allNew: allNew)
            // In slices: the rows' stored forms are made a slice at a time (so the batch
            // does not hold them twice), and each slice's first row seeks, the others append.
            var stored: [UInt8] = []
            var storedEnds: [Int] = []
            var cRows: [cblite_index_row] = []
            let sliceCount = min(order.count, MappedBatch.sliceRows)
            stored.reserveCapacity(sliceCount * 8)
            storedEnds.reserveCapacity(sliceCount)
            cRows.reserveCapacity(sliceCount)
            for sliceStart in stride(from: 0, to: order.count, by: MappedBatch.sliceRows) {
                let slice = order[sliceStart..<min(order.count, sliceStart + MappedBatch.sliceRows)]
                stored.removeAll(keepingCapacity: true)
                storedEnds.removeAll(keepingCapacity: true)
                for i in slice {
                    let r = rows[Int(i)], d = docs[Int(r.doc)]
                    let value = layout.valueRange(Int(i))
                    IndexRow.append(sequence: d.sequence, n: i - d.firstRow,
                                    keyJSON: r.jsonLength < 0 ? nil
                                        : UnsafeBufferPointer(start: base + r.jsonStart, count: Int(r.jsonLength)),
                                    value: value.map { UnsafeBufferPointer(start: base + $0.lowerBound, count: $0.count) },
                                    to: &stored)
                    storedEnds.append(stored.count)
                }
                cRows.removeAll(keepingCapacity: true)
                try stored.withUnsafeBufferPointer { sb in
                    let sbase = UnsafeRawPointer(sb.baseAddress!)
                    let raw = UnsafeRawPointer(base)
                    var rowStart = 0
                    for (k, i) in slice.enumerated() {
                        let r = rows[Int(i)], d = docs[Int(r.doc)]
                        var c = cblite_index_row()
                        c.key = raw + Int(r.keyStart)
                        c.key_len = Int32(r.keyLength)
                        c.docid = (raw + Int(d.idStart)).assumingMemoryBound(to: CChar.self)
                        c.docid_len = Int32(rows[Int(d.firstRow)].keyStart - d.idStart)   // ends at its first row
                        c.row = sbase + rowStart
                        c.row_len = Int32(storedEnds[k] - rowStart)
                        c.n = Int64(i - d.firstRow)
                        cRows.append(c)
                        rowStart = storedEnds[k]
                    }
                    try cRows.withUnsafeBufferPointer { rowsBuf in
                        var set = cblite_index_rows(rows: rowsBuf.baseAddress, count: Int64(rowsBuf.count))
                        try withUnsafePointer(to: &set) { p in try ins.insert(p) }
                        try addCounts(rowsBuf, viewID: viewID, conn: conn)
                    }
                }
            }
        }
    }

    /// Adds the text-key rows of the given documents (nil: all) to the view's full-text table.
    private func insertTexts(documents: [Int]?, viewID: Int64, analyzer: FullTextAnalyzer, conn: Connection) throws {
        try ViewStorage.ensureTextTables(conn, viewID, analyzer: analyzer)
        let writer = try ViewStorage.TextRowWriter(conn, viewID)
        for i in documents ?? Array(docs.indices) {
            var id: String? = nil
            for r in rowRange(i) {
                guard let text = texts[UInt32(r)] else { continue }
                if id == nil { id = docID(i) }
                try writer.add(docID: id!, n: Int64(r - Int(docs[i].firstRow)), text: text)
            }
        }
    }

    /// Adds a slice's rows (in key order) to the view's per-key counts, a run of equal
    /// keys at a time.
    private func addCounts(_ rows: UnsafeBufferPointer<cblite_index_row>, viewID: Int64, conn: Connection) throws {
        func bytes(_ p: UnsafeRawPointer?, _ n: Int32) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(start: p?.assumingMemoryBound(to: UInt8.self), count: Int(n))
        }
        var start = 0
        while start < rows.count {
            let key = bytes(rows[start].key, rows[start].key_len)
            var end = start + 1
            while end < rows.count && bytes(rows[end].key, rows[end].key_len).elementsEqual(key) { end += 1 }
            try ViewStorage.addCount(conn, viewID, key: key, n: end - start, row: bytes(rows[start].row, rows[start].row_len))
            start = end
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
