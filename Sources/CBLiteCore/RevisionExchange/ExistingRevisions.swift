/// Inserting revisions made elsewhere, with their history and without inventing IDs:
/// the replicator's write path and `_bulk_docs` / `PUT` with `new_edits=false`.
///
/// Grafting follows CouchDB: the newest revision of the history this tree already holds
/// anchors the new branch; when it holds none (its own tree was pruned, or the peer's
/// was), the history starts a new root. A revision already held is a success that
/// changes nothing.
///
/// Attachments in a peer's body come in three forms: inline `data` (stored before the
/// write transaction), `"follows": true` (content the caller already wrote with
/// `makeAttachmentWriter`, streamed from a multipart body), and `"stub": true`
/// (content this database must already hold: found by name, and revpos when given, on
/// the revision's known ancestors, or by a digest of ours). A peer's own digests (MD5
/// from CouchDB) and `encoding` fields are replaced by ours.
extension Collection {
    public struct ExistingRevision: Sendable {
        /// The document as a peer sent it: `_id`, `_rev`, optional `_revisions`
        /// (`{"start","ids"}`), `_deleted`, `_attachments`, and the content.
        public var body: JSONObject
        /// Content already written for attachments marked `"follows": true`, by name.
        public var attachments: [String: BlobInfo]

        public init(body: JSONObject, attachments: [String: BlobInfo] = [:]) {
            self.body = body
            self.attachments = attachments
        }
    }

    /// A peer's revision, checked and ready to graft.
    struct ImportedRevision {
        let docID: String
        /// Newest first; generations descend by one.
        let history: [RevID]
        /// Content plus `_deleted` and `_attachments` (stubs still unresolved).
        var body: JSONObject
        /// The MD5s of the content just stored for it (inline or streamed).
        var knownMD5: [BlobDigest: [UInt8]] = [:]
    }

    /// Properties CouchDB documents may carry that describe a read, not content:
    /// ignored on write, as CouchDB does.
    private static let readOnlyMetadata: Set<String> = ["_conflicts", "_deleted_conflicts", "_local_seq", "_revs_info"]

    /// Inserts every revision in one transaction. Each document succeeds or fails on its
    /// own (its error in its result); the call throws only when the batch cannot run at
    /// all (closed database, deleted collection, busy).
    public func insertExistingRevisions(_ revs: [ExistingRevision]) throws -> [WriteResult] {
        try check()
        let prepared: [(docID: String, rev: Result<ImportedRevision, CBLError>)] = revs.map { r in
            let docID = r.body["_id"]?.stringValue ?? ""
            do { return (docID, .success(try prepareImport(r))) } catch { return (docID, .failure(CBLError.wrapping(error))) }
        }
        return try mapMissingTable {
            try store.write(timeoutMs: database.busyTimeoutMs) { _, _ in
                prepared.map { docID, rev in
                    switch rev {
                    case .failure(let e):
                        return WriteResult(docID: docID, revID: nil, error: e)
                    case .success(let imported):
                        let revID = imported.history[0].string
                        do {
                            // A savepoint per document: one that fails leaves no trace.
                            _ = try store.write(savepoint: true) { conn, txn in try insertImported(conn, txn, imported) }
                            return WriteResult(docID: docID, revID: revID, error: nil)
                        } catch {
                            return WriteResult(docID: docID, revID: revID, error: CBLError.wrapping(error))
                        }
                    }
                }
            }
        }
    }

