/// Where view indexes live (DESIGN §2): a registry `view_registry` with one row per
/// (collection, view) — the map version, the last indexed sequence, the row count and a
/// generation that changes whenever the index's rows change — and one table per view,
/// `view_<id>`, kept in key order (collation CBL_JSON) then document ID. Created on demand.
enum ViewStorage {
    static let registrySQL = """
    CREATE TABLE IF NOT EXISTS view_registry(
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        coll INTEGER NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0,
        total_rows INTEGER NOT NULL DEFAULT 0,
        generation INTEGER NOT NULL DEFAULT 0,
        UNIQUE(coll, name));
    """

    static func table(_ id: Int64) -> String { "view_\(id)" }

    static func createTable(_ id: Int64) -> String {
        let t = table(id)
        return """
        CREATE TABLE IF NOT EXISTS \(t)(
            key TEXT NOT NULL COLLATE \(Collation.sqliteName),
            docid TEXT NOT NULL,
            n INTEGER NOT NULL,
            value TEXT,
            seq INTEGER NOT NULL,
            PRIMARY KEY(key, docid, n)) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS \(t)_doc ON \(t)(docid);
        """
    }

    /// The registry's state of one view.
    struct State: Equatable {
        var id: Int64
        var version: String
        var lastSeq: Int64
        var totalRows: Int64
        var generation: Int64
    }

    static func registryExists(_ conn: Connection) throws -> Bool {
        try conn.queryInt("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='view_registry'") ?? 0 > 0
    }

    static func load(_ conn: Connection, collectionID: Int64, name: String) throws -> State? {
        guard try registryExists(conn) else { return nil }
        let s = try conn.prepare("SELECT id, version, last_seq, total_rows, generation FROM view_registry WHERE coll=? AND name=?")
        defer { s.reset() }
        s.bind(1, collectionID).bind(2, name)
        guard try s.step() else { return nil }
        return State(id: s.int(0), version: s.string(1) ?? "", lastSeq: s.int(2), totalRows: s.int(3), generation: s.int(4))
    }

    /// Creates the registry row and table (or, when the version differs, empties the
    /// index and starts over). Inside a write transaction.
    static func ensure(_ conn: Connection, collectionID: Int64, name: String, version: String) throws -> State {
        try conn.exec(registrySQL)
        if var st = try load(conn, collectionID: collectionID, name: name) {
            if st.version == version {
                try conn.exec(createTable(st.id))
                return st
            }
            try conn.exec("DROP TABLE IF EXISTS \(table(st.id))")   // faster than deleting every row
            try conn.exec(createTable(st.id))
            st.version = version
            st.lastSeq = 0
            st.totalRows = 0
            st.generation += 1
            try save(conn, st)
            return st
        }
        let s = try conn.prepare("INSERT INTO view_registry(coll, name, version) VALUES (?,?,?)")
        s.bind(1, collectionID).bind(2, name).bind(3, version)
        try s.run()
        guard let st = try load(conn, collectionID: collectionID, name: name) else {
            throw CBLError.internalError("view \(name) was not registered")
        }
        try conn.exec(createTable(st.id))
        return st
    }

    static func save(_ conn: Connection, _ st: State) throws {
        let s = try conn.prepare("UPDATE view_registry SET version=?, last_seq=?, total_rows=?, generation=? WHERE id=?")
        s.bind(1, st.version).bind(2, st.lastSeq).bind(3, st.totalRows).bind(4, st.generation).bind(5, st.id)
        try s.run()
    }

    static func drop(_ conn: Connection, _ id: Int64) throws {
        try conn.exec("DROP TABLE IF EXISTS \(table(id))")
        let s = try conn.prepare("DELETE FROM view_registry WHERE id=?")
        s.bind(1, id)
        try s.run()
    }
}

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
                let u = try conn.prepare("UPDATE view_registry SET total_rows = total_rows - ?, generation = generation + 1 WHERE id=?")
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
        let q = try conn.prepare("SELECT id FROM view_registry WHERE coll=?")
        var ids: [Int64] = []
        q.bind(1, collectionID)
        do {
            defer { q.reset() }
            while try q.step() { ids.append(q.int(0)) }
        }
        return ids
    }
}
