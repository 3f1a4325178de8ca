/// The queries' reads of a view's rows and per-key counts (see ViewStorage): index scans
/// a page at a time (MapScan) and the built-in `_count` (CountSource).
extension ViewStorage {
    // MARK: index scans

    /// What the statement text of a scan page depends on.
    struct ScanShape: Equatable {
        let table: String
        let conds: [String]
        let descending: Bool
        let byKeys: Bool
        let readsKey: Bool
        let limit: Int
        /// The rows' documents read with them (MapScan's `documents`).
        var documents: DocumentStore.LiveJoin? = nil
    }

    /// The expressions by which a scan's rows join their documents (DocumentStore.liveJoin):
    /// the sequence the row blob records (index_rows.c); the copy checks the document's ID
    /// is the emitting document's (`docid`).
    static func documentsJoin(_ docs: DocumentStore) -> DocumentStore.LiveJoin {
        docs.liveJoin(sequence: "cblite_row_sequence(row)")
    }

    /// The statement texts of scan pages, by shape: the same few serve every query of a
    /// view. Made for each page, a text cost ~11,000 instructions (strings joined, then
    /// hashed by the statement cache), a sixth of a small query's work. A short list
    /// searched in order, not a dictionary: a Hashable key holding an array cost a one-time
    /// ~200,000 instructions of conformance lookups in the first query of a process.
    private struct ScanText {
        let shape: ScanShape
        let text: SQLText
    }
    private static let scanTexts = LockedValue<[ScanText]>([])
    private static let maxScanTexts = 32

    static func scanText(_ shape: ScanShape) -> SQLText {
        let known = scanTexts.withLock { texts -> SQLText? in
            for t in texts where t.shape == shape { return t.text }
            return nil
        }
        if let known { return known }
        let dir = shape.descending ? "DESC" : "ASC"
        let order = shape.byKeys ? "docid \(dir), n \(dir)" : "key \(dir), docid \(dir), n \(dir)"
        let join = shape.documents
        let text = SQLText("SELECT docid, row\(shape.readsKey ? ", key" : "")\(join.map { ", " + $0.columns } ?? "") "
            + "FROM \(shape.table)\(join.map { " " + $0.clause } ?? "")"
            + whereClause(shape.conds)
            + " ORDER BY \(order) LIMIT \(shape.limit)")
        scanTexts.withLock { texts in
            if texts.count >= maxScanTexts { texts.removeFirst(maxScanTexts / 2) }
            texts.append(ScanText(shape: shape, text: text))
        }
        return text
    }

    /// Runs one statement of a scan page: `read` gets it bound to `args` (the shape's
    /// conditions' parameters), before its first row — columns docid, row, then key when
    /// the shape reads it, then the joined document's when it has `documents` — and
    /// returns what it took. nil when the view's table is gone
    /// (its index was deleted since the query began).
    static func scanPage<T>(_ conn: Connection, _ text: SQLText, args: [SQLArg],
                            _ read: (Statement) throws -> T) throws -> T? {
        let s: Statement
        do { s = try conn.prepare(text) } catch let e as CBLError where e.message.contains("no such table") { return nil }
        defer { s.reset() }
        for (i, a) in args.enumerated() { a.bind(s, Int32(i + 1)) }
        return try read(s)
    }

    // MARK: counts

    private static func whereClause(_ conds: [String]) -> String {
        conds.isEmpty ? "" : " WHERE " + conds.joined(separator: " AND ")
    }

    /// The number of rows in `range`: summed from the per-key counts when given
    /// (`counts`: the range bounds keys alone), else counted from the index rows.
    static func countRows(_ conn: Connection, table: String, counts: String?, range: QueryOptions.Range) throws -> Int64 {
        let (conds, args) = range.sqlConditions()
        let s = try conn.prepare((counts.map { "SELECT coalesce(sum(n), 0) FROM \($0)" } ?? "SELECT count(*) FROM \(table)")
                                 + whereClause(conds))
        defer { s.reset() }
        for (i, a) in args.enumerated() { a.bind(s, Int32(i + 1)) }
        return try s.step() ? s.int(0) : 0
    }

