/// Attachment operations on a document. Each change saves a new revision through the
/// ordinary save path (validators, notifications, revpos, existence checks apply).
extension Collection {
    // MARK: writing

    /// Sets (adds or replaces) the attachment `name` to stored content `digest`, saving a
    /// new revision on `parent`. `parent` must be the current revision; nil creates the
    /// document (an empty body) when it does not exist or is deleted. Returns the new
    /// revision ID. Errors: 400 (name, type, digest), 409 (parent not current, or nil
    /// while the document exists), 404 (no document for a parent), 412 (content missing).
    public func setAttachment(docID: String, parent: String?, name: String, contentType: String?,
                              digest: String) throws -> String {
        try check()
        try Attachments.validateName(name)
        if let contentType { try Attachments.validateContentType(contentType) }
        let d = try BlobDigest.parse(digest)
        return try modifyAttachments(docID: docID, parent: parent) { atts in
            var entry = JSONObject([("digest", .string(d.string)), ("stub", .bool(true))])
            if let contentType { entry["content_type"] = .string(contentType) }   // else: the old one's, or the default
            atts[name] = .object(entry)
        }
    }

    /// Stores `bytes`, then sets the attachment to them.
    public func setAttachment(docID: String, parent: String?, name: String, contentType: String?,
                              bytes: [UInt8]) throws -> String {
        try check()
        try Attachments.validateName(name)
        if let contentType { try Attachments.validateContentType(contentType) }
        let info = try blobStore.put(bytes)
        return try setAttachment(docID: docID, parent: parent, name: name, contentType: contentType, digest: info.digest.string)
    }

    /// Stores a copy of the file at `filePath` (streamed), then sets the attachment to it.
    public func setAttachment(docID: String, parent: String?, name: String, contentType: String?,
                              filePath: String) throws -> String {
        try check()
        try Attachments.validateName(name)
        if let contentType { try Attachments.validateContentType(contentType) }
        let info = try blobStore.importFile(path: filePath)
        return try setAttachment(docID: docID, parent: parent, name: name, contentType: contentType, digest: info.digest.string)
    }

    /// Removes the attachment `name`, saving a new revision on `parent` (the current
    /// revision; nil: whatever is current). 404 when the document has no such attachment.
    public func removeAttachment(docID: String, parent: String?, name: String) throws -> String {
        try check()
        try Attachments.validateName(name)
        return try modifyAttachments(docID: docID, parent: parent, allowCurrentWhenNil: true) { atts in
            guard atts[name] != nil else { throw CBLError.notFound("document \"\(docID)\" has no attachment \"\(name)\"") }
            atts[name] = nil
        }
    }

    /// Reads the current body, lets `change` edit its `_attachments` (as stubs) and saves
    /// the result on the revision read. An emptied set is saved as `{}` (removes all).
    private func modifyAttachments(docID: String, parent: String?, allowCurrentWhenNil: Bool = false,
                                   _ change: (inout JSONObject) throws -> Void) throws -> String {
        try DocumentBody.validateDocID(docID)
        let row = try mapMissingTable { try store.read { conn in try docStore.row(conn, docID: docID) } }
        var base = JSONObject()
        var saveOn: String? = nil
        if let parent {
            guard RevID(parent) != nil else { throw CBLError.badRequest("invalid parent revision ID \"\(parent)\"") }
            guard let row, !row.deleted else { throw CBLError.notFound("document \"\(docID)\" does not exist") }
            guard row.revID.string == parent else {
                throw CBLError.conflict("document update conflict: \(parent) is not the current revision of \"\(docID)\"")
            }
            saveOn = parent
        } else if let row, !row.deleted {
            guard allowCurrentWhenNil else {
                throw CBLError.conflict("document \"\(docID)\" already exists: give its current revision as the parent")
            }
            saveOn = row.revID.string
        } else if allowCurrentWhenNil {
            throw CBLError.notFound("document \"\(docID)\" does not exist")
        }
        if saveOn != nil, let body = row?.body {
            base = try body.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
        }
        var atts = base["_attachments"]?.objectValue ?? JSONObject()
        try change(&atts)
        base["_attachments"] = .object(atts)
        let json = JSONWriter.canonical(.object(base))
        return try json.withUnsafeBufferPointer { try put(docID: docID, body: $0, parent: saveOn).revID }
    }

    // MARK: reading

