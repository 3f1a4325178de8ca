import Glibc

/// Runs a `_find`: scans the chosen index (a json index's view rows, or the documents by
/// ID for `_all_docs`) a page at a time and yields the documents the selector matches,
/// one by one after `skip`, up to `limit` — memory bounded by a page whatever the
/// result's size. The bookmark, warnings and execution statistics are final once
/// `next()` returned nil.
///
/// A page's texts (keys, IDs, documents as JSON) sit in one arena, from which results
/// are lent without copying (FindRows). A json index's rows are first checked against
/// the selector's conditions on the indexed fields, on their keys (KeyFilter): a row they
/// reject is not used; the documents of the others are read by the sequence the row
/// records, in the scan's statement (a rowid lookup joined to each row), and matched
/// against the rest of the selector over their text (FieldPathScan). A document is parsed only to
/// project `fields`; otherwise its stored text is the result.
public final class FindCursor {
    public let plan: QueryPlan
    let request: FindRequest
    private let collection: Collection
    private var source: MapScan?
    private var idCursor: String?
    private var scanDone = false
    /// The index's columns give every field the query reads: documents are not read
    /// (CouchDB's covering indexes), the result is made from the key.
    let covering: Bool
    private let keyFilter: KeyFilter?
    /// What a document read at its row's revision is still matched against (nil: nothing).
    private let residual: Selector.Node?
    /// `fields` projects the results (else a document's stored text is the result).
    private let projects: Bool
    /// The scan reads only the rows within the key filter's bounds (KeyFilter.split); the
    /// rows of its range before and after them in scan order are rejected unread, and
    /// counted as examined when the scan reaches them: the first part before the first
    /// page, the last once the rows within are done (as a scan of every row would).
    private var rejectedFirst: QueryOptions.Range?
    private var rejectedLast: QueryOptions.Range?
    private var indexTable: String?
    /// The scan's rows pass the key filter without a check (its bounds decide).
    private var scanRowsPass = false
    /// The scan reads its rows' documents (not a covering index, nor `conflicts`, which reads
    /// each again): its pages are sized by the limit and bounded in bytes.
    private var readsDocuments = false

    private struct Entry {
        var key: RowArena.Span          // the key's JSON (`_all_docs`: made once returned)
        var id: RowArena.Span
        var doc: RowArena.Span          // the document's JSON (projected once returned); none when not read
        var state: State
    }
    private enum State {
        /// Read at the revision the index row was made from: the key filter's residual decides.
        case indexed
        /// Read at another revision (or found by ID): the whole selector decides.
        case unchecked
        /// Rejected by the key filter: examined (as CouchDB reads it), not read.
        case keyRejected
        /// Gone since the scan: not examined.
        case gone
        /// A covering index's row: the document is made from its key.
        case covered
    }
    private var entries: [Entry] = []
    private var entryIndex = 0
    private let arena = RowArena(capacity: 64 * 1024)
    /// Results were lent from the arena since the caller last gave them back (FindRows):
    /// a new page then adds to the arena instead of reusing it.
    private var lent = false
    private let scanRows = UnsafeMutablePointer<QueryRowRef>.allocate(capacity: FindCursor.scanRun)
    private static let scanRun = 64

    private var toSkip: Int64
    private var returned: Int64 = 0
    /// The last result returned: its entry in the current page, or made a Bookmark once
    /// the page is left.
    private var lastEntry: Int?
    private var last: Bookmark?
    private let started = MonotonicTime.now()
    public private(set) var keysExamined: Int64 = 0
    public private(set) var docsExamined: Int64 = 0
    /// A page of an index's rows read with their documents: at least `pageSize` rows (the
    /// selector may reject some), more when the limit can use them, up to `maxPageRows` and
    /// `pageBytes` of texts — a find of a thousand rows reads one page, not four, and
    /// prepares no statement of a later page (bench_mango's equality find: −0.3 M
    /// instructions), while its memory stays bounded by bytes whatever its documents' size.
    static let pageSize = 256
    static let maxPageRows = 2048
    static let pageBytes = 1 << 20

