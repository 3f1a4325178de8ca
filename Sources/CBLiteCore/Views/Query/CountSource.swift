/// The built-in `_count` over a key range, reduced (level 0) or grouped by exact key,
/// computed by SQLite from the index (count(*) ... GROUP BY key) instead of streaming
/// every row through a Reduction: the same groups, since a group is exactly the rows
/// with equal CollatableKeys. Grouped results come in pages, like index scans.
///
/// A range on keys alone (no document-ID bounds) is answered from the view's per-key
/// counts (ViewStorage.countsTable): one row per key, whatever the number of index rows.
/// With document-ID bounds, groups are counted from the index rows: one at a time while
/// they are large — a seek to the next key, then count(*) over that key's rows, which
/// SQLite counts without reading their columns — and by one GROUP BY over the rows once
/// they turn out small (a seek costs about as much as GROUP BY's work on ~20 rows).
final class CountSource: ValueRowProducer {
    private let store: Store
    private let table: String?
    /// The per-key counts, when the range bounds keys alone.
    private let counts: String?
    private let range: QueryOptions.Range
    private let descending: Bool
    private let grouped: Bool
    private var page: [QueryRow] = []
    private var pageIndex = 0
    private var lastKey: [UInt8]?
    private var done = false
    private var seekingGroups = true
    static let pageSize = 512
    /// Groups are counted by seeking while they average at least this many rows.
    static let seekMinimumRows: Int64 = 32

    /// Whether a query can be answered this way: `_count`, no "keys", and no grouping
    /// other than by exact key.
    static func applies(reducer: Reducer?, options: QueryOptions) -> Bool {
        guard case .count? = reducer, options.keys == nil else { return false }
        let level = options.effectiveGroupLevel
        return level == 0 || level == Int.max
    }

    init(store: Store, table: String?, countsTable: String?, options: QueryOptions) {
        self.store = store
        self.table = table
        range = options.keyRange()
        counts = range.lowerDocID == nil && range.upperDocID == nil ? countsTable : nil
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
                let s = try conn.prepare((counts.map { "SELECT coalesce(sum(n), 0) FROM \($0)" } ?? "SELECT count(*) FROM \(table)")
                                         + whereClause())
                defer { s.reset() }
                for (i, a) in args.enumerated() { a.bind(s, Int32(i + 1)) }
                return try s.step() ? s.int(0) : 0
            }
            if n > 0 { page = [QueryRow(key: Array("null".utf8), value: Array(String(n).utf8), docID: nil, sourceDocID: nil, sequence: 0, doc: nil)] }
            return
        }
        if seekingGroups && counts == nil { return try fetchGroupsBySeeking(table) }
        if let k = lastKey {
            conds.append(descending ? "key < ?" : "key > ?")
            args.append(.blob(k))
        }
        // The group's key is the JSON one of its rows emitted (they all collate equal; as a
        // bare column, SQLite takes it from the group's last row; the counts keep one row's),
        // or made from the key. (Made from the key alone, with no row column read, measured
        // no cheaper.)
        let order = " ORDER BY key \(descending ? "DESC" : "ASC") LIMIT \(CountSource.pageSize)"
        let sql = counts.map { "SELECT key, row, n FROM \($0)" + whereClause() + order }
            ?? "SELECT key, row, count(*) FROM \(table)" + whereClause() + " GROUP BY key" + order
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

    /// A page of groups, each found by a seek and counted by count(*) over its key; stops
    /// seeking (for this query) when the groups turn out small.
    private func fetchGroupsBySeeking(_ table: String) throws {
        let dir = descending ? "DESC" : "ASC"
        func whereClause(_ conds: [String]) -> String { conds.isEmpty ? "" : " WHERE " + conds.joined(separator: " AND ") }
        // The next group's first row: within the range, or after the last group's key
        // (which then replaces the range's start bound).
        let (firstConds, firstArgs) = range.sqlConditions()
        var (afterConds, afterArgs) = range.withoutStart(descending: descending).sqlConditions()
        afterConds.append(descending ? "key < ?" : "key > ?")
        let afterKeyIndex = Int32(afterArgs.count + 1)
        // A group's rows: its key, within the range (its document-ID bounds apply to the
        // first and last groups).
        let countSQL = "SELECT count(*) FROM \(table) WHERE key = ?" + firstConds.map { " AND " + $0 }.joined()
        var rows: [QueryRow] = []
        var groups: Int64 = 0, counted: Int64 = 0
        try store.read { conn in
            let first = try conn.prepare("SELECT key, row FROM \(table)" + whereClause(firstConds) + " ORDER BY key \(dir) LIMIT 1")
            let after = try conn.prepare("SELECT key, row FROM \(table)" + whereClause(afterConds) + " ORDER BY key \(dir) LIMIT 1")
            let count = try conn.prepare(countSQL)
            for (i, a) in firstArgs.enumerated() { a.bind(first, Int32(i + 1)); a.bind(count, Int32(i + 2)) }
            for (i, a) in afterArgs.enumerated() { a.bind(after, Int32(i + 1)) }
            defer { first.reset(); after.reset(); count.reset() }
            while rows.count < CountSource.pageSize {
                let next = lastKey == nil ? first : after
                if let k = lastKey { after.bindBlob(afterKeyIndex, k) }
                guard try next.step() else { done = true; return }
                let key = next.bytes(0) ?? []
                let keyJSON = try key.withUnsafeBufferPointer { try IndexRow.read(next.borrowedNonEmpty(1)).keyJSONBytes(key: $0) }
                next.rewind()
                count.bindBlob(1, key)
                let n = try count.step() ? count.int(0) : 0
                count.rewind()
                lastKey = key
                rows.append(QueryRow(key: keyJSON, value: Array(String(n).utf8), docID: nil, sourceDocID: nil, sequence: 0, doc: nil))
                groups += 1
                counted += n
                if groups >= 4 && counted < CountSource.seekMinimumRows * groups {
                    seekingGroups = false            // small groups: the rest by GROUP BY
                    return
                }
            }
        }
        page = rows
        pageIndex = 0
    }
}
