/// Runs a `_find`: scans the chosen index (a json index's view rows, or the documents by
/// ID for `_all_docs`) a page at a time, reads each page's documents in one read
/// transaction, keeps those the selector matches, and yields them one by one after
/// `skip`, up to `limit` — memory bounded by a page whatever the result's size. The
/// bookmark, warnings and execution statistics are final once `next()` returned nil.
public final class FindCursor {
    public let plan: QueryPlan
    let request: FindRequest
    private let collection: Collection
    private var source: MapScan?
    private var idCursor: String?
    private var scanDone = false
    /// The current page: each row's key and document ID, and its document's JSON text (nil:
    /// gone, or not read because the index covers the query).
    private var pending: [(key: JSONValue, id: String, text: [UInt8]?)] = []
    /// The index's columns give every field the query reads: documents are not read
    /// (CouchDB's covering indexes), the result is made from the key.
    let covering: Bool
    private var pendingIndex = 0
    private var toSkip: Int64
    private var returned: Int64 = 0
    private var last: Bookmark?
    private let started = MonotonicTime.now()
    public private(set) var keysExamined: Int64 = 0
    public private(set) var docsExamined: Int64 = 0
    static let pageSize = 256

    init(collection: Collection, request: FindRequest, plan: QueryPlan) throws {
        self.collection = collection
        self.request = request
        self.plan = plan
        toSkip = request.skip
        let available = Set(plan.index.columns + ["_id"])
        covering = !plan.index.isSpecial && !request.projection.isAll && !request.conflicts
            && request.projection.names.allSatisfy(available.contains) && request.selector.fieldNames.allSatisfy(available.contains)
        let resume = try request.bookmark.map(Bookmark.init)
        if plan.empty || request.limit == 0 { scanDone = true; return }
        if plan.index.isSpecial {
            idCursor = resume?.docID
        } else {
            let view = plan.index.view(in: collection)
            if request.update { try view.updateIndex() }
            let st = try view.state()
            var range = plan.keyRange
            if let b = resume {
                let k = CollatableKey.encode(b.key)
                if request.sort.descending { range.upper = k; range.upperDocID = b.docID; range.upperInclusive = false }
                else { range.lower = k; range.lowerDocID = b.docID; range.lowerInclusive = false }
            }
            source = MapScan(store: collection.store, table: st.map { ViewStorage.table($0.id) }, range: range,
                             descending: request.sort.descending)
        }
    }

    /// The next result document (projected), nil at the end.
    public func next() throws -> JSONValue? { try nextResult()?.doc }

