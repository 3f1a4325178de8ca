/// One row of a query result. Keys and values are JSON text. Map rows carry the
/// document ID (redirected by a value {"_id": ...}), the ID of the document that emitted
/// the row, and its sequence; reduced and grouped rows carry only key and value.
public struct QueryRow: Sendable, Equatable {
    public let key: [UInt8]
    public let value: [UInt8]?
    public let docID: String?
    public let sourceDocID: String?
    public let sequence: Int64
    public var doc: [UInt8]?
    /// All-docs queries with "keys": "not_found" for an ID with no document.
    public var error: String? = nil

    public var keyJSON: String { String(decoding: key, as: UTF8.self) }
    public var valueJSON: String? { value.map { String(decoding: $0, as: UTF8.self) } }
    public func keyValue() throws -> JSONValue { try key.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) } }
    public func valueValue() throws -> JSONValue? {
        try value.map { v in try v.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) } }
    }

    /// {"id":..,"key":..,"value":..,"seq":n,"source_id":..?,"doc":..?} (reduced rows:
    /// {"key":..,"value":..}).
    func write(_ w: inout JSONWriter, includeDocs: Bool) {
        w.append("{")
        if let error {
            w.append("\"key\":")
            w.appendRaw(key)
            w.append(",\"error\":")
            w.writeString(error)
            w.append("}")
            return
        }
        if let docID {
            w.append("\"id\":")
            w.writeString(docID)
            w.append(",")
        }
        w.append("\"key\":")
        w.appendRaw(key)
        w.append(",\"value\":")
        if let value { w.appendRaw(value) } else { w.append("null") }
        if docID != nil {
            w.append(",\"seq\":\(sequence)")
            if let sourceDocID, sourceDocID != docID {
                w.append(",\"source_id\":")
                w.writeString(sourceDocID)
            }
            if includeDocs {
                w.append(",\"doc\":")
                if let doc { w.appendRaw(doc) } else { w.append("null") }
            }
        }
        w.append("}")
    }
}

/// Produces rows one at a time.
protocol RowSource: AnyObject {
    func next() throws -> QueryRow?
}

/// A query's results, read row by row: the index is read in pages of `pageSize` rows
/// (each page a fresh read positioned after the previous one), so a query over millions
/// of rows holds constant memory. `isStale` tells whether the index changed since.
public final class QueryEnumerator: @unchecked Sendable {
    private let source: RowSource
    private var skip: Int64
    private var remaining: Int64
    private let includeDocs: Bool
    private let collection: Collection
    private let viewName: String?
    private var prefetched: [QueryRow] = []
    private let monitor = Monitor()

    public let offset: Int64
    /// Rows in the index (documents for all-docs queries) when the query ran.
    public let totalRows: Int64
    /// The index's generation and last indexed sequence when the query ran.
    public let generation: Int64
    public let lastSequence: Int64

    init(source: RowSource, options: QueryOptions, collection: Collection, viewName: String?,
         totalRows: Int64, generation: Int64, lastSequence: Int64, includeDocs: Bool) {
        self.source = source
        skip = options.skip
        offset = options.skip
        remaining = options.limit
        self.includeDocs = includeDocs
        self.collection = collection
        self.viewName = viewName
        self.totalRows = totalRows
        self.generation = generation
        self.lastSequence = lastSequence
    }

    /// The next row, nil at the end. Not for concurrent use from several threads at once
    /// (calls are serialized).
    public func next() throws -> QueryRow? {
        try monitor.locked {
            if !prefetched.isEmpty { return prefetched.removeFirst() }
            return try pull()
        }
    }

    private func pull() throws -> QueryRow? {
        if remaining == 0 { return nil }
        while skip > 0 {
            guard try source.next() != nil else { return nil }
            skip -= 1
        }
        guard var row = try source.next() else { return nil }
        if remaining > 0 { remaining -= 1 }
        if includeDocs, let id = row.docID {
            row.doc = try? collection.get(docID: id)
        }
        return row
    }

    /// Reads the first rows now (update "after": they are read before the update starts).
    func prefetch(_ n: Int) throws {
        try monitor.locked {
            while prefetched.count < n, let r = try pull() { prefetched.append(r) }
        }
    }

    /// Every remaining row.
    public func allRows() throws -> [QueryRow] {
        var out: [QueryRow] = []
        while let r = try next() { out.append(r) }
        return out
    }

    /// True when re-running the query could give other rows: the index changed since, or
    /// the collection has changes the index does not cover yet. Conservative.
    public var isStale: Bool {
        get throws {
            guard let viewName else {
                return try collection.lastSequence != lastSequence
            }
            let st = try collection.store.read { conn in
                try ViewStorage.load(conn, collectionID: collection.id, name: viewName)
            }
            guard let st else { return true }
            let collLast = try collection.lastSequence
            return st.generation != generation || st.lastSeq < lastSequence || collLast > st.lastSeq
        }
    }

