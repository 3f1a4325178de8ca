/// Groups and reduces the rows of an index scan, one group at a time, holding only the
/// current group's reduction. Rows are grouped by their CollatableKey (a group level
/// keeps an array key's first items), so groups are exactly the collation's equal keys.
final class ReduceSource: ValueRowProducer {
    private let scan: RowSource
    private let reducer: Reducer?
    private let level: Int          // 0: everything, Int.max: exact keys
    private var pendingRow: QueryRowRef?   // the first row of the next group (still lent by the scan)
    private var finished = false

    init(scan: RowSource, reducer: Reducer?, level: Int) {
        self.scan = scan
        self.reducer = reducer
        self.level = level
    }

    private static let nullKey = CollatableKey.encode(.null)

    /// Calls `body` with the group of a row (no copy for exact keys), or returns nil when
    /// the row is left out (a non-array key at group levels above 1, as the seeds say).
    private func withGroup<T>(of row: QueryRowRef, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T? {
        if level == 0 { return try ReduceSource.nullKey.withUnsafeBufferPointer(body) }
        let key = row.collatableKey ?? UnsafeBufferPointer(start: nil, count: 0)
        if level == Int.max { return try body(key) }
        return try CollatableKey.groupPrefix(key, level: level).map { try $0.withUnsafeBufferPointer(body) }
    }

    /// The JSON key of a group, from the JSON key of its first row.
    private func groupKeyJSON(_ row: QueryRowRef) throws -> [UInt8] {
        if level == 0 { return Array("null".utf8) }
        guard level != Int.max, row.key.first == UInt8(ascii: "[") else { return Array(row.key) }
        guard case .array(let items) = try JSONParser.parse(bytes: row.key), items.count > level else { return Array(row.key) }
        return Collation.compactJSON(.array(Array(items.prefix(level))))
    }

    func next() throws -> QueryRow? {
        if finished { return nil }
        var current: [UInt8]? = nil
        var keyJSON: [UInt8] = []
        let reduction = reducer.map { Reduction($0) }
        while true {
            var row = QueryRowRef()
            if let p = pendingRow {
                row = p
                pendingRow = nil
            } else if try !scan.next(into: &row) {
                finished = true
                break
            }
            // true: the row belongs to the current group (or starts it); false: it starts the
            // next one; nil: it is left out.
            let inGroup: Bool? = withGroup(of: row) { g in
                if let c = current { return c.elementsEqual(g) }
                current = Array(g)
                return true
            }
            guard let inGroup else { continue }
            if !inGroup {
                pendingRow = row
                break
            }
            if keyJSON.isEmpty { keyJSON = try groupKeyJSON(row) }
            try reduction?.add(key: row.key, value: row.value)
        }
        guard current != nil else { return nil }
        return QueryRow(key: keyJSON, value: try reduction?.finish(), docID: nil, sourceDocID: nil, sequence: 0, doc: nil)
    }
}

/// The built-in `_count` over a key range, reduced (level 0) or grouped by exact key,
/// computed by SQLite from the index (count(*) ... GROUP BY key) instead of streaming
/// every row through a Reduction: the same groups, since a group is exactly the rows
/// with equal CollatableKeys. Grouped results come in pages, like index scans.
final class CountSource: ValueRowProducer {
    private let store: Store
    private let table: String?
    private let range: QueryOptions.Range
    private let descending: Bool
    private let grouped: Bool
    private var page: [QueryRow] = []
    private var pageIndex = 0
    private var lastKey: [UInt8]?
    private var done = false
    static let pageSize = 512

    /// Whether a query can be answered this way: `_count`, no "keys", and no grouping
    /// other than by exact key.
    static func applies(reducer: Reducer?, options: QueryOptions) -> Bool {
        guard case .count? = reducer, options.keys == nil else { return false }
        let level = options.effectiveGroupLevel
        return level == 0 || level == Int.max
    }

    init(store: Store, table: String?, options: QueryOptions) {
        self.store = store
        self.table = table
        range = options.keyRange()
        descending = options.descending
        grouped = options.effectiveGroupLevel == Int.max
        done = table == nil
    }

    func next() throws -> QueryRow? {
        while pageIndex >= page.count {
            if done { return nil }
            try fetch()
        }
        pageIndex += 1
        return page[pageIndex - 1]
    }

    private func fetch() throws {
        guard let table else { done = true; return }
        // After the first page of groups, the last key replaces the range's start bound.
        var (conds, args) = (lastKey == nil ? range : range.withoutStart(descending: descending)).sqlConditions()
        let whereClause = { conds.isEmpty ? "" : " WHERE " + conds.joined(separator: " AND ") }
        page = []
        pageIndex = 0
        if !grouped {
            done = true
            let n: Int64 = try store.read { conn in
                let s = try conn.prepare("SELECT count(*) FROM \(table)" + whereClause())
                defer { s.reset() }
                for (i, a) in args.enumerated() { a.bind(s, Int32(i + 1)) }
                return try s.step() ? s.int(0) : 0
            }
            if n > 0 { page = [QueryRow(key: Array("null".utf8), value: Array(String(n).utf8), docID: nil, sourceDocID: nil, sequence: 0, doc: nil)] }
            return
        }
        if let k = lastKey {
            conds.append(descending ? "key < ?" : "key > ?")
            args.append(.blob(k))
        }
        // The group's key is the JSON one of its rows emitted (they all collate equal; as a
        // bare column, SQLite takes it from the group's last row).
        let sql = "SELECT key, row, count(*) FROM \(table)" + whereClause()
            + " GROUP BY key ORDER BY key \(descending ? "DESC" : "ASC") LIMIT \(CountSource.pageSize)"
        var rows: [QueryRow] = []
        var last: [UInt8]?
        try store.read { conn in
            let s = try conn.prepare(sql)
            defer { s.reset() }
            for (i, a) in args.enumerated() { a.bind(s, Int32(i + 1)) }
            while try s.step() {
                last = s.bytes(0)
                let stored = try IndexRow.read(s.borrowedNonEmpty(1))
                rows.append(QueryRow(key: Array(stored.keyJSON), value: Array(String(s.int(2)).utf8), docID: nil,
                                     sourceDocID: nil, sequence: 0, doc: nil))
            }
        }
        page = rows
        lastKey = last
        if rows.count < CountSource.pageSize { done = true }
    }
}