    init(collection: Collection, request: FindRequest, plan: QueryPlan) throws {
        self.collection = collection
        self.request = request
        self.plan = plan
        toSkip = request.skip
        scanRows.initialize(repeating: QueryRowRef(), count: FindCursor.scanRun)
        let available = Set(plan.index.columns + ["_id"])
        covering = !plan.index.isSpecial && !request.projection.isAll && !request.conflicts
            && request.projection.names.allSatisfy(available.contains) && request.selector.fieldNames.allSatisfy(available.contains)
        keyFilter = plan.index.isSpecial || covering ? nil : KeyFilter(request.selector, columns: plan.index.columns)
        residual = keyFilter.flatMap { $0.residualIsEmpty ? nil : $0.residual }
        projects = !request.projection.isAll
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
            // The documents are read in the scan's statement unless none is needed (a
            // covering index) or each is read again with its conflicts.
            readsDocuments = !covering && !request.conflicts
            indexTable = st.map { ViewStorage.table($0.id) }
            // Rows outside the key filter's bounds are rejected unread when the index is
            // current (update: false leaves rows older than their documents, which decide).
            if request.update, let f = keyFilter {
                let parts = f.split(range)
                (rejectedFirst, rejectedLast) = request.sort.descending ? (parts.above, parts.below) : (parts.below, parts.above)
                range = parts.within ?? range
                if parts.within == nil { scanDone = true }
                scanRowsPass = f.boundsDecide
            }
            source = MapScan(store: collection.store, table: indexTable, range: range,
                             descending: request.sort.descending, documents: readsDocuments ? collection.docStore : nil,
                             pageSize: readsDocuments ? FindCursor.maxPageRows : MapScan.pageSize, arena: arena,
                             rowPerDocument: true)         // a json index's map emits once a document (MangoIndex)
            if readsDocuments { source?.pageBytes = FindCursor.pageBytes }
        }
    }

    deinit {
        scanRows.deinitialize(count: FindCursor.scanRun)
        scanRows.deallocate()
    }

    /// The next result document (projected), nil at the end.
    public func next() throws -> JSONValue? {
        guard let e = try nextEntry(mayFetch: true) else { return nil }
        return try arena.buffer(e.doc).map { try JSONParser.parse(bytes: $0) }
    }

    /// The next result as JSON text.
    public func nextJSON() throws -> [UInt8]? {
        guard let e = try nextEntry(mayFetch: true) else { return nil }
        return arena.buffer(e.doc).map(Array.init)
    }

    /// The next results as query rows lent from the pages (valid until `giveBack`), up to
    /// `max`: a new page is read only by a call that has lent no row yet (its error is then
    /// that call's, as RowSource asks). 0 at the end.
    func nextRows(into rows: UnsafeMutablePointer<QueryRowRef>, max: Int) throws -> Int {
        var n = 0
        while n < max, let e = try nextEntry(mayFetch: n == 0) {
            lent = true
            let id = arena.buffer(e.id)
            rows[n] = QueryRowRef(key: arena.buffer(e.key)!, value: nil, docID: id, sourceDocID: id, doc: arena.buffer(e.doc),
                                  error: nil, sequence: 0, collatableKey: nil)
            n += 1
        }
        return n
    }

    /// The rows lent so far are no longer used.
    func giveBack() { lent = false }

    /// The next result's entry: counted, matched, skipped, projected.
    private func nextEntry(mayFetch: Bool) throws -> Entry? {
        while returned < request.limit {
            if entryIndex >= entries.count {
                guard mayFetch else { return nil }
                if let r = rejectedFirst { rejectedFirst = nil; try countRejected(r) }
                if scanDone {
                    if let r = rejectedLast { rejectedLast = nil; try countRejected(r) }
                    return nil
                }
                try fetchPage()
                continue
            }
            let i = entryIndex
            entryIndex += 1
            keysExamined += 1
            var e = entries[i]
            switch e.state {
            case .gone: continue
            case .keyRejected:
                docsExamined += 1
                continue
            case .covered:
                let key = try arena.buffer(e.key).map { try JSONParser.parse(bytes: $0) } ?? .null
                let doc = coveredDocument(key: key, id: String(decoding: arena.buffer(e.id)!, as: UTF8.self))
                guard request.selector.matches(doc) else { continue }
                e.doc = arena.store(JSONWriter.ordered(request.projection.apply(doc)))
                entries[i].doc = e.doc
            case .indexed, .unchecked:
                docsExamined += 1
                if e.state == .unchecked || keyFilter == nil {
                    guard try request.selector.matches(json: arena.buffer(e.doc)!) else { continue }
                } else if let residual {
                    guard try Selector.match(residual, json: arena.buffer(e.doc)!) else { continue }
                }
                if projects {
                    let doc = try JSONParser.parse(bytes: arena.buffer(e.doc)!)
                    e.doc = arena.store(JSONWriter.ordered(request.projection.apply(doc)))
                    entries[i].doc = e.doc
                }
            }
            if toSkip > 0 { toSkip -= 1; continue }
            returned += 1
            if e.key.length < 0 {                  // `_all_docs`: the ID
                e.key = storeString(arena.buffer(e.id)!)
                entries[i].key = e.key
            }
            lastEntry = i
            return e
        }
        return nil
    }

    public var resultsReturned: Int64 { returned }

    /// Where the next page starts ("nil" when nothing was returned, as CouchDB says).
    public var bookmark: String {
        keepLast()
        return last?.text ?? request.bookmark ?? "nil"
    }

    /// The last result's bookmark made from its entry, before its page goes.
    private func keepLast() {
        guard let i = lastEntry else { return }
        let e = entries[i]
        let key = (try? arena.buffer(e.key).map { try JSONParser.parse(bytes: $0) }) ?? nil
        last = Bookmark(key: key ?? .null, docID: String(decoding: arena.buffer(e.id)!, as: UTF8.self))
        lastEntry = nil
    }

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
        keepLast()
        entries.removeAll(keepingCapacity: true)
        entryIndex = 0
        if !lent { arena.reset() }              // else lent texts stay where they are until given back
        if source != nil { try indexPage() } else { try idPage() }
        if request.conflicts { try readWithConflicts() }
    }

    /// Rows of the scan's range rejected by the key filter's bounds, unread: examined.
    private func countRejected(_ range: QueryOptions.Range) throws {
        guard let table = indexTable else { return }
        let n: Int64
        do {
            n = try collection.store.read { conn in try ViewStorage.countRows(conn, table: table, counts: nil, range: range) }
        } catch let e as CBLError where e.message.contains("no such table") {
            n = 0                                   // the index was deleted meanwhile, as MapScan reads it
        }
        keysExamined += n
        docsExamined += n
    }

    /// The next page of a json index's rows, read with their documents (see MapScan), and
    /// the documents of those the key filter keeps.
    private func indexPage() throws {
        guard let source else { return }
        var changed: [Int] = []                  // entries whose document is no longer at the row's sequence
        // One index page: MapScan copies its texts into this cursor's arena, where the
        // entries keep them (a copy of each key, ID and document again cost ~300
        // instructions a row, callgrind).
        var mayFetch = true
        if readsDocuments {                               // the rows the limit can still use
            let (left, overflow) = (request.limit - returned).addingReportingOverflow(toSkip)
            source.pageRows = Int(min(max(overflow ? Int64.max : left, Int64(FindCursor.pageSize)), Int64(FindCursor.maxPageRows)))
            if source.pageRows > FindCursor.pageSize { arena.reserve(FindCursor.pageBytes + FindCursor.pageBytes / 4) }
        }
        while true {
            let n = try source.next(into: scanRows, max: FindCursor.scanRun, mayFetch: mayFetch)
            if n == 0 { if mayFetch { scanDone = true }; break }
            mayFetch = false
            let base = arena.baseAddress         // the rows' texts' offsets: stores below may grow the arena
            for r in 0..<n {
                let row = scanRows[r]
                guard let d = row.docID else { continue }
                var e = Entry(key: RowArena.span(row.key, base: base), id: RowArena.span(d, base: base), doc: .none,
                              state: .indexed)
                // Whether the key passes the key filter (nil: no filter, or no key to check).
                let keyPasses = scanRowsPass ? true : keyFilter.flatMap { f in row.collatableKey.map(f.accepts) }
                if covering {
                    e.state = .covered
                } else if keyPasses == false && request.update {
                    e.state = .keyRejected
                } else {
                    // A stale index (update false) may hold an older revision: the document decides.
                    if keyFilter != nil && keyPasses != true { e.state = .unchecked }
                    if !request.conflicts {
                        if let doc = row.doc {
                            e.doc = RowArena.span(doc, base: base)
                        } else if let rev = row.joinedRevID {
                            e.doc = storeDocument(id: d, rev: rev, body: row.joinedBody)
                        } else {
                            changed.append(entries.count)
                        }
                    }
                }
                entries.append(e)
            }
        }
        guard !changed.isEmpty else { return }
        let docStore = collection.docStore
        try readSnapshot { conn in
            // Changed since they were indexed: their current revisions, checked whole.
            for i in changed {
                let docID = String(decoding: arena.buffer(entries[i].id)!, as: UTF8.self)
                let current: RowArena.Span? = try docStore.current(conn, docID: docID) { s in
                    if DocFlags(rawValue: s.int(1)).contains(.deleted) { return nil }
                    return storeDocument(id: arena.buffer(entries[i].id)!, rev: s.borrowedNonEmpty(2), body: s.borrowedBytes(3))
                } ?? nil
                entries[i].doc = current ?? .none
                entries[i].state = current == nil ? .gone : .unchecked
            }
        }
    }

    /// The next page of live, non-design documents within the `_id` bounds, read with
    /// their bodies in one statement.
    private func idPage() throws {
        let (lo, hi) = plan.idBounds
        let desc = request.sort.descending
        var lower = lo.map { DocumentStore.Bound(value: .string($0), inclusive: true) }
        var upper = hi.map { DocumentStore.Bound(value: .string($0), inclusive: true) }
        if let c = idCursor {
            if desc { upper = .init(value: .string(c), inclusive: false) } else { lower = .init(value: .string(c), inclusive: false) }
        }
        let docStore = collection.docStore
        let withBody = !request.conflicts
        let (count, lastID): (Int, String?) = try collection.mapMissingTable {
            try collection.store.read { conn in
                let s = try docStore.summaries(conn, filter: .live, lower: lower, upper: upper, descending: desc,
                                                limit: Int64(FindCursor.pageSize), withBody: withBody)
                defer { s.reset() }
                var count = 0
                var lastID = RowArena.Span.none
                while try s.step() {
                    count += 1
                    let id = s.borrowedBytes(0) ?? UnsafeBufferPointer(start: nil, count: 0)
                    lastID = arena.store(id)
                    if id.starts(with: FindCursor.designPrefix) { continue }     // design documents are not queried
                    let doc = withBody ? storeDocument(id: id, rev: s.borrowedNonEmpty(3), body: s.borrowedBytes(4)) : .none
                    entries.append(Entry(key: .none, id: lastID, doc: doc, state: .unchecked))
                }
                return (count, arena.buffer(lastID).map { String(decoding: $0, as: UTF8.self) })
            }
        }
        if count < FindCursor.pageSize { scanDone = true }
        if let lastID { idCursor = lastID }
    }

    private static let designPrefix = Array("_design/".utf8)

    /// `conflicts`: each document of the page read again with its `_conflicts`.
    private func readWithConflicts() throws {
        for i in entries.indices where entries[i].state == .indexed || entries[i].state == .unchecked {
            let id = String(decoding: arena.buffer(entries[i].id)!, as: UTF8.self)
            if let doc = try? collection.get(docID: id, options: .conflicts) {
                entries[i].doc = arena.store(doc)
                entries[i].state = .unchecked
            } else {
                entries[i].state = .gone
            }
        }
    }

    /// Reads in one snapshot (one read transaction rather than one a statement; the
    /// calling thread's own transaction when it has one).
    private func readSnapshot(_ body: (Connection) throws -> Void) throws {
        let store = collection.store
        try collection.mapMissingTable {
            try store.read { conn in
                let own = !store.ownedByCurrentThread
                if own { try conn.exec("BEGIN") }
                defer { if own { try? conn.exec("COMMIT") } }
                try body(conn)
            }
        }
    }

    /// A document's JSON as it is read (`_id`, `_rev`, then the body's members), stored.
    private func storeDocument(id: UnsafeBufferPointer<UInt8>, rev: UnsafeBufferPointer<UInt8>?,
                               body: UnsafeBufferPointer<UInt8>?) -> RowArena.Span {
        let rev = rev ?? UnsafeBufferPointer(start: nil, count: 0)
        if let n = DocumentJSON.plainLength(docID: id, rev: rev, deleted: false, body: body) {
            return arena.store(count: n) { DocumentJSON.writePlain(at: $0, docID: id, rev: rev, deleted: false, body: body) }
        }
        var w = JSONWriter(capacity: (body?.count ?? 2) + id.count + rev.count + 48)
        DocumentJSON.write(into: &w, docID: id, rev: rev, deleted: false, body: body)
        return arena.store(w.bytes)
    }

    /// A document ID as a JSON string, stored.
    private func storeString(_ s: UnsafeBufferPointer<UInt8>) -> RowArena.Span {
        var w = JSONWriter(canonical: false, capacity: s.count + 2)
        w.writeString(utf8: s)
        return arena.store(w.bytes)
    }

    /// The document a covering index's key stands for: its columns' values and its ID.
    private func coveredDocument(key: JSONValue, id: String) -> JSONValue {
        var doc = JSONValue.object(JSONObject([("_id", .string(id))]))
        for (column, value) in zip(plan.index.columns, key.arrayValue ?? []) where column != "_id" {
            if let path = try? FieldPath(column) { Projection.set(&doc, path.parts[...], value) }
        }
        return doc
    }
}