    /// The attachments of the current revision (or of `revID`), sorted by name.
    public func attachments(docID: String, revID: String? = nil) throws -> [AttachmentInfo] {
        try check()
        try DocumentBody.validateDocID(docID)
        let body: [UInt8]?
        if let revID {
            guard let rev = RevID(revID) else { throw CBLError.badRequest("invalid revision ID \"\(revID)\"") }
            body = try mapMissingTable {
                try store.read { conn in
                    let row = try loadLive(conn, docID: docID, includeDeleted: true)
                    let (tree, _) = try row.tree()
                    guard let i = tree.index(of: rev) else { throw CBLError.notFound("revision \(revID) of \"\(docID)\" is unknown") }
                    guard let b = tree.nodes[i].body else {
                        throw CBLError.notFound("the body of revision \(revID) of \"\(docID)\" is no longer kept (compacted or pruned)")
                    }
                    return b
                }
            }
        } else {
            body = try mapMissingTable { try store.read { conn in try loadLive(conn, docID: docID, includeDeleted: false).body } }
        }
        return try Attachments.stored(inBody: body ?? []).sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// The attachment names of the current revision, sorted (UTF-8 byte order).
    public func attachmentNames(docID: String) throws -> [String] {
        try attachments(docID: docID).map(\.name)
    }

    /// One attachment's metadata: 404 when the document or the attachment does not exist.
    public func attachment(docID: String, name: String, revID: String? = nil) throws -> AttachmentInfo {
        try Attachments.validateName(name)
        guard let a = try attachments(docID: docID, revID: revID).first(where: { $0.name == name }) else {
            throw CBLError.notFound("document \"\(docID)\" has no attachment \"\(name)\"")
        }
        return a
    }

    /// The whole content in memory (checked against its digest).
    public func attachmentContent(docID: String, name: String, revID: String? = nil) throws -> [UInt8] {
        try blobStore.read(try attachment(docID: docID, name: name, revID: revID).digest)
    }

    /// Streams the content into a new file at `path` (replacing what is there).
    public func writeAttachment(docID: String, name: String, revID: String? = nil, toFile path: String) throws {
        try blobStore.copy(try attachment(docID: docID, name: name, revID: revID).digest, toFile: path)
    }

    /// A streaming reader on the content.
    public func openAttachment(docID: String, name: String, revID: String? = nil) throws -> BlobReader {
        try blobStore.openReader(try attachment(docID: docID, name: name, revID: revID).digest)
    }

    // MARK: content by digest (sync streams attachments apart from their documents)

    /// A writer for content that a document will refer to afterwards (a multipart body's
    /// attachment parts): `finish()` gives its digest and length.
    public func makeAttachmentWriter() throws -> BlobWriter {
        try check()
        return try blobStore.makeWriter()
    }

    /// A streaming reader on stored content (404 when the store does not hold it).
    public func openBlob(_ digest: BlobDigest) throws -> BlobReader {
        try check()
        return try blobStore.openReader(digest)
    }
}

extension Database {
    /// Deletes attachment files no kept revision of any collection refers to, and
    /// temporary files left by writers that did not finish. Called by compact() after it
    /// has dropped the bodies of non-leaf revisions. Holds the write lock throughout, so
    /// no save can start referring to a file between the scan and the deletion.
    @discardableResult
    func deleteOrphanedAttachments() throws -> Int {
        let blobs = BlobStore(store: store)
        guard FileSystem.isDirectory(blobs.directory) else { return 0 }
        return try store.write(timeoutMs: busyTimeoutMs) { conn, _ in
            try blobs.deleteBlobs(notIn: Database.referencedDigests(conn))
        }
    }

    /// Every digest some kept revision of any collection refers to.
    static func referencedDigests(_ conn: Connection) throws -> Set<BlobDigest> {
            var referenced = Set<BlobDigest>()
            let ids: [Int64] = try {
                let s = try conn.prepare("SELECT id FROM collections ORDER BY id")
                defer { s.reset() }
                var out: [Int64] = []
                while try s.step() { out.append(s.int(0)) }
                return out
            }()
            for id in ids {
                try DocumentStore(collectionID: id).forEachRow(conn, .withAttachments) { row in
                    for node in try row.tree().0.nodes {
                        guard let body = node.body else { continue }
                        for a in try Attachments.stored(inBody: body) {
                            referenced.insert(a.digest)
                            if let e = a.encoded { referenced.insert(e.digest) }     // its gzip form
                        }
                    }
                }
            }
            return referenced
    }
}