    /// Inserts a revision made elsewhere with its history (newest first), without
    /// inventing IDs. Returns false when the revision was already known.
    @discardableResult
    public func putExisting(docID: String, body bodyBytes: UnsafeBufferPointer<UInt8>, history: [String]) throws -> Bool {
        try check()
        try DocumentBody.validateDocID(docID)
        var object = try JSONParser.parseObject(bytes: bodyBytes)
        if let bodyID = object["_id"]?.stringValue, bodyID != docID { throw CBLError.badRequest("\"_id\" in the body differs from the document ID") }
        guard !history.isEmpty else { throw CBLError.badRequest("history must name at least the new revision") }
        var revs: [RevID] = []
        for h in history {
            guard let r = RevID(h) else { throw CBLError.badRequest("invalid revision ID \"\(h)\" in history") }
            if let last = revs.last, r.generation != last.generation - 1 {
                throw CBLError.badRequest("history generations must descend by one: \(last) then \(r)")
            }
            revs.append(r)
        }
        if let r = object["_rev"] {
            guard let s = r.stringValue, RevID(s) == revs[0] else { throw CBLError.badRequest("\"_rev\" in the body differs from history[0]") }
        }
        object["_id"] = .string(docID)
        object["_rev"] = .string(revs[0].string)
        let imported = try prepareImport(ExistingRevision(body: object), history: revs)
        return try mapMissingTable {
            try store.write(savepoint: false, timeoutMs: database.busyTimeoutMs) { conn, txn in
                try insertImported(conn, txn, imported)
            }
        }
    }

    /// Checks a peer's revision and stores its inline and streamed attachments; stubs
    /// wait for the tree (see resolveStubs).
    /// `history`: already checked, newest first (putExisting's list form); otherwise the
    /// body's `_revisions`, or the revision alone.
    func prepareImport(_ rev: ExistingRevision, history given: [RevID]? = nil) throws -> ImportedRevision {
        guard let docID = rev.body["_id"]?.stringValue else { throw CBLError.badRequest("document has no \"_id\" string") }
        try DocumentBody.validateDocID(docID)
        try JSONDepth.checkDocument(rev.body)            // read inside a message, deeper allowed
        guard let revText = rev.body["_rev"]?.stringValue, let revID = RevID(revText) else {
            throw CBLError.badRequest("document \"\(docID)\" has no valid \"_rev\" (new_edits=false needs one)")
        }
        let history = try given ?? rev.body["_revisions"].map { try RevisionHistory.parse($0, rev: revID) } ?? [revID]
        var body = JSONObject()
        var md5s: [BlobDigest: [UInt8]] = [:]
        for (k, v) in rev.body.members {
            switch k {
            case "_id", "_rev", "_revisions": continue
            case _ where Collection.readOnlyMetadata.contains(k): continue
            case "_attachments": body[k] = .object(try normalizeIncomingAttachments(v, follows: rev.attachments, md5s: &md5s))
            default: body.members.append((k, v))
            }
        }
        return ImportedRevision(docID: docID, history: history, body: body, knownMD5: md5s)
    }

    /// Writes inline data and takes streamed content for `follows`; leaves stubs marked.
    private func normalizeIncomingAttachments(_ value: JSONValue, follows: [String: BlobInfo],
                                              md5s: inout [BlobDigest: [UInt8]]) throws -> JSONObject {
        guard let entries = value.objectValue else { throw CBLError.badRequest("\"_attachments\" must be an object") }
        var out = JSONObject()
        for (name, entry) in entries.members {
            try Attachments.validateName(name)
            guard var e = entry.objectValue else { throw CBLError.badRequest("attachment \"\(name.prefix(80))\" must be an object") }
            if let enc = e["encoding"], enc.stringValue != "identity", e["data"] != nil {
                throw CBLError.badRequest("attachment \"\(name.prefix(80))\": inline data must be sent decoded, not \(enc.jsonString)")
            }
            e["encoding"] = nil
            e["encoded_length"] = nil
            if e["follows"]?.boolValue == true {
                guard let info = follows[name] else {
                    throw CBLError.badRequest("attachment \"\(name.prefix(80))\" follows, but its content was not sent")
                }
                e["follows"] = nil
                e["stub"] = nil
                e["digest"] = .string(info.digest.string)
                e["length"] = .int(Int64(clamping: info.length))
                md5s[info.digest] = info.md5
            } else if let data = e["data"] {
                // Stored before the write transaction; a peer's digest (MD5) is replaced by ours.
                guard let text = data.stringValue, let bytes = Base64.decode(text.utf8) else {
                    throw CBLError.badRequest("attachment \"\(name.prefix(80))\": \"data\" is not valid base64")
                }
                let info = try blobStore.put(bytes)
                e["data"] = nil
                e["digest"] = .string(info.digest.string)
                e["length"] = .int(Int64(clamping: info.length))
                md5s[info.digest] = info.md5
            } else if e["stub"]?.boolValue == true {
                e["stub"] = .bool(true)                   // resolved against the tree
            } else if e["digest"] != nil {
                // The engine's own form (what putExisting took before this surface): content
                // this database holds, named by OUR digest. Not a stub: the save path checks
                // the digest is ours (400, as CouchDB answers an entry without data) and
                // stored (412), and turns revpos 0 into the generation.
            } else {
                throw CBLError.badRequest("attachment \"\(name.prefix(80))\" has no data, is not a stub and does not follow")
            }
            out.members.append((name, .object(e)))
        }
        return out
    }