extension Collection {
    /// Runs a Mango query (a `_find` body). See FindRequest, QueryPlan and FindCursor.
    public func find(_ request: FindRequest) throws -> FindCursor {
        let indexes = try mangoIndexesForFind()
        return try FindCursor(collection: self, request: request, plan: try QueryPlan.make(request, indexes: indexes))
    }

    public func find(json: String) throws -> FindCursor { try find(try FindRequest(json: json)) }

    /// The same as a query result (the C ABI's cbl_query_result): a row per document,
    /// its key the index key it was found at, its document the (projected) result.
    public func findQuery(_ request: FindRequest) throws -> (result: QueryEnumerator, cursor: FindCursor) {
        let cursor = try find(request)
        let e = QueryEnumerator(source: FindRows(cursor), options: QueryOptions(), collection: self, viewName: nil,
                                totalRows: 0, generation: 0, lastSequence: try lastSequence, includeDocs: false)
        return (e, cursor)
    }
}

/// A find's results as query rows, lent from its pages: a new page is read only by a call
/// that has lent no row yet (its error is then that call's, as RowSource asks).
final class FindRows: RowSource {
    let cursor: FindCursor
    init(_ c: FindCursor) { cursor = c }

    func next(into rows: UnsafeMutablePointer<QueryRowRef>, max: Int) throws -> Int {
        try cursor.nextRows(into: rows, max: max)
    }

    func recycle() { cursor.giveBack() }
}
