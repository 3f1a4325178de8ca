/// The changes feed: documents changed after a sequence, in sequence order — a range
/// scan on the sequence index.
public struct ChangesOptions: Sendable {
    public var limit: Int64 = -1
    public var includeDocs = false
    public var allRevs = false
    public var descending = false

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
            default:
                throw CBLError.badRequest("unknown option \"\(k)\"")
            }
        }
    }
}

public struct ChangeEntry: Sendable {
    public let sequence: Int64
    public let docID: String
    public let revs: [String]        // current first; with allRevs every leaf
    public let deleted: Bool
    public let doc: [UInt8]?         // JSON with metadata, when includeDocs
}

extension Collection {
    /// Scans the feed, calling `visit` with the positioned statement (columns: 0 sequence,
    /// 1 docid, 2 flags, 3 revid, 4 body when needed) and, with allRevs, every leaf.
    private func scanChanges(since: Int64, options: ChangesOptions, _ visit: (Statement, [String]?) throws -> Void) throws {
        try check()
        let needBody = options.includeDocs || options.allRevs
        let cols = "sequence, docid, flags, revid" + (needBody ? ", body" : ", NULL") + (options.allRevs ? ", revtree" : ", NULL")
        let order = options.descending ? "DESC" : "ASC"
        try mapMissingTable {
            try store.read { conn in
                let s = try conn.prepare("SELECT \(cols) FROM \(table) WHERE sequence > ? ORDER BY sequence \(order) LIMIT ?")
                defer { s.reset() }
                s.bind(1, since).bind(2, options.limit)
                while try s.step() {
                    var revs: [String]? = nil
                    if options.allRevs {
                        let rev = s.string(3) ?? ""
                        revs = [rev]
                        if !s.isNull(5), let r = RevID(rev) {
                            let flags = DocFlags(rawValue: s.int(2))
                            let (tree, current) = try RevTree.decode(s.bytes(5), current: r, currentDeleted: flags.contains(.deleted),
                                                                     currentBody: nil)
                            revs! += tree.leafIndexes.filter { $0 != current }.map { tree.nodes[$0].rev }.sorted(by: >).map(\.string)
                        }
                    }
                    try visit(s, revs)
                }
            }
        }
    }

    public func changes(since: Int64, options: ChangesOptions = ChangesOptions()) throws -> [ChangeEntry] {
        var out: [ChangeEntry] = []
        try scanChanges(since: since, options: options) { s, revs in
            let docID = s.string(1) ?? ""
            let rev = s.string(3) ?? ""
            let deleted = DocFlags(rawValue: s.int(2)).contains(.deleted)
            let doc = options.includeDocs ? DocumentJSON.render(docID: docID, rev: rev, deleted: deleted, body: s.bytes(4)) : nil
            out.append(ChangeEntry(sequence: s.int(0), docID: docID, revs: revs ?? [rev], deleted: deleted, doc: doc))
        }
        return out
    }

    /// The feed as CouchDB-style JSON: {"results":[...],"last_seq":n}, written straight
    /// from the rows.
    public func changesJSON(since: Int64, options: ChangesOptions = ChangesOptions()) throws -> [UInt8] {
        var w = JSONWriter(capacity: 4096)
        var first = true
        var firstSeq: Int64? = nil
        var lastSeq = since
        w.append("{\"results\":[")
        try scanChanges(since: since, options: options) { s, revs in
            if !first { w.appendByte(UInt8(ascii: ",")) }
            first = false
            let seq = s.int(0)
            if firstSeq == nil { firstSeq = seq }
            lastSeq = seq
            w.append("{\"seq\":\(seq),\"id\":")
            s.withBytes(1) { w.writeString(utf8: $0) }
            w.append(",\"changes\":[")
            if let revs {
                for (j, r) in revs.enumerated() {
                    w.append(j > 0 ? ",{\"rev\":" : "{\"rev\":")
                    w.writeString(r)
                    w.appendByte(UInt8(ascii: "}"))
                }
            } else {
                w.append("{\"rev\":")
                s.withBytes(3) { w.writeString(utf8: $0) }
                w.appendByte(UInt8(ascii: "}"))
            }
            w.appendByte(UInt8(ascii: "]"))
            let deleted = DocFlags(rawValue: s.int(2)).contains(.deleted)
            if deleted { w.append(",\"deleted\":true") }
            if options.includeDocs {
                w.append(",\"doc\":")
                w.appendRaw(DocumentJSON.render(docID: s.string(1) ?? "", rev: s.string(3) ?? "", deleted: deleted, body: s.bytes(4)))
            }
            w.appendByte(UInt8(ascii: "}"))
        }
        w.append("],\"last_seq\":\(options.descending ? (firstSeq ?? since) : lastSeq)}")
        return w.bytes
    }

    // MARK: listeners

    /// Registers a listener for this collection (or one document of it).
    public func addChangeListener(docID: String? = nil, _ callback: @escaping ([ChangeEvent]) -> Void) throws -> ListenerToken {
        try check()
        if let docID { try DocumentBody.validateDocID(docID) }
        let id = store.notifier.addListener(collectionID: self.id, docID: docID, callback: callback)
        return ListenerToken(store: store, id: id)
    }
}

/// Keeps its database's Store alive; `remove` waits for running callbacks (see
/// ChangeNotifier.removeListener). Removing twice is harmless.
public final class ListenerToken: @unchecked Sendable {
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
        if first { store.notifier.removeListener(id) }
    }
}
