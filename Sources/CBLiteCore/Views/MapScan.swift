import Glibc

/// Scans a view index in key order (or for a list of keys), a page at a time. Each page
/// is a fresh read positioned after the previous page's last row, so no read transaction
/// stays open between pages, and a query over millions of rows holds one page in memory.
/// A page's texts sit in one arena, from which rows are lent without copying.
final class MapScan: RowSource {
    private let store: Store
    private let table: String?
    private let descending: Bool
    private let range: QueryOptions.Range
    private let keys: [[UInt8]]?                 // CollatableKeys of "keys", in their order
    private let withCollatableKeys: Bool         // rows carry their CollatableKey (grouping needs it)
    private var keyIndex = 0
    private let arena = RowArena(capacity: 64 * 1024)
    private var rows: [PageRow] = []
    private var rowIndex = 0
    private var cursor: (key: [UInt8], docID: String, n: Int64)?
    private var done = false
    static let pageSize = 2048

    /// A row of the current page: its stored IndexRow, copied into the arena (texts
    /// already 0-terminated there), read when the row is lent; its CollatableKey when asked for.
    private struct PageRow {
        var stored: RowArena.Span, key: RowArena.Span
    }

    init(store: Store, table: String?, options: QueryOptions, withCollatableKeys: Bool = false) {
        self.store = store
        self.table = table
        self.withCollatableKeys = withCollatableKeys
        descending = options.descending
        range = options.keyRange()
        keys = options.keys.map { $0.map { CollatableKey.encode($0) } }
        rows.reserveCapacity(MapScan.pageSize)
        if table == nil { done = true }
    }

    func next(into row: inout QueryRowRef) throws -> Bool {
        while rowIndex >= rows.count {
            if done { return false }
            try fetchPage()
        }
        let r = rows[rowIndex]
        rowIndex += 1
        var stored = try IndexRow.read(arena.buffer(r.stored))
        var docID = stored.docID
        if let v = stored.value, v.first == UInt8(ascii: "{"), let target = MapScan.redirect(v) {
            let span = arena.store(target)                     // may move the arena: read the row again
            stored = try IndexRow.read(arena.buffer(r.stored))
            docID = arena.buffer(span)!
        }
        row.key = stored.keyJSON
        row.value = stored.value
        row.docID = docID
        row.sourceDocID = stored.docID
        row.doc = nil
        row.error = nil
        row.sequence = stored.sequence
        row.collatableKey = arena.buffer(r.key)
        return true
    }

    /// The WHERE conditions and arguments of the next page.
    private func pageConditions() -> (conds: [String], args: [SQLArg])? {
        let cmpGT = descending ? "<" : ">"
        var conds: [String] = []
        var args: [SQLArg] = []
        if let keys {
            guard keyIndex < keys.count else { return nil }
            conds.append("key = ?")
            args.append(.blob(keys[keyIndex]))
            if let c = cursor {
                conds.append("(docid, n) \(cmpGT) (?, ?)")
                args += [.string(c.docID), .int(c.n)]
            }
            return (conds, args)
        }
        guard let c = cursor else { return range.sqlConditions() }
        (conds, args) = range.withoutStart(descending: descending).sqlConditions()
        conds.append("(key, docid, n) \(cmpGT) (?, ?, ?)")
        args += [.blob(c.key), .string(c.docID), .int(c.n)]
        return (conds, args)
    }

    private func fetchPage() throws {
        rows.removeAll(keepingCapacity: true)
        rowIndex = 0
        arena.reset()
        guard let table, let (conds, args) = pageConditions() else { done = true; return }
        let dir = descending ? "DESC" : "ASC"
        let order = keys != nil ? "docid \(dir), n \(dir)" : "key \(dir), docid \(dir), n \(dir)"
        // The CollatableKey column only when rows need it; the next page's cursor re-encodes
        // the last row's key from its JSON instead (once per page, not per row).
        let sql = "SELECT row\(withCollatableKeys ? ", key" : "") FROM \(table)"
            + (conds.isEmpty ? "" : " WHERE " + conds.joined(separator: " AND "))
            + " ORDER BY \(order) LIMIT \(MapScan.pageSize)"
        let withKeys = withCollatableKeys
        try store.read { conn in
            let s: Statement
            do { s = try conn.prepare(sql) } catch let e as CBLError where e.message.contains("no such table") { return }
            defer { s.reset() }
            for (i, a) in args.enumerated() { a.bind(s, Int32(i + 1)) }
            while try s.step() {
                let stored = arena.store(s.borrowedNonEmpty(0))
                let key: RowArena.Span = withKeys ? arena.store(s.borrowedBytes(1)) : .none
                rows.append(PageRow(stored: stored, key: key))
            }
        }
        if let last = rows.last {
            let stored = try IndexRow.read(arena.buffer(last.stored))
            let key = try JSONParser.parse(bytes: stored.keyJSON)
            cursor = (CollatableKey.encode(key), String(decoding: stored.docID, as: UTF8.self), stored.n)
        }
        if rows.count < MapScan.pageSize {
            if keys != nil {
                keyIndex += 1
                cursor = nil
            } else {
                done = true
            }
        }
    }

    /// The seeds' redirection: a value that is an object with a string "_id" names the
    /// document the row refers to.
    static func redirect(_ value: UnsafeBufferPointer<UInt8>?) -> String? {
        guard let value, value.first == UInt8(ascii: "{"), contains(value, "\"_id\""),
              let o = try? JSONParser.parseObject(bytes: value) else { return nil }
        return o["_id"]?.stringValue
    }

    private static func contains(_ haystack: UnsafeBufferPointer<UInt8>, _ needle: StaticString) -> Bool {
        let n = needle.utf8CodeUnitCount
        guard haystack.count >= n, let base = haystack.baseAddress else { return false }
        let first = needle.utf8Start[0]
        for i in 0...(haystack.count - n) where base[i] == first && memcmp(base + i, needle.utf8Start, n) == 0 { return true }
        return false
    }
}
