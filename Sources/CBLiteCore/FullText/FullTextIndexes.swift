/// The full-text indexes of a collection: read from its `language: "query"` design
/// documents (FullTextIndex), created and deleted by writing them, their storage dropped
/// with them. Mango's json indexes share the design documents (MangoIndexes): a text
/// index is a member of `indexes`, a json index one of `views`.
extension Collection {
    /// The full-text indexes, by design document ID then name (byte order).
    public func textIndexes() throws -> [FullTextIndex] {
        try store.designDocuments.current(self).value(FullTextIndex.defined)
    }

    /// The full-text indexes for a search: made from the design documents once per state
    /// of them (DesignDocumentCache; reading and parsing them cost a search on a small
    /// index more than its query: bench_fts), and after a change, the storage of indexes
    /// they no longer define (deleted or changed by a document write) is dropped.
    func currentTextIndexes() throws -> [FullTextIndex] {
        try store.designDocuments.current(self).indexes(FullTextIndex.defined) { try dropOrphanTextIndexes(defined: $0) }
    }

    /// The index of that name (in that design document, when given); 404 when there is
    /// none, 400 when the name is in several design documents and none is given.
    public func textIndex(named name: String, ddoc: String? = nil) throws -> FullTextIndex {
        try FullTextIndex.named(name, ddoc: ddoc, in: textIndexes())
    }

    /// Creates (or redefines) a full-text index by writing its design document: "created",
    /// or "exists" when the same definition is already there. A changed definition
    /// rebuilds the index on its next use. An existing design document of another
    /// language is refused (400), as CouchDB refuses it for json indexes.
    @discardableResult
    public func createTextIndex(_ index: FullTextIndex) throws -> String {
        try check()
        let existing = parsedDesignDocument(index.ddoc)
        if let obj = existing {
            guard obj["language"] == .string("query") else {
                throw CBLError.badRequest("design document \(index.ddoc) is not a query design document")
            }
            if FullTextIndex.from(designDocument: obj).contains(where: { $0.name == index.name && $0.version == index.version }) {
                return "exists"
            }
        }
        try putQueryIndexEntry(existing, ddocID: index.ddoc, member: "indexes", name: index.name, definition: index.designJSON)
        return "created"
    }

    /// Deletes a full-text index and its storage; the design document goes when nothing
    /// but its language is left. 404 when there is no such index.
    public func deleteTextIndex(name: String, ddoc: String? = nil) throws {
        let index = try textIndex(named: name, ddoc: ddoc)
        guard let obj = parsedDesignDocument(index.ddoc), obj["indexes"]?.objectValue != nil else {
            throw CBLError.notFound("no full-text index named \"\(name)\"")
        }
        try removeQueryIndexEntry(obj, ddocID: index.ddoc, member: "indexes", name: index.name)
        try dropTextStorage(named: index.storageName)
    }

    /// Drops the storage of full-text indexes no design document defines any more (one
    /// deleted or changed by replication or a document write); `keeping`: the storage
    /// names still in use besides the design documents' (other kinds of full-text source).
    public func dropOrphanTextIndexes(keeping others: Set<String> = []) throws {
        try dropOrphanTextIndexes(defined: textIndexes(), keeping: others)
    }

    /// The same, given the indexes the design documents define.
    func dropOrphanTextIndexes(defined: [FullTextIndex], keeping others: Set<String> = []) throws {
        let live = Set(defined.map(\.storageName)).union(others)
        let prefix = "\u{1}text/"
        for (_, n) in try store.read({ conn in try FullTextStorage.indexes(conn, collectionID: id) })
        where n.hasPrefix(prefix) && !live.contains(n) {
            try dropTextStorage(named: n)
        }
    }

    /// Drops one full-text index's tables and registry row (nothing when it has none).
    public func dropTextStorage(named name: String) throws {
        try store.write(timeoutMs: database.busyTimeoutMs) { conn, _ in
            guard let st = try FullTextStorage.load(conn, collectionID: id, name: name) else { return }
            try FullTextStorage.drop(conn, st.id)
        }
    }
}