    /// Grafts the revision and its history onto the document's tree (creating the
    /// document when new). Returns false when the revision was already known.
    @discardableResult
    func insertImported(_ conn: Connection, _ txn: TransactionState, _ rev: ImportedRevision) throws -> Bool {
        let docID = rev.docID
        let revs = rev.history
        let row = try docStore.row(conn, docID: docID)
        var tree: RevTree
        var oldCurrent: Int?
        if let row { (tree, oldCurrent) = try row.tree() } else { tree = RevTree() }
        // The newest history entry already known anchors the new branch.
        var anchor: Int? = nil
        var known = revs.count
        for (i, r) in revs.enumerated() {
            if let idx = tree.index(of: r) { anchor = idx; known = i; break }
        }
        if known == 0 { return false }
        var object = rev.body
        var forms: [BlobDigest: CouchForm] = [:]
        if let atts = object["_attachments"]?.objectValue {
            object["_attachments"] = .object(try resolveStubs(atts, docID: docID, tree: tree, anchor: anchor, forms: &forms))
        }
        let parsed = try JSONWriter.canonical(.object(object)).withUnsafeBufferPointer { try DocumentBody.parse(bytes: $0) }
        let body = try withResolvedAttachments(parsed, docID: docID, parent: nil, docHasAttachments: false, generation: revs[0].generation,
                                               imported: true, contentMD5s: rev.knownMD5, knownForms: forms)   // Blobs/
        var parent = anchor
        for i in stride(from: known - 1, through: 0, by: -1) {
            parent = tree.add(revs[i], parent: parent, deleted: i == 0 ? body.deleted : false,
                              body: i == 0 ? body.canonical : nil)
        }
        // CouchDB's oldDoc for a replicated revision: its nearest ancestor stored here
        // with a body (a leaf before this graft: find_prev_known_rev).
        let oldIndex = tree.ancestry(of: parent!).dropFirst().first { tree.nodes[$0].body != nil }
        try validate(conn, txn, docID: docID, tree: tree, newIndex: parent!, row: row, oldIndex: oldIndex)
        try storeTree(conn, txn, docID: docID, tree: tree, oldRow: row, oldCurrent: oldCurrent,
                      hasAttachments: body.hasAttachments, external: true)
        return true
    }

