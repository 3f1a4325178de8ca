/// CouchDB's purge history (`_purged_infos`, `purge_seq`): every revision purge asked of a
/// collection (Collection.purge(docID:revs:)), numbered from 1 per collection, with the
/// revisions it named — as CouchDB records them, whether or not they were there. The
/// newest `purged_infos_limit` requests are kept (the database's setting, 1000 by default
/// as CouchDB's); the newest one's number is the collection's purge sequence, so the
/// sequence survives trimming and compaction. Not the purge log (PurgeLog), which tells
/// other processes' watchers of whole-document purges.
enum PurgeHistory {
    static let defaultLimit: Int64 = 1000

    static let createSQL = """
    CREATE TABLE IF NOT EXISTS purge_history(
        coll INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        docid TEXT NOT NULL,
        revs TEXT NOT NULL,
        PRIMARY KEY(coll, seq)) WITHOUT ROWID;
    """

    /// Records a request (inside the purging transaction) and drops the ones beyond the limit.
    static func record(_ conn: Connection, collectionID: Int64, docID: String, revs: [String]) throws {
        let seq = try sequence(conn, collectionID: collectionID) + 1
        let insert = try conn.prepare("INSERT INTO purge_history(coll, seq, docid, revs) VALUES (?, ?, ?, ?)")
        try insert.bind(1, collectionID).bind(2, seq).bind(3, docID)
            .bindText(4, JSONWriter.ordered(.array(revs.map { .string($0) }))).run()
        try conn.prepare("DELETE FROM purge_history WHERE coll=? AND seq <= ?")
            .bind(1, collectionID).bind(2, seq - (try limit(conn))).run()
    }

    /// The newest request's number: 0 when none (or no history yet: a file no read-write
    /// open of this version has touched).
    static func sequence(_ conn: Connection, collectionID: Int64) throws -> Int64 {
        guard try conn.hasTable("purge_history") else { return 0 }
        return try conn.queryInt("SELECT max(seq) FROM purge_history WHERE coll=?", [collectionID]) ?? 0
    }

    /// The kept requests, oldest first.
    static func entries(_ conn: Connection, collectionID: Int64) throws -> [(docID: String, revs: [String])] {
        guard try conn.hasTable("purge_history") else { return [] }
        let s = try conn.prepare("SELECT docid, revs FROM purge_history WHERE coll=? ORDER BY seq")
        defer { s.reset() }
        s.bind(1, collectionID)
        var out: [(docID: String, revs: [String])] = []
        while try s.step() {
            let revs = try JSONParser.parse(s.string(1) ?? "[]").arrayValue?.compactMap(\.stringValue) ?? []
            out.append((s.string(0) ?? "", revs))
        }
        return out
    }

    static func collectionDeleted(_ conn: Connection, collectionID: Int64) throws {
        try conn.prepare("DELETE FROM purge_history WHERE coll=?").bind(1, collectionID).run()
    }

    // MARK: the limit (the `info` table's `purged_infos_limit`, for every collection)

    static func limit(_ conn: Connection) throws -> Int64 {
        try conn.queryInt("SELECT value FROM info WHERE key='purged_infos_limit'") ?? defaultLimit
    }

    /// Sets the limit; the history is trimmed to it at the next purge, as CouchDB's is.
    static func setLimit(_ conn: Connection, _ limit: Int64) throws {
        try conn.prepare("INSERT OR REPLACE INTO info(key, value) VALUES ('purged_infos_limit', ?)").bind(1, limit).run()
    }
}

extension Collection {
    /// How many revision purges were asked of this collection (CouchDB's `purge_seq`).
    public var purgeSequence: Int64 {
        get throws { try check(); return try store.read { try PurgeHistory.sequence($0, collectionID: id) } }
    }

    /// The kept purge requests, oldest first (CouchDB's `_purged_infos`).
    public func purgedInfos() throws -> [(docID: String, revs: [String])] {
        try check()
        return try store.read { try PurgeHistory.entries($0, collectionID: id) }
    }
}

extension Database {
    /// How many purge requests each collection keeps (CouchDB's `_purged_infos_limit`).
    public var purgedInfosLimit: Int64 {
        get throws { try checkOpen(); return try store.read { try PurgeHistory.limit($0) } }
    }

    public func setPurgedInfosLimit(_ limit: Int64) throws {
        try checkOpen()
        guard limit >= 1 else { throw CBLError.badRequest("purged_infos_limit must be a positive integer") }
        try store.write(timeoutMs: busyTimeoutMs) { conn, _ in try PurgeHistory.setLimit(conn, limit) }
    }
}
