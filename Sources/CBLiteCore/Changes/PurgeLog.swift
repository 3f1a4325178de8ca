/// Whole-document purges, written down so that other processes' change observers hear of
/// them. A purge removes the row and allocates no sequence, so the changes feed — where
/// another process's watcher (ExternalChangeWatcher) finds commits — cannot show it. Each
/// purge adds an entry in its own transaction, naming the Store that made it (its own
/// watcher skips those: they were delivered by their commit). The log keeps its newest
/// `kept` entries; watchers read it every 250 ms, and one opened later starts at its end.
enum PurgeLog {
    static let kept: Int64 = 10_000

    static let createSQL = """
    CREATE TABLE IF NOT EXISTS purge_log(
        id INTEGER PRIMARY KEY,
        coll INTEGER NOT NULL,
        docid TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        origin INTEGER NOT NULL);
    """

    struct Entry: Equatable {
        var id: Int64
        var collectionID: Int64
        var docID: String
        var sequence: Int64
        var origin: Int64
    }

    /// Records a purge (inside the purging transaction) and drops the entries beyond `kept`.
    static func record(_ conn: Connection, collectionID: Int64, docID: String, sequence: Int64, origin: Int64) throws {
        let insert = try conn.prepare("INSERT INTO purge_log(coll, docid, sequence, origin) VALUES (?, ?, ?, ?)")
        try insert.bind(1, collectionID).bind(2, docID).bind(3, sequence).bind(4, origin).run()
        // IDs grow by one and only the oldest are dropped: the new entry's ID says which.
        try conn.prepare("DELETE FROM purge_log WHERE id <= last_insert_rowid() - ?").bind(1, kept).run()
    }

    /// The newest entry's ID: 0 when there is none, or no log yet (a file no read-write
    /// open of this version has touched).
    static func lastID(_ conn: Connection) throws -> Int64 {
        guard try conn.hasTable("purge_log") else { return 0 }
        return try conn.queryInt("SELECT max(id) FROM purge_log") ?? 0
    }

    /// The entries after `id`, oldest first.
    static func entries(_ conn: Connection, after id: Int64) throws -> [Entry] {
        guard try conn.hasTable("purge_log") else { return [] }
        let s = try conn.prepare("SELECT id, coll, docid, sequence, origin FROM purge_log WHERE id > ? ORDER BY id")
        defer { s.reset() }
        s.bind(1, id)
        var out: [Entry] = []
        while try s.step() {
            out.append(Entry(id: s.int(0), collectionID: s.int(1), docID: s.string(2) ?? "", sequence: s.int(3), origin: s.int(4)))
        }
        return out
    }
}
