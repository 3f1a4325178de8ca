/// What the store keeps about its collections (deleted ones, last_seq and doc_count) and
/// the settings kept in the `info` table.
extension Store {
    func markCollectionDeleted(_ id: Int64) {
        monitor.locked {
            if deletedCollections.insert(id).inserted { deletedCollectionCount.add(1, ordering: .releasing) }
        }
    }
    func isCollectionDeleted(_ id: Int64) -> Bool {
        if deletedCollectionCount.load(ordering: .acquiring) == 0 { return false }
        return monitor.locked { deletedCollections.contains(id) }
    }

    /// last_seq and doc_count, including the calling thread's uncommitted changes.
    func collectionMeta(_ id: Int64) throws -> CollectionMeta {
        try read { conn in try collectionMeta(id, reading: conn) }
    }

    /// The same, from inside `read`, on the connection it gave.
    func collectionMeta(_ id: Int64, reading conn: Connection) throws -> CollectionMeta {
        if ownedByCurrentThread, let state = txn { return try state.meta(id, writer) }
        return try CollectionMeta.load(id, conn)
    }


    // MARK: settings kept in the `info` table

    func maxRevTreeDepth() throws -> Int { try read { try maxRevTreeDepth($0) } }

    /// The same, on a connection a read already holds.
    func maxRevTreeDepth(_ conn: Connection) throws -> Int {
        Int(try conn.queryInt("SELECT value FROM info WHERE key='max_rev_tree_depth'") ?? 20)
    }

    func setMaxRevTreeDepth(_ depth: Int) throws {
        try write { conn, txn in
            let s = try conn.prepare("INSERT OR REPLACE INTO info(key, value) VALUES ('max_rev_tree_depth', ?)")
            s.bind(1, Int64(depth))
            try s.run()
            txn.resetMaxDepth()
        }
    }

    /// The `_security` object's JSON text; nil when none was ever set.
    func securityText() throws -> String? {
        try read { try $0.queryString("SELECT value FROM info WHERE key='security'") }
    }

    func setSecurityText(_ text: String) throws {
        try write { conn, _ in
            let s = try conn.prepare("INSERT OR REPLACE INTO info(key, value) VALUES ('security', ?)")
            s.bind(1, text)
            try s.run()
        }
    }
}
