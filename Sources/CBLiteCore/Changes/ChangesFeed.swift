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
            case "limit":
                guard let i = v.intValue, i >= 0 else { throw CBLError.badRequest("option \"limit\" must be a non-negative integer") }
                limit = i
            case "include_docs", "all_revs", "descending":
                guard let b = v.boolValue else { throw CBLError.badRequest("option \"\(k)\" must be a boolean") }
                if k == "include_docs" { includeDocs = b } else if k == "all_revs" { allRevs = b } else { descending = b }
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
    public func changes(since: Int64, options: ChangesOptions = ChangesOptions()) throws -> [ChangeEntry] {
        try check()
        let needTree = options.allRevs
        let cols = "sequence, docid, flags, revid" + (options.includeDocs || needTree ? ", body" : ", NULL") + (needTree ? ", revtree" : ", NULL")
        let order = options.descending ? "DESC" : "ASC"
        return try mapMissingTable {
            try store.read { conn in
                let s = try conn.prepare("SELECT \(cols) FROM \(table) WHERE sequence > ? ORDER BY sequence \(order) LIMIT ?")
                defer { s.reset() }
                s.bind(1, since).bind(2, options.limit)
                var out: [ChangeEntry] = []
                while try s.step() {
                    let docID = s.string(1) ?? ""
                    let flags = DocFlags(rawValue: s.int(2))
                    let rev = s.string(3) ?? ""
                    var revs = [rev]
                    var body: [UInt8]? = nil
                    if options.includeDocs || needTree { body = s.bytes(4) }
                    if needTree, !s.isNull(5), let r = RevID(rev) {
                        let (tree, current) = try RevTree.decode(s.bytes(5), current: r, currentDeleted: flags.contains(.deleted), currentBody: body)
                        revs += tree.leafIndexes.filter { $0 != current }.map { tree.nodes[$0].rev.string }.sorted().reversed()
                    }
                    let doc = options.includeDocs
                        ? DocumentJSON.render(docID: docID, rev: rev, deleted: flags.contains(.deleted), body: body) : nil
                    out.append(ChangeEntry(sequence: s.int(0), docID: docID, revs: revs, deleted: flags.contains(.deleted), doc: doc))
                }
                return out
            }
        }
    }

    /// The feed as CouchDB-style JSON: {"results":[...],"last_seq":n}.
    public func changesJSON(since: Int64, options: ChangesOptions = ChangesOptions()) throws -> [UInt8] {
        let entries = try changes(since: since, options: options)
        var w = JSONWriter(capacity: entries.count * 96 + 32)
        w.append("{\"results\":[")
        for (i, e) in entries.enumerated() {
            if i > 0 { w.appendByte(UInt8(ascii: ",")) }
            w.append("{\"seq\":\(e.sequence),\"id\":")
            w.writeString(e.docID)
            w.append(",\"changes\":[")
            for (j, r) in e.revs.enumerated() {
                if j > 0 { w.appendByte(UInt8(ascii: ",")) }
                w.append("{\"rev\":")
                w.writeString(r)
                w.appendByte(UInt8(ascii: "}"))
            }
            w.appendByte(UInt8(ascii: "]"))
            if e.deleted { w.append(",\"deleted\":true") }
            if let d = e.doc {
                w.append(",\"doc\":")
                w.appendRaw(d)
            }
            w.appendByte(UInt8(ascii: "}"))
        }
        let last = entries.last?.sequence ?? since
        w.append("],\"last_seq\":\(options.descending ? (entries.first?.sequence ?? since) : last)}")
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
