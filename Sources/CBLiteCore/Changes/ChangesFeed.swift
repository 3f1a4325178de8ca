/// The changes feed: documents changed after a sequence, in sequence order — a range
/// scan on the sequence index.
public struct ChangesOptions: Sendable {
    public var limit: Int64 = -1
    public var includeDocs = false
    public var allRevs = false
    public var descending = false
    /// Only these documents (CouchDB's `filter=_doc_ids`).
    public var docIDs: [String]? = nil
    /// A filter registered with `Database.setFilter`, and the parameters it is given.
    public var filter: String? = nil
    public var filterParams = JSONObject()
    /// Only documents a Mango selector matches (CouchDB's `filter=_selector`).
    public var selector: Selector? = nil

    public init() {}

    public init(json: String?) throws {
        guard let json else { return }
        let o = try JSONParser.parseObject(json, what: "options")
        for (k, v) in o.members {
            switch k {
            case "limit": limit = try v.intOption(k)
            case "include_docs": includeDocs = try v.boolOption(k)
            case "all_revs": allRevs = try v.boolOption(k)
            case "descending": descending = try v.boolOption(k)
            case "style":
                guard let style = v.stringValue, style == "all_docs" || style == "main_only" else {
                    throw CBLError.badRequest("option \"style\" must be \"all_docs\" or \"main_only\"")
                }
                allRevs = style == "all_docs"
            case "doc_ids":
                docIDs = try v.stringArrayOption(k)
            case "filter":
                guard let name = v.stringValue else { throw CBLError.badRequest("option \"filter\" must be a string") }
                filter = name
            case "selector":
                do { selector = try Selector(v) } catch let e as MangoError { throw e.cblError }
            case "filter_params":
                guard let params = v.objectValue else { throw CBLError.badRequest("option \"filter_params\" must be an object") }
                filterParams = params
            default:
                throw CBLError.badRequest("unknown option \"\(k)\"")
            }
        }
    }
}

extension Collection {
    /// Scans the feed, calling `visit` with the positioned statement (columns: 0 sequence,
    /// 1 docid, 2 flags, 3 revid, 4 body when needed) and, with allRevs, every leaf, for
    /// each change that passes `docIDs` and the filter. Returns the last sequence scanned
    /// (past changes a filter dropped, so a caller resuming from it does not scan them again).
    @discardableResult
    private func scanChanges(since: Int64, options: ChangesOptions, _ visit: (Statement, [String]?) throws -> Void) throws -> Int64 {
        try check()
        let wantedIDs = options.docIDs.map(Set.init)
        // doc_ids are not validated: an ID this database cannot hold (a reserved `_…` one a
        // replicator was told to copy) matches no row, where a 400 failed the whole feed.
        let filtering = wantedIDs != nil || options.filter != nil || options.selector != nil
        let needBody = options.includeDocs || options.allRevs || options.filter != nil || options.selector != nil
        func scan(_ filter: ChangeFilterFunction?) throws -> Int64 {
            try self.mapMissingTable {
                try self.store.read { conn in
                    // A filtered feed counts its limit in rows that pass, not rows scanned.
                    let s = try self.docStore.changes(conn, since: since, descending: options.descending,
                                                       limit: filtering ? -1 : options.limit, body: needBody, tree: options.allRevs)
                    defer { s.reset() }
                    var emitted: Int64 = 0
                    var last = since
                    // limit 0 gives no rows, filtered or not (the check after each row below
                    // let a filtered feed emit one).
                    if filtering && options.limit == 0 { return last }
                    while try s.step() {
                        last = s.int(0)
                        if let wantedIDs, !wantedIDs.contains(s.string(1) ?? "") { continue }
                        if let filter {
                            let doc = DocumentJSON.render(docID: s.string(1) ?? "", rev: s.string(3) ?? "",
                                                          deleted: DocFlags(rawValue: s.int(2)).contains(.deleted), body: s.bytes(4))
                            if !filter(doc, options.filterParams) { continue }
                        }
                        if let selector = options.selector {
                            let doc = DocumentJSON.render(docID: s.string(1) ?? "", rev: s.string(3) ?? "",
                                                          deleted: DocFlags(rawValue: s.int(2)).contains(.deleted), body: s.bytes(4))
                            guard let v = try? doc.withUnsafeBufferPointer({ try JSONParser.parse(bytes: $0) }),
                                  selector.matches(v) else { continue }
                        }
                        var revs: [String]? = nil
                        if options.allRevs {
                            let rev = s.string(3) ?? ""
                            revs = [rev]
                            if !s.isNull(5), let r = RevID(rev) {
                                let row = DocumentRow(docID: s.string(1) ?? "", sequence: s.int(0), flags: DocFlags(rawValue: s.int(2)),
                                                      revID: r, body: nil, revtree: s.bytes(5))
                                let (tree, current) = try row.tree()
                                // CouchDB's doc_info order (couch_doc:to_doc_info sorts by {not deleted,
                                // rev} descending): live leaves before deleted ones, each by descending
                                // rev ID. Sorting by rev alone put a higher tombstone before a live leaf.
                                revs! += tree.leafIndexes.filter { $0 != current }.sorted { a, b in
                                    let na = tree.nodes[a], nb = tree.nodes[b]
                                    if na.deleted != nb.deleted { return !na.deleted }
                                    return nb.rev < na.rev
                                }.map { tree.nodes[$0].rev.string }
                            }
                        }
                        try visit(s, revs)
                        emitted += 1
                        if filtering && options.limit >= 0 && emitted >= options.limit { break }
                    }
                    return last
                }
            }
        }
        guard let name = options.filter else { return try scan(nil) }
        if !store.filters.contains(name), let design = try DesignFilters.filter(named: name, in: self, params: options.filterParams) {
            return try scan(design)
        }
        return try store.filters.with(name) { try scan($0) }
    }

