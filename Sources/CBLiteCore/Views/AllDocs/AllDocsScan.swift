/// The rows of an all-documents query (see `Collection.allDocsQuery`), read a page at a time.
final class AllDocsScan: ValueRowProducer {
    private let collection: Collection
    private let options: QueryOptions
    private let mode: QueryOptions.AllDocsMode
    private var page: [QueryRow] = []
    private var pageIndex = 0
    private var cursorID: String?
    private var cursorSeq: Int64?
    private var keyIndex = 0
    private var done = false
    private let lower: SQLArg?, upper: SQLArg?
    private let lowerInclusive: Bool, upperInclusive: Bool
    static let pageSize = 256

    init(collection: Collection, options: QueryOptions) throws {
        self.collection = collection
        self.options = options
        mode = options.allDocsMode
        let bySeq = mode == .bySequence
        func arg(_ v: JSONValue?, prefix: Bool) throws -> SQLArg? {
            guard let v else { return nil }
            if v.isNull { return nil }
            if bySeq {
                guard let n = v.intValue else { throw CBLError.badRequest("by_sequence keys must be integers") }
                return .int(n)
            }
            guard var s = v.stringValue else { throw CBLError.badRequest("all-documents keys must be document IDs (strings)") }
            if prefix { s += "\u{10FFFF}" }    // above every ID with this prefix in byte order
            return .string(s)
        }
        let pml = options.prefixMatchLevel > 0
        if options.descending {
            upper = try arg(options.startKey, prefix: pml)
            lower = try arg(options.endKey, prefix: false)
            lowerInclusive = options.inclusiveEnd
            upperInclusive = true
        } else {
            lower = try arg(options.startKey, prefix: false)
            upper = try arg(options.endKey, prefix: pml)
            lowerInclusive = true
            upperInclusive = options.inclusiveEnd
        }
        if options.keys != nil && bySeq { throw CBLError.badRequest("\"keys\" is not supported with by_sequence") }
    }

    /// The rows the mode lists.
    private var filter: DocumentStore.Filter {
        mode == .onlyConflicts ? .conflicted : (mode == .allDocs || mode == .showConflicts ? .live : .all)
    }

    /// How many rows come before the first one the range allows (0 for a `keys` query or
    /// none given): with `skip`, CouchDB's `offset`.
    func rowsBeforeStart() throws -> Int64 {
        guard options.keys == nil else { return 0 }
        let desc = options.descending
        guard let start = desc ? upper : lower else { return 0 }
        let bound = DocumentStore.Bound(value: start, inclusive: desc ? upperInclusive : lowerInclusive)
        return try collection.mapMissingTable {
            try collection.store.read { conn in
                try collection.docStore.count(conn, bySequence: mode == .bySequence, filter: filter, before: bound, descending: desc)
            }
        }
    }

    func next() throws -> QueryRow? {
        while true {
            if pageIndex < page.count {
                pageIndex += 1
                return page[pageIndex - 1]
            }
            if done { return nil }
            try fetchPage()
        }
    }

    private func value(rev: String, deleted: Bool, conflicts: [String]?) -> [UInt8] {
        var members: [(String, JSONValue)] = [("rev", .string(rev))]
        if deleted { members.append(("deleted", .bool(true))) }
        if let conflicts, !conflicts.isEmpty { members.append(("_conflicts", .array(conflicts.map { .string($0) }))) }
        var w = JSONWriter(canonical: false)
        w.write(.object(JSONObject(members.map { (key: $0.0, value: $0.1) })))
        return w.bytes
    }

    private func conflicts(_ conn: Connection, _ docID: String) throws -> [String] {
        guard let row = try collection.docStore.row(conn, docID: docID) else { return [] }
        let (tree, current) = try row.tree()
        return tree.conflictingLeaves.filter { $0 != current }.map { tree.nodes[$0].rev.string }
    }

    private func fetchPage() throws {
        let docStore = collection.docStore
        let showConflicts = mode == .showConflicts || mode == .onlyConflicts
        if let keys = options.descending ? options.keys?.reversed() : options.keys {
            // One document per key, in the order given (reversed when descending, as CouchDB).
            guard keyIndex < keys.count else { done = true; page = []; pageIndex = 0; return }
            let batch = Array(keys[keyIndex..<min(keys.count, keyIndex + AllDocsScan.pageSize)])
            keyIndex += batch.count
            page = try collection.mapMissingTable {
                try collection.store.read { conn in
                    var out: [QueryRow] = []
                    for k in batch {
                        let keyJSON = Collation.compactJSON(k)
                        guard let id = k.stringValue, let (seq, flags, rev) = try docStore.summary(conn, docID: id) else {
                            out.append(QueryRow(key: keyJSON, value: nil, docID: nil, sourceDocID: nil, sequence: 0, doc: nil, error: "not_found"))
                            continue
                        }
                        if mode == .onlyConflicts && !flags.contains(.conflicted) { continue }
                        let c = showConflicts && flags.contains(.conflicted) ? try conflicts(conn, id) : nil
                        out.append(QueryRow(key: keyJSON, value: value(rev: rev, deleted: flags.contains(.deleted), conflicts: c),
                                            docID: id, sourceDocID: id, sequence: seq, doc: nil))
                    }
                    return out
                }
            }
            pageIndex = 0
            return
        }
        let bySeq = mode == .bySequence
        let desc = options.descending
        // After the first page the cursor replaces the start bound, so SQLite seeks to it
        // (given both, it may seek to the start bound and filter its way to the cursor).
        let cursor: SQLArg? = bySeq ? cursorSeq.map { .int($0) } : cursorID.map { .string($0) }
        var lowerBound = lower.map { DocumentStore.Bound(value: $0, inclusive: lowerInclusive) }
        var upperBound = upper.map { DocumentStore.Bound(value: $0, inclusive: upperInclusive) }
        if let cursor {
            if desc { upperBound = .init(value: cursor, inclusive: false) } else { lowerBound = .init(value: cursor, inclusive: false) }
        }
        let rows: [QueryRow] = try collection.mapMissingTable {
            try collection.store.read { conn in
                let s = try docStore.summaries(conn, bySequence: bySeq, filter: filter, lower: lowerBound, upper: upperBound,
                                                descending: desc, limit: Int64(AllDocsScan.pageSize))
                defer { s.reset() }
                var raw: [(String, Int64, DocFlags, String)] = []
                while try s.step() { raw.append((s.string(0) ?? "", s.int(1), DocFlags(rawValue: s.int(2)), s.string(3) ?? "")) }
                s.reset()
                return try raw.map { (id, seq, flags, rev) in
                    let c = showConflicts && flags.contains(.conflicted) ? try conflicts(conn, id) : nil
                    let key = bySeq ? Array(String(seq).utf8) : Collation.compactJSON(.string(id))
                    return QueryRow(key: key, value: value(rev: rev, deleted: flags.contains(.deleted), conflicts: c),
                                    docID: id, sourceDocID: id, sequence: seq, doc: nil)
                }
            }
        }
        page = rows
        pageIndex = 0
        if let last = rows.last { cursorID = last.docID; cursorSeq = last.sequence }
        if rows.count < AllDocsScan.pageSize { done = true }
    }
}
