/// Reading revisions the way a replicating peer asks for them: one revision with any of
/// CouchDB's read options (`GET /db/doc`), several leaves at once (`open_revs`), and
/// many documents at once (`_bulk_get`) — one renderer for all three.
extension Collection {
    /// The current revision (nil `revID`; 404 when the document is deleted, as CouchDB)
    /// or a given one (404 when unknown or its body is no longer kept).
    public func revision(docID: String, revID: String?, options: RevisionOptions = RevisionOptions()) throws -> Revision {
        try check()
        try DocumentBody.validateDocID(docID)
        let rev = try revID.map { r in
            guard let rev = RevID(r) else { throw CBLError.badRequest("invalid revision ID \"\(r)\"") }
            return rev
        }
        return try mapMissingTable {
            try store.read { conn in
                let row = try loadLive(conn, docID: docID, includeDeleted: rev != nil)
                let (tree, current) = try row.tree()
                var index = current
                if let rev {
                    guard let i = tree.index(of: rev) else { throw CBLError.notFound("revision \(rev) of \"\(docID)\" is unknown") }
                    index = i
                }
                guard let revision = try render(conn, row: row, tree: tree, index: index, options: options) else {
                    throw CBLError.notFound("the body of revision \(tree.nodes[index].rev) of \"\(docID)\" is no longer kept (compacted or pruned)")
                }
                return revision
            }
        }
    }

    /// The given revisions (nil: every leaf, deleted ones included), each found or
    /// missing. 404 when the document is unknown and all leaves were asked for.
    public func openRevs(docID: String, revs: [String]?, options: RevisionOptions = RevisionOptions()) throws -> [OpenRevsResult] {
        try check()
        try DocumentBody.validateDocID(docID)
        return try mapMissingTable {
            try store.read { conn in try openRevs(conn, docID: docID, revs: revs, options: options) }
        }
    }

    /// `_bulk_get`: each request answered on its own, all from one read snapshot. Throws
    /// only when nothing can be read (closed database, deleted collection).
    public func bulkGet(_ requests: [BulkGetRequest], options: RevisionOptions = RevisionOptions()) throws -> [BulkGetItem] {
        try check()
        return try mapMissingTable {
            try store.read { conn in
                requests.map { request in
                    var o = options
                    if let since = request.attsSince {
                        o.attsSince = since
                        if !since.isEmpty && o.attachments == .stubs { o.attachments = options.impliedAttachments }
                    }
                    do {
                        try DocumentBody.validateDocID(request.id)
                        if let rev = request.rev {
                            return BulkGetItem(id: request.id, rev: rev,
                                               results: try openRevs(conn, docID: request.id, revs: [rev], options: o), error: nil)
                        }
                        let row = try loadLive(conn, docID: request.id, includeDeleted: true)
                        let (tree, current) = try row.tree()
                        let results: [OpenRevsResult] = try render(conn, row: row, tree: tree, index: current, options: o).map { [.ok($0)] }
                            ?? [.missing(row.revID.string)]
                        return BulkGetItem(id: request.id, rev: nil, results: results, error: nil)
                    } catch {
                        return BulkGetItem(id: request.id, rev: request.rev, results: [], error: CBLError.wrapping(error))
                    }
                }
            }
        }
    }

    private func openRevs(_ conn: Connection, docID: String, revs: [String]?, options: RevisionOptions) throws -> [OpenRevsResult] {
        guard let row = try docStore.row(conn, docID: docID) else {
            guard let revs else { throw CBLError.notFound("document \"\(docID)\" does not exist") }
            return revs.map { .missing($0) }
        }
        let (tree, _) = try row.tree()
        var out: [OpenRevsResult] = []
        var rendered = Set<Int>()
        func add(_ i: Int, asked: String) throws {
            guard rendered.insert(i).inserted else { return }
            out.append(try render(conn, row: row, tree: tree, index: i, options: options).map { .ok($0) } ?? .missing(asked))
        }
        guard let revs else {
            // CouchDB's order (couch_key_tree's depth-first walk, siblings ascending): leaves
            // by their path from the root, compared revision by revision.
            let paths = Dictionary(uniqueKeysWithValues: tree.leafIndexes.map { ($0, tree.ancestry(of: $0).reversed().map { tree.nodes[$0].rev }) })
            for i in tree.leafIndexes.sorted(by: { paths[$0]!.lexicographicallyPrecedes(paths[$1]!) }) {
                try add(i, asked: tree.nodes[i].rev.string)
            }
            return out
        }
        for asked in revs {
            guard let rev = RevID(asked), let i = tree.index(of: rev) else {
                out.append(.missing(asked))
                continue
            }
            if options.latest && !tree.isLeaf(i) {
                let leaves = tree.leafIndexes.filter { tree.ancestry(of: $0).contains(i) }
                for leaf in leaves.sorted(by: { tree.nodes[$1].rev < tree.nodes[$0].rev }) { try add(leaf, asked: asked) }
            } else {
                try add(i, asked: asked)
            }
        }
        return out
    }