    /// Waits until the collection has a change after `sequence` (true) or `timeoutMs`
    /// passes (false), without polling: commits in this process wake it at once; another
    /// process's commits are seen within half a second. Throws once this handle closes.
    public func waitForChanges(after sequence: Int64, timeoutMs: Int) throws -> Bool {
        let deadline = MonotonicTime.now().adding(milliseconds: timeoutMs)
        while true {
            try check()
            let arrived: Bool = try store.commits.locked {
                if try lastSequence > sequence { return true }
                let now = MonotonicTime.now()
                if now >= deadline { return false }
                _ = store.commits.wait(until: min(deadline, now.adding(milliseconds: 500)))
                return try lastSequence > sequence
            }
            if arrived { return true }
            if MonotonicTime.now() >= deadline { return false }
        }
    }

    public func changes(since: Int64, options: ChangesOptions = ChangesOptions()) throws -> [ChangeEntry] {
        try changesPage(since: since, options: options).entries
    }

    /// How many documents changed after `since` pass the options' doc_ids and filter (a
    /// replicator's "total" before it starts): one scan, no bodies unless a filter needs them.
    public func changeCount(since: Int64, options: ChangesOptions = ChangesOptions()) throws -> Int64 {
        var o = options
        o.limit = -1
        o.includeDocs = false
        o.allRevs = false
        o.descending = false
        var n: Int64 = 0
        try scanChanges(since: since, options: o) { _, _ in n += 1 }
        return n
    }

    /// The feed and the last sequence it examined: with doc_ids or a filter that is past
    /// the last entry when later changes were filtered out, so a replicator's checkpoint
    /// moves past them (and never past a change it has not seen).
    public func changesPage(since: Int64, options: ChangesOptions = ChangesOptions()) throws -> (entries: [ChangeEntry], lastSequence: Int64) {
        var out: [ChangeEntry] = []
        let last = try visitChanges(since: since, options: options) { r in
            let rev = String(decoding: r.revID, as: UTF8.self)
            out.append(ChangeEntry(sequence: r.sequence, docID: String(decoding: r.docID, as: UTF8.self),
                                   revs: r.leaves ?? [rev], deleted: r.deleted, doc: r.doc))
        }
        return (out, last)
    }

    /// The feed row by row, straight from the scan (the wire format writes each row as
    /// it comes: CouchWire's ChangesWriter); returns the feed's `last_seq` by the rule of
    /// `changesPage`.
    public func visitChanges(since: Int64, options: ChangesOptions = ChangesOptions(),
                             _ visit: (ChangeRowView) throws -> Void) throws -> Int64 {
        var firstSeq: Int64? = nil
        var lastSeq = since
        let scanned = try scanChanges(since: since, options: options) { s, revs in
            let seq = s.int(0)
            if firstSeq == nil { firstSeq = seq }
            lastSeq = seq
            let deleted = DocFlags(rawValue: s.int(2)).contains(.deleted)
            try s.withBytes(1) { id in
                try s.withBytes(3) { rev in
                    let doc = options.includeDocs
                        ? DocumentJSON.render(docID: String(decoding: id, as: UTF8.self), rev: String(decoding: rev, as: UTF8.self),
                                              deleted: deleted, body: s.bytes(4))
                        : nil
                    try visit(ChangeRowView(sequence: seq, docID: id, revID: rev, leaves: revs, deleted: deleted, doc: doc))
                }
            }
        }
        return options.descending ? (firstSeq ?? since) : max(lastSeq, scanned)
    }

    // MARK: change observers

    /// Registers a change observer for this collection (or one document of it); the C ABI
    /// calls it a change listener (cbl_collection_add_change_listener).
    public func addChangeObserver(docID: String? = nil, _ callback: @escaping ([ChangeEvent]) -> Void) throws -> ChangeObserverToken {
        try check()
        if let docID { try DocumentBody.validateDocID(docID) }
        let id = store.notifier.addObserver(collectionID: self.id, docID: docID, callback: callback)
        store.watchOtherProcesses()
        return ChangeObserverToken(store: store, id: id)
    }
}

/// Keeps its database's Store alive; `remove` waits for running callbacks (see
/// ChangeNotifier.removeObserver). Removing twice is harmless.
public final class ChangeObserverToken: @unchecked Sendable {
    private let store: Store
    private let id: Int64
    private let monitor = Monitor()
    private var removed = false

    init(store: Store, id: Int64) {
        self.store = store
        self.id = id
    }

    public func remove() {
        let first: Bool = monitor.locked {
            defer { removed = true }
            return !removed
        }
        if first { store.notifier.removeObserver(id) }
    }
}