    /// The next result with the index key and document ID it was found at, and its JSON
    /// text when that is the document as stored (no `fields`): it is then not written again.
    func nextResult() throws -> (key: JSONValue, id: String, doc: JSONValue, text: [UInt8]?)? {
        while returned < request.limit {
            if pendingIndex >= pending.count {
                if scanDone { return nil }
                try fetchPage()
                continue
            }
            let p = pending[pendingIndex]
            pendingIndex += 1
            keysExamined += 1
            let doc: JSONValue
            var text: [UInt8]? = nil
            if covering {
                doc = coveredDocument(key: p.key, id: p.id)
                guard request.selector.matches(doc) else { continue }
            } else {
                guard let t = p.text else { continue }
                docsExamined += 1
                // Matched over the text: a document that does not match is never parsed whole.
                guard try t.withUnsafeBufferPointer({ try request.selector.matches(json: $0) }) else { continue }
                doc = try t.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) }
                if request.projection.isAll { text = t }
            }
            if toSkip > 0 { toSkip -= 1; continue }
            returned += 1
            last = Bookmark(key: p.key, docID: p.id)
            return (p.key, p.id, request.projection.apply(doc), text)
        }
        return nil
    }

    /// The next result as JSON text.
    public func nextJSON() throws -> [UInt8]? {
        try nextResult().map { $0.text ?? JSONWriter.ordered($0.doc) }
    }

    public var resultsReturned: Int64 { returned }

    /// Where the next page starts ("nil" when nothing was returned, as CouchDB says).
    public var bookmark: String { last?.text ?? request.bookmark ?? "nil" }

    /// CouchDB's warnings, joined by newlines (nil: none).
    public var warning: String? {
        var w: [String] = []
        if plan.index.isSpecial { w.append("No matching index found, create an index to optimize query time.") }
        if let u = plan.useIndexWarning { w.append(u) }
        let ratio = returned == 0 ? Double(docsExamined) : Double(docsExamined) / Double(returned)
        if ratio > 10 {
            w.append("The number of documents examined is high in proportion to the number of results returned. Consider adding a more specific index to improve this.")
        }
        return w.isEmpty ? nil : w.joined(separator: "\n")
    }

    /// What a find says beside its documents: bookmark, warning, execution statistics.
    public var infoJSON: JSONValue {
        var m: [(key: String, value: JSONValue)] = [("bookmark", .string(bookmark))]
        if let w = warning { m.append(("warning", .string(w))) }
        m.append(("execution_stats", executionStats))
        return .object(JSONObject(m))
    }

    public var executionStats: JSONValue {
        let ms = Double(MonotonicTime.now().nanoseconds - started.nanoseconds) / 1e6
        return .object(JSONObject([("total_keys_examined", .int(keysExamined)), ("total_docs_examined", .int(docsExamined)),
                                   ("total_quorum_docs_examined", .int(0)), ("results_returned", .int(returned)),
                                   ("execution_time_ms", .double((ms * 1000).rounded() / 1000))]))
    }

    // MARK: scanning

    private func fetchPage() throws {
        pending.removeAll(keepingCapacity: true)
        pendingIndex = 0
        var ids: [(id: String, key: JSONValue)] = []
        if let source {
            source.recycle()
            var row = QueryRowRef(key: UnsafeBufferPointer(start: nil, count: 0), sequence: 0)
            while ids.count < FindCursor.pageSize, try source.next(into: &row) {
                guard let d = row.docID else { continue }
                let key = (try? JSONParser.parse(bytes: row.key)) ?? .null
                ids.append((String(decoding: d, as: UTF8.self), key))
            }
            if ids.count < FindCursor.pageSize { scanDone = true }
        } else {
            ids = try idPage().map { ($0, .string($0)) }
        }
        let docs: [[UInt8]?] = covering ? Array(repeating: nil, count: ids.count) : try readDocuments(ids.map(\.id))
        for (i, doc) in docs.enumerated() { pending.append((ids[i].key, ids[i].id, doc)) }
    }

    /// The document a covering index's key stands for: its columns' values and its ID.
    private func coveredDocument(key: JSONValue, id: String) -> JSONValue {
        var doc = JSONValue.object(JSONObject([("_id", .string(id))]))
        for (column, value) in zip(plan.index.columns, key.arrayValue ?? []) where column != "_id" {
            if let path = try? FieldPath(column) { Projection.set(&doc, path.parts[...], value) }
        }
        return doc
    }

    /// The next page of live, non-design document IDs within the `_id` bounds.
    private func idPage() throws -> [String] {
        let (lo, hi) = plan.idBounds
        let desc = request.sort.descending
        var lower = lo.map { DocumentStore.Bound(value: .string($0), inclusive: true) }
        var upper = hi.map { DocumentStore.Bound(value: .string($0), inclusive: true) }
        if let c = idCursor {
            if desc { upper = .init(value: .string(c), inclusive: false) } else { lower = .init(value: .string(c), inclusive: false) }
        }
        let docStore = collection.docStore
        let raw: [String] = try collection.mapMissingTable {
            try collection.store.read { conn in
                let s = try docStore.summaries(conn, filter: .live, lower: lower, upper: upper, descending: desc,
                                                limit: Int64(FindCursor.pageSize))
                defer { s.reset() }
                var out: [String] = []
                while try s.step() { out.append(s.string(0) ?? "") }
                return out
            }
        }
        if raw.count < FindCursor.pageSize { scanDone = true }
        idCursor = raw.last
        return raw.filter { !$0.hasPrefix("_design/") }      // design documents are not queried
    }

    /// The JSON of the current revisions of `ids` in one read (nil: gone since the scan).
    private func readDocuments(_ ids: [String]) throws -> [[UInt8]?] {
        if request.conflicts {
            return ids.map { id in try? collection.get(docID: id, options: .conflicts) }
        }
        let docStore = collection.docStore
        return try collection.mapMissingTable {
            try collection.store.read { conn in
                try ids.map { id -> [UInt8]? in
                    let json: [UInt8]?? = try docStore.current(conn, docID: id) { s -> [UInt8]? in
                        if DocFlags(rawValue: s.int(1)).contains(.deleted) { return nil }
                        let rev = s.borrowedNonEmpty(2) ?? UnsafeBufferPointer(start: nil, count: 0)
                        return DocumentJSON.render(docID: id, rev: rev, deleted: false, body: s.borrowedBytes(3))
                    }
                    return json ?? nil
                }
            }
        }
    }
}

extension Collection {
    /// Runs a Mango query (a `_find` body). See FindRequest, QueryPlan and FindCursor.
    public func find(_ request: FindRequest) throws -> FindCursor {
        try check()
        let indexes = try mangoIndexes()
        try dropOrphanMangoViews(keeping: indexes)
        return try FindCursor(collection: self, request: request, plan: try QueryPlan.make(request, indexes: indexes))
    }

    public func find(json: String) throws -> FindCursor { try find(try FindRequest(json: json)) }

    /// The same as a query result (the C ABI's cbl_query_result): a row per document,
    /// its key the index key it was found at, its document the (projected) result.
    public func findQuery(_ request: FindRequest) throws -> (result: QueryEnumerator, cursor: FindCursor) {
        let cursor = try find(request)
        let e = QueryEnumerator(source: ValueRows(FindRows(cursor)), options: QueryOptions(), collection: self, viewName: nil,
                                totalRows: 0, generation: 0, lastSequence: try lastSequence, includeDocs: false)
        return (e, cursor)
    }
}

/// A find's results as query rows.
final class FindRows: ValueRowProducer {
    let cursor: FindCursor
    init(_ c: FindCursor) { cursor = c }
    func next() throws -> QueryRow? {
        guard let r = try cursor.nextResult() else { return nil }
        return QueryRow(key: JSONWriter.ordered(r.key), value: nil, docID: r.id, sourceDocID: r.id, sequence: 0,
                        doc: r.text ?? JSONWriter.ordered(r.doc))
    }
}
