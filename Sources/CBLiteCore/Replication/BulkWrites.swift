/// `_bulk_docs` with `new_edits=true`: many new revisions in one transaction, each
/// document succeeding or failing on its own (CouchDB's per-document results).
extension Collection {
    /// Each object is a document as `put` takes it: `_id` optional (a UUID is made),
    /// `_rev` the parent, `_deleted` for a tombstone. Throws only when the batch cannot
    /// run at all (closed database, deleted collection, busy).
    public func saveDocuments(_ docs: [JSONObject]) throws -> [WriteResult] {
        try check()
        return try mapMissingTable {
            try store.write(timeoutMs: database.busyTimeoutMs) { _, _ in
                docs.map { object in
                    let givenID = object["_id"]?.stringValue
                    do {
                        var body = try JSONWriter.canonical(.object(object)).withUnsafeBufferPointer { try DocumentBody.parse(bytes: $0) }
                        // A savepoint per document: one that fails leaves no trace.
                        let saved = try store.write(savepoint: true) { _, _ in
                            try put(docID: nil, body: &body, parent: nil, allowConflict: false)
                        }
                        return WriteResult(docID: saved.docID, revID: saved.revID, error: nil)
                    } catch {
                        return WriteResult(docID: givenID ?? "", revID: nil, error: CBLError.wrapping(error))
                    }
                }
            }
        }
    }
}