    /// The remaining rows as CouchDB-style JSON:
    /// {"total_rows":n,"offset":skip,"update_seq":seq,"rows":[...]}.
    public func json() throws -> [UInt8] {
        var w = JSONWriter(capacity: 1024)
        w.append("{\"total_rows\":\(totalRows),\"offset\":\(offset),\"update_seq\":\(lastSequence),\"rows\":[")
        var first = true
        while let r = try next() {
            if !first { w.append(",") }
            first = false
            r.write(&w, includeDocs: includeDocs)
        }
        w.append("]}")
        return w.bytes
    }
}

/// Rows already in memory (live query results).
final class ArrayRowSource: RowSource {
    private var rows: [QueryRow]
    private var i = 0
    init(_ rows: [QueryRow]) { self.rows = rows }
    func next() throws -> QueryRow? {
        guard i < rows.count else { return nil }
        defer { i += 1 }
        return rows[i]
    }
}

/// A bound SQL parameter.
enum SQLArg {
    case text([UInt8])
    case string(String)
    case int(Int64)

    func bind(_ s: Statement, _ i: Int32) {
        switch self {
        case .text(let b): s.bindText(i, b)
        case .string(let x): s.bind(i, x)
        case .int(let n): s.bind(i, n)
        }
    }
}

/// Scans a view index in key order (or for a list of keys), page by page.
final class MapScan: RowSource {
    private let store: Store
    private let table: String?
    private let options: QueryOptions
    private let range: QueryOptions.Range
    private let keys: [[UInt8]]?
    private var keyIndex = 0
    private var page: [(key: [UInt8], docID: String, value: [UInt8]?, seq: Int64, n: Int64)] = []
    private var pageIndex = 0
    private var cursor: (key: [UInt8], docID: String, n: Int64)?
    private var done = false
    static let pageSize = 512

    init(store: Store, table: String?, options: QueryOptions) {
        self.store = store
        self.table = table
        self.options = options
        range = options.keyRange()
        keys = options.keys.map { $0.map { Collation.encode($0) } }
        if table == nil { done = true }
    }

    func next() throws -> QueryRow? {
        while true {
            if pageIndex < page.count {
                let r = page[pageIndex]
                pageIndex += 1
                var docID = r.docID
                if let v = r.value, v.first == UInt8(ascii: "{"),
                   let o = try? v.withUnsafeBufferPointer({ try JSONParser.parseObject(bytes: $0) }),
                   let redirect = o["_id"]?.stringValue {
                    docID = redirect
                }
                return QueryRow(key: r.key, value: r.value, docID: docID, sourceDocID: r.docID, sequence: r.seq, doc: nil)
            }
            if done { return nil }
            try fetchPage()
        }
    }

    private func fetchPage() throws {
        guard let table else { done = true; return }
        let desc = options.descending
        let cmpGT = desc ? "<" : ">"
        var conds: [String] = []
        var args: [SQLArg] = []
        if let keys {
            guard keyIndex < keys.count else { done = true; page = []; pageIndex = 0; return }
            conds.append("key = ?")
            args.append(.text(keys[keyIndex]))
            if let c = cursor {
                conds.append("(docid \(cmpGT) ? OR (docid = ? AND n \(cmpGT) ?))")
                args += [.string(c.docID), .string(c.docID), .int(c.n)]
            }
        } else {
            if let lo = range.lower {
                if let d = range.lowerDocID {
                    conds.append("key >= ? AND (key > ? OR docid \(range.lowerInclusive ? ">=" : ">") ?)")
                    args += [.text(lo), .text(lo), .string(d)]
                } else {
                    conds.append(range.lowerInclusive ? "key >= ?" : "key > ?")
                    args.append(.text(lo))
                }
            }
            if let hi = range.upper {
                if let d = range.upperDocID {
                    conds.append("key <= ? AND (key < ? OR docid \(range.upperInclusive ? "<=" : "<") ?)")
                    args += [.text(hi), .text(hi), .string(d)]
                } else {
                    conds.append(range.upperInclusive ? "key <= ?" : "key < ?")
                    args.append(.text(hi))
                }
            }
            if let c = cursor {
                conds.append("key \(desc ? "<=" : ">=") ? AND (key \(cmpGT) ? OR docid \(cmpGT) ? OR (docid = ? AND n \(cmpGT) ?))")
                args += [.text(c.key), .text(c.key), .string(c.docID), .string(c.docID), .int(c.n)]
            }
        }
        let dir = desc ? "DESC" : "ASC"
        let order = keys != nil ? "docid \(dir), n \(dir)" : "key \(dir), docid \(dir), n \(dir)"
        let sql = "SELECT key, docid, value, seq, n FROM \(table)"
            + (conds.isEmpty ? "" : " WHERE " + conds.joined(separator: " AND "))
            + " ORDER BY \(order) LIMIT \(MapScan.pageSize)"
        let rows: [(key: [UInt8], docID: String, value: [UInt8]?, seq: Int64, n: Int64)] = try store.read { conn in
            let s: Statement
            do { s = try conn.prepare(sql) } catch let e as CBLError where e.message.contains("no such table") { return [] }
            defer { s.reset() }
            for (i, a) in args.enumerated() { a.bind(s, Int32(i + 1)) }
            var out: [(key: [UInt8], docID: String, value: [UInt8]?, seq: Int64, n: Int64)] = []
            out.reserveCapacity(MapScan.pageSize)
            while try s.step() {
                out.append((s.bytes(0) ?? [], s.string(1) ?? "", s.bytes(2), s.int(3), s.int(4)))
            }
            return out
        }
        page = rows
        pageIndex = 0
        if let last = rows.last { cursor = (last.key, last.docID, last.n) }
        if rows.count < MapScan.pageSize {
            if keys != nil {
                keyIndex += 1
                cursor = nil
            } else {
                done = true
            }
        }
    }
}

