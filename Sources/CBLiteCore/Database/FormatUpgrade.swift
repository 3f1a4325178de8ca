/// Brings a database file written by an earlier cblite to this one's format
/// (Schema.version; the file's own is `info.schema`). Each step runs once, at the first
/// writable open after the upgrade, in one transaction with the version bump, so a crash
/// mid-step leaves the file as it was and the next open runs the step again.
///
///     1 → 2  Revision IDs are ordered as CouchDB orders them (RevID's <): documents
///            whose stored current revision is no longer their tree's winner get it as
///            the current revision, with a new sequence (views and replications see it).
extension Database {
    func upgradeFormat() throws {
        if store.formatIsCurrent.withLock({ $0 }) { return }
        let schemaSQL = "SELECT value FROM info WHERE key='schema'"
        guard try store.read({ try $0.queryInt(schemaSQL) }) ?? 0 < Schema.version else {
            store.formatIsCurrent.withLock { $0 = true }
            return
        }
        try store.write(timeoutMs: busyTimeoutMs) { conn, txn in
            let version = try conn.queryInt(schemaSQL) ?? 0
            guard version < Schema.version else { return }     // another handle or process did it
            if version < 2 {
                var changed = 0
                for id in try collectionIDs(conn) {
                    changed += try Collection(database: self, id: id, scope: "", name: "").reevaluateWinners(conn, txn)
                }
                Loggers.database.info("\(name): format 2, \(changed) document(s) given CouchDB's winner")
            }
            try conn.exec("UPDATE info SET value=\(Schema.version) WHERE key='schema'")
        }
        store.formatIsCurrent.withLock { $0 = true }
    }
}

extension Collection {
    /// Makes each document's tree winner its current revision where the stored one is not
    /// (a file written under an earlier winner rule). Returns how many changed.
    func reevaluateWinners(_ conn: Connection, _ txn: TransactionState) throws -> Int {
        var stale: [DocumentRow] = []
        // Only documents with more than one revision have a tree, and only those can change.
        try docStore.forEachRow(conn, .withTrees) { row in
            let (tree, current) = try row.tree()
            if tree.winner != current { stale.append(row) }
        }
        for row in stale {
            let (tree, current) = try row.tree()
            try storeTree(conn, txn, docID: row.docID, tree: tree, oldRow: row, oldCurrent: current,
                          hasAttachments: row.flags.contains(.hasAttachments), external: false)
        }
        return stale.count
    }
}