    /// Replaces each stub by the stored attachment it names: by name (and revpos, when
    /// given) on the anchor's ancestry, then by one of our digests. 412 when nothing
    /// matches: a revision never refers to missing content.
    ///
    /// Only the anchor's ancestry: those are the revisions of the peer's history this tree
    /// holds (CouchDB looks only at the newest of them). Another branch's attachment of
    /// the same name and revpos is other content (it was changed at that generation on
    /// that branch), and taking it silently attached the wrong bytes.
    private func resolveStubs(_ atts: JSONObject, docID: String, tree: RevTree, anchor: Int?,
                              forms: inout [BlobDigest: CouchForm]) throws -> JSONObject {
        var out = atts
        var candidates: [AttachmentInfo]? = nil
        for (i, (name, entry)) in atts.members.enumerated() {
            guard var e = entry.objectValue, e["stub"]?.boolValue == true else { continue }
            if candidates == nil {
                let order = anchor.map { tree.ancestry(of: $0) } ?? []
                candidates = try order.flatMap { try tree.nodes[$0].body.map { try Attachments.stored(inBody: $0) } ?? [] }
            }
            let revpos = e["revpos"]?.intValue.map(Int.init)
            let ourDigest = e["digest"]?.stringValue.flatMap(BlobDigest.init)
            // CouchDB's merge_stubs: a stub that gives its revpos matches only an attachment of
            // that name AND revpos; any other by that name is different content (it used to be
            // taken anyway, silently attaching the wrong content where CouchDB answers 412).
            let found = candidates!.first { $0.name == name && (revpos == nil || $0.revpos == revpos) }
                ?? candidates!.first { ourDigest != nil && $0.digest == ourDigest && (revpos == nil || $0.revpos == revpos) }
            if let found {
                e["digest"] = .string(found.digest.string)
                e["length"] = .int(Int64(clamping: found.length))
                e["revpos"] = .int(Int64(found.revpos))
                if e["content_type"] == nil { e["content_type"] = .string(found.contentType) }
                if let form = CouchForm(found) { forms[found.digest] = form }
            } else if let ourDigest, blobStore.contains(ourDigest) {
                e["digest"] = .string(ourDigest.string)
                e["length"] = nil
            } else {
                throw Attachments.missingStub(docID: docID, name: name)      // CouchDB's 412
            }
            e["stub"] = nil
            out.members[i].value = .object(e)
        }
        return out
    }
}

/// CouchDB's `_revisions` form of a revision's history: `{"start": N, "ids": [digest of
/// N, digest of N-1, ...]}`.
public enum RevisionHistory {
    /// A history given as a JSON array of revision IDs, newest first (cbl_doc_put_existing):
    /// 400 for anything else. The IDs themselves are checked by putExisting.
    public static func list(json: String) throws -> [String] {
        guard case .array(let items) = try JSONParser.parse(json) else {
            throw CBLError.badRequest("history_json must be a JSON array of revision IDs")
        }
        return try items.map { item in
            guard let s = item.stringValue else { throw CBLError.badRequest("history_json must contain only strings") }
            return s
        }
    }

    /// The history newest first; `rev` must be its first entry.
    public static func parse(_ value: JSONValue, rev: RevID) throws -> [RevID] {
        guard let o = value.objectValue, let start = o["start"]?.intValue, let ids = o["ids"]?.arrayValue else {
            throw CBLError.badRequest("\"_revisions\" must be {\"start\": number, \"ids\": [strings]}")
        }
        guard !ids.isEmpty, start >= Int64(ids.count), start <= 999_999_999 else {
            throw CBLError.badRequest("\"_revisions\" has a start below its number of ids, or no ids")
        }
        var out: [RevID] = []
        out.reserveCapacity(ids.count)
        for (i, id) in ids.enumerated() {
            guard let digest = id.stringValue, let r = RevID("\(Int(start) - i)-\(digest)") else {
                throw CBLError.badRequest("\"_revisions\" holds an invalid revision ID digest")
            }
            out.append(r)
        }
        guard out[0] == rev else { throw CBLError.badRequest("\"_revisions\" does not start with \"_rev\" (\(rev))") }
        return out
    }

    /// `{"start","ids"}` for a history newest first (consecutive generations).
    public static func revisionsObject(_ history: [RevID]) -> JSONObject {
        JSONObject([("start", .int(Int64(history.first?.generation ?? 0))), ("ids", .array(history.map { .string($0.digest) }))])
    }
}