/// Groups and reduces the rows of a scan, one group at a time.
final class ReduceSource: RowSource {
    private let scan: RowSource
    private let reducer: Reducer?
    private let level: Int          // 0: everything, Int.max: exact keys
    private var pendingRow: QueryRow?
    private var finished = false

    init(scan: RowSource, reducer: Reducer?, level: Int) {
        self.scan = scan
        self.reducer = reducer
        self.level = level
    }

    /// The group key of a row's key, nil when the row is left out (a non-array key at
    /// group levels above 1, as the seeds say).
    private func groupKey(_ key: [UInt8]) throws -> [UInt8]? {
        if level == 0 { return Array("null".utf8) }
        if level == Int.max { return key }
        guard key.first == UInt8(ascii: "[") else { return level == 1 ? key : nil }
        guard case .array(let items) = try key.withUnsafeBufferPointer({ try JSONParser.parse(bytes: $0) }) else { return key }
        if items.count <= level { return key }
        return Collation.encode(.array(Array(items.prefix(level))))
    }

    func next() throws -> QueryRow? {
        if finished { return nil }
        var current: [UInt8]? = nil
        let reduction = reducer.map { Reduction($0) }
        var any = false
        while true {
            let row: QueryRow?
            if let p = pendingRow { row = p; pendingRow = nil } else { row = try scan.next() }
            guard let row else { finished = true; break }
            guard let g = try groupKey(row.key) else { continue }
            if let c = current, Collation.compare(c, g) != 0 {
                pendingRow = row
                break
            }
            if current == nil { current = g }
            any = true
            try reduction?.add(key: row.key, value: row.value)
        }
        guard any, let key = current else { return nil }
        let value = try reduction?.finish()
        return QueryRow(key: key, value: value, docID: nil, sourceDocID: nil, sequence: 0, doc: nil)
    }
}

extension View {
    /// Runs a query (see QueryOptions). With update "before" (the default) the index is
    /// brought up to date first; "never" reads it as it is; "after" returns the current
    /// rows and updates the index on a background thread.
    public func query(_ options: QueryOptions = QueryOptions()) throws -> QueryEnumerator {
        try collection.check()
        let reducer = currentReducer
        if options.reduce == true && reducer == nil {
            throw CBLError.badRequest("option \"reduce\" is true but view \"\(name)\" has no reduce function")
        }
        let reducing = (reducer != nil && options.reduce != false)
        let grouping = options.effectiveGroupLevel > 0
        let aggregated = reducing || grouping
        if aggregated && options.includeDocs {
            throw CBLError.badRequest("option \"include_docs\" is invalid for reduced or grouped queries")
        }
        if options.update == .before {
            guard hasMap else {
                throw CBLError(.notAcceptable, "view \"\(name)\" has no map function (query with \"update\": false to read its index as it is)")
            }
            try updateIndex()
        }
        let st = try state()
        let scanOptions: QueryOptions = {
            var o = options
            if aggregated { o.skip = 0; o.limit = -1 }
            return o
        }()
        var source: RowSource = MapScan(store: store, table: st.map { ViewStorage.table($0.id) }, options: scanOptions)
        if aggregated {
            source = ReduceSource(scan: source, reducer: reducing ? reducer : nil, level: options.effectiveGroupLevel)
        }
        let e = QueryEnumerator(source: source, options: options, collection: collection, viewName: name,
                                totalRows: st?.totalRows ?? 0, generation: st?.generation ?? 0,
                                lastSequence: st?.lastSeq ?? 0, includeDocs: options.includeDocs && !aggregated)
        if options.update == .after {
            try e.prefetch(MapScan.pageSize)
            if hasMap { updateInBackground() }
        }
        return e
    }
}
