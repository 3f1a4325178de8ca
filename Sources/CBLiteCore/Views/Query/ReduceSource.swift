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
            } else {
                scan.recycle()                   // every row read so far is consumed (copied)
                guard try scan.next(into: &row) else {
                    finished = true
                    break
                }
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
            try reduction?.add(key: row.key, value: row.value, docID: row.sourceDocID ?? row.docID)
        }
        guard current != nil else { return nil }
        return QueryRow(key: keyJSON, value: try reduction?.finish(), docID: nil, sourceDocID: nil, sequence: 0, doc: nil)
    }
}
