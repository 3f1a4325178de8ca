/// Document expiration (time to live), with 1-second granularity.
extension Collection {
    /// Sets (unixTime > 0) or clears (0) a document's expiration.
    public func setExpiration(docID: String, unixTime: Int64) throws {
        try check()
        try DocumentBody.validateDocID(docID)
        guard unixTime >= 0 else { throw CBLError.badRequest("expiration must be a time after 1970 (or 0 to clear)") }
        try mapMissingTable {
            try store.write(timeoutMs: database.busyTimeoutMs) { conn, _ in
                guard try docStore.setExpiration(conn, docID: docID, unixTime: unixTime == 0 ? nil : unixTime) else { throw CBLError.notFound("document \"\(docID)\" does not exist") }
            }
        }
        store.expiration?.poke()
    }

    public func expiration(docID: String) throws -> Int64 {
        try check()
        try DocumentBody.validateDocID(docID)
        return try mapMissingTable {
            try store.read { conn in
                guard let expiration = try docStore.expiration(conn, docID: docID) else {
                    throw CBLError.notFound("document \"\(docID)\" does not exist")
                }
                return expiration ?? 0
            }
        }
    }

    /// Purges this collection's documents whose expiration has passed. Returns how many.
    func purgeExpired(now: Int64) throws -> Int {
        try store.write(timeoutMs: database.busyTimeoutMs) { conn, txn in
            let ids = try docStore.expired(conn, at: now)
            for id in ids { try purgeRow(conn, txn, docID: id) }
            return ids.count
        }
    }

    func nextExpiration() throws -> Int64? {
        try store.read { conn in try docStore.nextExpiration(conn) }
    }
}
