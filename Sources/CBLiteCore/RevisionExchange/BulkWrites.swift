/// `_bulk_docs` with `new_edits=true`: many new revisions in one transaction, each
/// document succeeding or failing on its own (CouchDB's per-document results).
extension Collection {
    /// Each object is a document as `put` takes it: `_id` optional (a UUID is made),
    /// `_rev` the parent, `_deleted` for a tombstone. Throws only when the batch cannot
    /// run at all (closed database, deleted collection, busy).
    public func saveDocuments(_ docs: [JSONObject]) throws -> [WriteResult] {
        try check()
        return try mapMissingTable {
            try store.write(timeoutMs: database.busyTimeoutMs) { conn, _ in
                docs.map { object in
                    let givenID = object["_id"]?.stringValue
                    do {
                        var body = try JSONWriter.canonical(.object(object)).withUnsafeBufferPointer { try DocumentBody.parse(bytes: $0) }
                        // A savepoint per document: one that fails leaves no trace.
                        let saved = try store.write(savepoint: true) { _, _ in
                            try put(docID: nil, body: &body, parent: nil, allowConflict: false)
                        }
                        return WriteResult(docID: saved.docID, revID: saved.revID, error: nil)
                    } catch let e as CBLError where e.status == .notFound && object["_rev"] != nil {
                        // CouchDB: a _rev for a document that does not exist is a conflict ("old
                        // revs specified but none exist"), not the 404 a single put answers.
                        let missing = givenID.map { id in (try? docStore.row(conn, docID: id).map { _ in false } ?? true) ?? false }
                        if missing == true, let id = givenID {
                            return WriteResult(docID: id, revID: nil, error: CBLError.conflict("document update conflict: \(e.message)"))
                        }
                        return WriteResult(docID: givenID ?? "", revID: nil, error: e)
                    } catch {
                        return WriteResult(docID: givenID ?? "", revID: nil, error: CBLError.wrapping(error))
                    }
                }
            }
        }
    }
}
