/// Reading documents and their revisions. A plain read is one primary-key lookup that
/// does not decode the revision tree.
extension Collection {
    public struct GetOptions: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let deleted = GetOptions(rawValue: 1)
        public static let conflicts = GetOptions(rawValue: 2)
        public static let revisions = GetOptions(rawValue: 4)
        public static let localSeq = GetOptions(rawValue: 8)
    }

    /// The current revision as JSON with its metadata.
    public func get(docID: String, options: GetOptions = []) throws -> [UInt8] {
        try get(docID: docID, options: options, as: [UInt8].self)
    }

    /// The same as a malloc'ed C string that the caller owns (the C ABI's cbl_doc_get: the
    /// document is rendered straight into it).
    public func getText(docID: String, options: GetOptions = []) throws -> MallocedText {
        try get(docID: docID, options: options, as: MallocedText.self)
    }

    private func get<Out: TextOutput>(docID: String, options: GetOptions, as: Out.Type) throws -> Out {
        try check()
        try DocumentBody.validateDocID(docID)
        return try mapMissingTable {
            try store.read { conn in
                if options.isDisjoint(with: [.conflicts, .revisions]) {
                    let json = try docStore.current(conn, docID: docID) { s in
                        let deleted = DocFlags(rawValue: s.int(1)).contains(.deleted)
                        if deleted && !options.contains(.deleted) { throw CBLError.notFound("document \"\(docID)\" is deleted") }
                        let extras: [(String, JSONValue)] = options.contains(.localSeq) ? [("_local_seq", .int(s.int(0)))] : []
                        let rev = s.borrowedNonEmpty(2) ?? UnsafeBufferPointer(start: nil, count: 0)
                        return DocumentJSON.render(as: Out.self, docID: docID, rev: rev, deleted: deleted, body: s.borrowedBytes(3),
                                                   extras: extras)
                    }
                    guard let json else { throw CBLError.notFound("document \"\(docID)\" does not exist") }
                    return json
                }
                let row = try loadLive(conn, docID: docID, includeDeleted: options.contains(.deleted))
                let (tree, current) = try row.tree()
                return .copying(row.json(extras: try extras(conn, tree: tree, index: current, row: row, options: options)))
            }
        }
    }

    /// A specific revision (any kept revision whose body is still kept).
    public func get(docID: String, revID: String, options: GetOptions = []) throws -> [UInt8] {
        try check()
        try DocumentBody.validateDocID(docID)
        guard let rev = RevID(revID) else { throw CBLError.badRequest("invalid revision ID \"\(revID)\"") }
        return try mapMissingTable {
            try store.read { conn in
                let row = try loadLive(conn, docID: docID, includeDeleted: true)
                let (tree, _) = try row.tree()
                guard let i = tree.index(of: rev) else { throw CBLError.notFound("revision \(revID) of \"\(docID)\" is unknown") }
                let n = tree.nodes[i]
                guard let body = n.body else {
                    throw CBLError.notFound("the body of revision \(revID) of \"\(docID)\" is no longer kept (compacted or pruned)")
                }
                return DocumentJSON.render(docID: docID, rev: rev.string, deleted: n.deleted, body: body,
                                           extras: try extras(conn, tree: tree, index: i, row: row, options: options))
            }
        }
    }

    private func extras(_ conn: Connection, tree: RevTree, index: Int, row: DocumentRow, options: GetOptions) throws -> [(String, JSONValue)] {
        var o = RevisionOptions()
        o.conflicts = options.contains(.conflicts)
        o.revisions = options.contains(.revisions)
        o.localSeq = options.contains(.localSeq)
        return try metadata(conn, tree: tree, index: index, row: row, options: o)     // RevisionExchange/RevisionReads.swift
    }

    func loadLive(_ conn: Connection, docID: String, includeDeleted: Bool) throws -> DocumentRow {
        guard let row = try docStore.row(conn, docID: docID) else {
            throw CBLError.notFound("document \"\(docID)\" does not exist")
        }
        if row.deleted && !includeDeleted { throw CBLError.notFound("document \"\(docID)\" is deleted") }
        return row
    }

    private func withTree<T>(docID: String, _ body: (DocumentRow, RevTree, Int) throws -> T) throws -> T {
        try check()
        try DocumentBody.validateDocID(docID)
        return try mapMissingTable {
            try store.read { conn in
                let row = try loadLive(conn, docID: docID, includeDeleted: true)
                let (tree, current) = try row.tree()
                return try body(row, tree, current)
            }
        }
    }

    /// Undeleted leaves, the current revision first.
    public func conflicts(docID: String) throws -> [String] {
        try withTree(docID: docID) { _, tree, _ in tree.conflictingLeaves.map { tree.nodes[$0].rev.string } }
    }

    /// The revision (nil: current) and its kept ancestors, newest first.
    public func history(docID: String, revID: String?) throws -> [String] {
        try withTree(docID: docID) { _, tree, current in
            var index = current
            if let revID {
                guard let r = RevID(revID) else { throw CBLError.badRequest("invalid revision ID \"\(revID)\"") }
                guard let i = tree.index(of: r) else { throw CBLError.notFound("revision \(revID) of \"\(docID)\" is unknown") }
                index = i
            }
            return tree.ancestry(of: index).map { tree.nodes[$0].rev.string }
        }
    }

    /// The whole kept tree as JSON (newest first).
    public func revisionTree(docID: String) throws -> String {
        try withTree(docID: docID) { row, tree, current in
            let order = tree.nodes.indices.sorted { tree.nodes[$1].rev < tree.nodes[$0].rev }
            let leaves = Set(tree.leafIndexes)
            let revs: [JSONValue] = order.map { i in
                let n = tree.nodes[i]
                return .object(JSONObject([
                    ("rev", .string(n.rev.string)),
                    ("parent", n.parent.map { .string(tree.nodes[$0].rev.string) } ?? .null),
                    ("deleted", .bool(n.deleted)),
                    ("leaf", .bool(leaves.contains(i))),
                    ("has_body", .bool(n.body != nil)),
                    ("current", .bool(i == current)),
                ]))
            }
            return JSONValue.object(JSONObject([
                ("id", .string(row.docID)), ("current", .string(row.revID.string)),
                ("sequence", .int(row.sequence)), ("revisions", .array(revs)),
            ])).jsonString
        }
    }
}
