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
        // bare column, SQLite takes it from the group's last row), or made from the key.
        // (Made from the key alone, with no row column read, measured no cheaper.)
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
                rows.append(QueryRow(key: try stored.keyJSONBytes(key: s.borrowedBytes(0)), value: Array(String(s.int(2)).utf8), docID: nil,
                                     sourceDocID: nil, sequence: 0, doc: nil))
            }
        }
        page = rows
        lastKey = last
        if rows.count < CountSource.pageSize { done = true }
    }
}
