/// Hooks called by the document and collection code so that indexes never keep rows of
/// documents that no longer exist (a purge leaves no sequence behind to index).
public enum ViewIndexRegistry {
    /// Removes a purged document's rows from every view of its collection (inside the
    /// purging transaction).
    static func documentPurged(_ conn: Connection, collectionID: Int64, docID: String) throws {
        for id in try viewIDs(conn, collectionID: collectionID) {
            let d = try conn.prepare("DELETE FROM \(ViewStorage.table(id)) WHERE docid=?")
            d.bind(1, docID)
            do { try d.run() } catch let e as CBLError where e.message.contains("no such table") { continue }
            let removed = Int64(conn.changes)
            if removed > 0 {
                let u = try conn.prepare("UPDATE view_indexes SET total_rows = total_rows - ?, generation = generation + 1 WHERE id=?")
                u.bind(1, removed).bind(2, id)
                try u.run()
            }
        }
    }

    /// Drops the indexes of every view of a deleted collection.
    static func collectionDeleted(_ conn: Connection, collectionID: Int64) throws {
        for id in try viewIDs(conn, collectionID: collectionID) { try ViewStorage.drop(conn, id) }
    }

    /// The views of a collection (none when no view was ever defined in this database).
    private static func viewIDs(_ conn: Connection, collectionID: Int64) throws -> [Int64] {
        guard try ViewStorage.registryExists(conn) else { return [] }
        let q = try conn.prepare("SELECT id FROM view_indexes WHERE coll=?")
        var ids: [Int64] = []
        q.bind(1, collectionID)
        do {
            defer { q.reset() }
            while try q.step() { ids.append(q.int(0)) }
        }
        return ids
    }
}
