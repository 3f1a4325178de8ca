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
        page = []
        pageIndex = 0
        if !grouped {
            done = true
            let n: Int64 = try store.read { conn in
                try ViewStorage.countRows(conn, table: table, counts: counts, range: range)
            }
            if n > 0 { page = [QueryRow(key: Array("null".utf8), value: Array(String(n).utf8), docID: nil, sourceDocID: nil, sequence: 0, doc: nil)] }
            return
        }
        if seekingGroups && counts == nil { return try fetchGroupsBySeeking(table) }
        var rows: [QueryRow] = []
        var last: [UInt8]?
        try store.read { conn in
            try ViewStorage.countGroups(conn, table: table, counts: counts, range: range, after: lastKey,
                                        descending: descending, limit: CountSource.pageSize) { s in
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

    /// A page of groups, each found by a seek and counted over its key; stops seeking (for
    /// this query) when the groups turn out small.
    private func fetchGroupsBySeeking(_ table: String) throws {
        var rows: [QueryRow] = []
        var groups: Int64 = 0, counted: Int64 = 0
        try store.read { conn in
            try ViewStorage.seekGroups(conn, table: table, range: range, descending: descending) { seek in
                while rows.count < CountSource.pageSize {
                    guard let group = try seek.next(after: lastKey) else { done = true; return }
                    let n = try seek.rows(of: group.key)
                    lastKey = group.key
                    rows.append(QueryRow(key: group.keyJSON, value: Array(String(n).utf8), docID: nil, sourceDocID: nil, sequence: 0, doc: nil))
                    groups += 1
                    counted += n
                    if groups >= 4 && counted < CountSource.seekMinimumRows * groups {
                        seekingGroups = false            // small groups: the rest by GROUP BY
                        return
                    }
                }
            }
        }
        page = rows
        pageIndex = 0
    }
}