    /// Renders revision `index`; nil when its body is no longer kept.
    func render(_ conn: Connection, row: DocumentRow, tree: RevTree, index: Int, options: RevisionOptions) throws -> Revision? {
        let node = tree.nodes[index]
        guard var body = node.body else { return nil }
        var following: [AttachmentInfo] = []
        if options.attachments != .stubs, !node.deleted {
            (body, following) = try withAttachmentContent(body, tree: tree, index: index, options: options)
        }
        if options.couchDigests && !node.deleted {                                          // Blobs/
            body = try couchDocumentJSON(body, encodingInfo: options.attEncodingInfo || options.sendEncodedAttachments)
        }
        let json = DocumentJSON.render(docID: row.docID, rev: node.rev.string, deleted: node.deleted, body: body,
                                       extras: try metadata(conn, tree: tree, index: index, row: row, options: options))
        return Revision(docID: row.docID, revID: node.rev.string, deleted: node.deleted, json: json,
                        followingAttachments: options.attachments == .follows ? following : [])
    }

    /// The body with content (inline) or `follows` markers in place of the stubs of
    /// attachments newer than what the caller has; those attachments.
    private func withAttachmentContent(_ body: [UInt8], tree: RevTree, index: Int,
                                       options: RevisionOptions) throws -> ([UInt8], [AttachmentInfo]) {
        let infos = try Attachments.stored(inBody: body)
        guard !infos.isEmpty else { return (body, []) }
        let ancestry = Set(tree.ancestry(of: index).map { tree.nodes[$0].rev })
        let knownGeneration = options.attsSince.compactMap(RevID.init).filter { ancestry.contains($0) }.map(\.generation).max() ?? 0
        var sent: [AttachmentInfo] = []
        var entries: [(key: String, value: JSONValue)] = []
        for info in infos {
            guard case .object(var e) = info.stub, info.revpos > knownGeneration else {
                entries.append((info.name, info.stub))
                continue
            }
            e["stub"] = nil
            if !options.couchDigests {
                // Through the ABI inline data and following content are the content itself,
                // never its gzip form (which only the wire format sends).
                for k in ["encoding", "encoded_length", "encoded_digest"] { e[k] = nil }
            }
            switch options.attachments {
            case .inline:
                // The gzip form when the client takes it (X-CouchDB-Send-Encoded-Atts), else the content.
                let encoded = options.sendEncodedAttachments ? info.encoded : nil
                e["data"] = .string(Base64.encode(try blobStore.read(encoded?.digest ?? info.digest)))
            // An empty one inline: CouchDB's multipart reader cannot take a zero-length part
            // (its replicator stalls until its time-out), and it costs nothing in the JSON.
            case .follows where info.length == 0: e["data"] = .string(""); entries.append((info.name, .object(e))); continue
            case .follows: e["follows"] = .bool(true)
            case .stubs: break
            }
            sent.append(info)
            entries.append((info.name, .object(e)))
        }
        var o = try body.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
        o["_attachments"] = .object(JSONObject(entries))
        var w = JSONWriter(capacity: body.count + 64)
        w.writeObject(o)
        return (w.bytes, sent)
    }

    /// The `_`-prefixed read metadata a revision's JSON carries besides `_id`, `_rev`
    /// and `_deleted` (one builder for every read path).
    func metadata(_ conn: Connection, tree: RevTree, index: Int, row: DocumentRow, options: RevisionOptions) throws -> [(String, JSONValue)] {
        var out: [(String, JSONValue)] = []
        if options.localSeq { out.append(("_local_seq", .int(row.sequence))) }
        if options.revsInfo {
            let info: [JSONValue] = tree.ancestry(of: index).map { i in
                let n = tree.nodes[i]
                let status = n.deleted ? "deleted" : (n.body != nil ? "available" : "missing")
                return .object(JSONObject([("rev", .string(n.rev.string)), ("status", .string(status))]))
            }
            out.append(("_revs_info", .array(info)))
        }
        if options.conflicts {
            let others = tree.conflictingLeaves.filter { $0 != index }.map { JSONValue.string(tree.nodes[$0].rev.string) }
            if !others.isEmpty { out.append(("_conflicts", .array(others))) }
        }
        if options.deletedConflicts {
            let deleted = tree.leafIndexes.filter { $0 != index && tree.nodes[$0].deleted }
                .sorted { tree.nodes[$1].rev < tree.nodes[$0].rev }.map { JSONValue.string(tree.nodes[$0].rev.string) }
            if !deleted.isEmpty { out.append(("_deleted_conflicts", .array(deleted))) }
        }
        if options.revisions {
            // Consecutive generations only: the history stops at a gap left by grafting. No
            // deeper than maxRevTreeDepth (CouchDB's `_revs_limit`): a lowered limit shows
            // at once, before the next write prunes the stored tree to it.
            var history: [RevID] = []
            let depth = try store.maxRevTreeDepth(conn)
            for i in tree.ancestry(of: index) {
                let r = tree.nodes[i].rev
                if history.count >= depth { break }
                if let last = history.last, r.generation != last.generation - 1 { break }
                history.append(r)
            }
            out.append(("_revisions", .object(RevisionHistory.revisionsObject(history))))
        }
        return out
    }
}