    /// A page of the groups of equal keys in `range`, in key order from after `lastKey`
    /// (from the range's start when nil), at most `limit`: `group` gets the statement on
    /// each — columns key, the row blob of one of its rows, its number of rows — from the
    /// per-key counts when given (`counts`), else by GROUP BY over the index rows.
    static func countGroups(_ conn: Connection, table: String, counts: String?, range: QueryOptions.Range,
                            after lastKey: [UInt8]?, descending: Bool, limit: Int,
                            _ group: (Statement) throws -> Void) throws {
        // After the first page of groups, the last key replaces the range's start bound.
        var (conds, args) = (lastKey == nil ? range : range.withoutStart(descending: descending)).sqlConditions()
        if let k = lastKey {
            conds.append(descending ? "key < ?" : "key > ?")
            args.append(.blob(k))
        }
        // The group's key is the JSON one of its rows emitted (they all collate equal; as a
        // bare column, SQLite takes it from the group's last row; the counts keep one row's),
        // or made from the key. (Made from the key alone, with no row column read, measured
        // no cheaper.)
        let order = " ORDER BY key \(descending ? "DESC" : "ASC") LIMIT \(limit)"
        let sql = counts.map { "SELECT key, row, n FROM \($0)" + whereClause(conds) + order }
            ?? "SELECT key, row, count(*) FROM \(table)" + whereClause(conds) + " GROUP BY key" + order
        let s = try conn.prepare(sql)
        defer { s.reset() }
        for (i, a) in args.enumerated() { a.bind(s, Int32(i + 1)) }
        while try s.step() { try group(s) }
    }

    /// Groups of equal keys found one at a time: a seek to the next key, then count(*)
    /// over that key's rows, which SQLite counts without reading their columns. Its
    /// statements are prepared and bound once for a page of groups (seekGroups).
    struct GroupSeek {
        fileprivate let first: Statement
        fileprivate let after: Statement
        fileprivate let count: Statement
        fileprivate let afterKeyIndex: Int32

        /// The next group's key after `lastKey` (the range's first when nil) and its JSON
        /// (one of its rows'); nil past the range's end.
        func next(after lastKey: [UInt8]?) throws -> (key: [UInt8], keyJSON: [UInt8])? {
            let next = lastKey == nil ? first : after
            if let k = lastKey { after.bindBlob(afterKeyIndex, k) }
            guard try next.step() else { return nil }
            let key = next.bytes(0) ?? []
            let keyJSON = try key.withUnsafeBufferPointer { try IndexRow.read(next.borrowedNonEmpty(1)).keyJSONBytes(key: $0) }
            next.rewind()
            return (key, keyJSON)
        }

        /// The number of rows of `key` in the range.
        func rows(of key: [UInt8]) throws -> Int64 {
            count.bindBlob(1, key)
            let n = try count.step() ? count.int(0) : 0
            count.rewind()
            return n
        }
    }

    /// Calls `body` with the statements of seeking the groups of `range` (see GroupSeek).
    static func seekGroups(_ conn: Connection, table: String, range: QueryOptions.Range, descending: Bool,
                           _ body: (GroupSeek) throws -> Void) throws {
        let dir = descending ? "DESC" : "ASC"
        // The next group's first row: within the range, or after the last group's key
        // (which then replaces the range's start bound).
        let (firstConds, firstArgs) = range.sqlConditions()
        var (afterConds, afterArgs) = range.withoutStart(descending: descending).sqlConditions()
        afterConds.append(descending ? "key < ?" : "key > ?")
        let afterKeyIndex = Int32(afterArgs.count + 1)
        // A group's rows: its key, within the range (its document-ID bounds apply to the
        // first and last groups).
        let countSQL = "SELECT count(*) FROM \(table) WHERE key = ?" + firstConds.map { " AND " + $0 }.joined()
        let first = try conn.prepare("SELECT key, row FROM \(table)" + whereClause(firstConds) + " ORDER BY key \(dir) LIMIT 1")
        let after = try conn.prepare("SELECT key, row FROM \(table)" + whereClause(afterConds) + " ORDER BY key \(dir) LIMIT 1")
        let count = try conn.prepare(countSQL)
        for (i, a) in firstArgs.enumerated() { a.bind(first, Int32(i + 1)); a.bind(count, Int32(i + 2)) }
        for (i, a) in afterArgs.enumerated() { a.bind(after, Int32(i + 1)) }
        defer { first.reset(); after.reset(); count.reset() }
        try body(GroupSeek(first: first, after: after, count: count, afterKeyIndex: afterKeyIndex))
    }
}
