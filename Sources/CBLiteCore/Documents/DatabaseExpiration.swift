extension Database {
    /// Purges expired documents of every collection; returns how many.
    @discardableResult
    public func purgeExpired() throws -> Int {
        try checkOpen()
        let now = unixTimeNow()
        var n = 0
        for id in try allCollectionIDs() {
            n += try Collection(database: self, id: id, scope: "", name: "").purgeExpired(now: now)
        }
        return n
    }

    func nextExpiration() throws -> Int64? {
        try allCollectionIDs().compactMap { try Collection(database: self, id: $0, scope: "", name: "").nextExpiration() }.min()
    }

    /// Purges what has expired now and makes the Store's timer (once per Store), whose
    /// thread starts if the file holds a later expiration.
    func startExpiration() throws {
        try purgeExpired()
        store.startExpirationTimer(self)
        store.expiration?.pokeIfPending()
    }
}
