/// The design documents of a database as last parsed, per collection and name: a load
/// looks up the stored current revision (one indexed read, no body) and reuses the parsed
/// document when it is the same revision — a view query loads its design document several
/// times (the listener's lookup, the query, the index update), and each used to read and
/// parse it whole. A new revision, a deletion or a purge is seen at the next load.
final class DesignDocumentCache: @unchecked Sendable {
    private let parsed = LockedValue<[String: DesignDocument]>([:])

    /// The design document `_design/name` of `collection` at its current revision; nil
    /// when there is none (or it is deleted).
    func load(_ collection: Collection, name: String) throws -> DesignDocument? {
        let docID = "_design/" + name
        let key = "\(collection.id)\u{0}\(name)"
        try collection.check()
        try DocumentBody.validateDocID(docID)
        return try collection.mapMissingTable {
            try collection.store.read { conn in
                guard let (_, flags, rev) = try collection.docStore.summary(conn, docID: docID), !flags.contains(.deleted) else {
                    parsed.withLock { _ = $0.removeValue(forKey: key) }
                    return nil
                }
                if let known = parsed.withLock({ $0[key] }), known.revID == rev { return known }
                let json = try collection.docStore.current(conn, docID: docID) { s in
                    DocumentJSON.render(docID: docID, rev: s.borrowedNonEmpty(2) ?? UnsafeBufferPointer(start: nil, count: 0),
                                        deleted: false, body: s.borrowedBytes(3))
                }
                guard let json else { return nil }
                let body = try json.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0, what: "design document") }
                let ddoc = DesignDocument(collection, name: name, body: body)
                parsed.withLock { $0[key] = ddoc }
                return ddoc
            }
        }
    }
}
