/// Where view indexes live: a registry `view_indexes` with one row per
/// (collection, view) — the map version, the index format (IndexFormat: the
/// row layout, the key encoding and, once a key needed it, ICU's collation version), the last indexed sequence, the row count and a
/// generation that changes whenever the index's rows change — and one table per view,
/// `view_index_<id>`, whose primary key (CollatableKey bytes, document ID, emit number)
/// is the query order. Created on demand.
///
/// Indexes are derived data: one whose version or key format is not the current one is
/// emptied and rebuilt by the next update, and the JSON-keyed indexes of earlier cblite
/// versions (`view_registry`) are dropped by the first index write.
///
/// The one owner of these tables: every SQL statement on them is written here (this file:
/// schema and registry; ViewStorage+Rows: the updater's writes; ViewStorage+Reads: the
/// queries' reads; ViewStorage+Text: the text keys' full-text tables; the WHERE
/// conditions of key ranges come from KeyRangeSQL), as
/// DocumentStore owns a collection's document table. The rest of the engine calls these
/// methods.
enum ViewStorage {
    static let registrySQL = """
    CREATE TABLE IF NOT EXISTS view_indexes(
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        coll INTEGER NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        format TEXT NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0,
        total_rows INTEGER NOT NULL DEFAULT 0,
        generation INTEGER NOT NULL DEFAULT 0,
        UNIQUE(coll, name));
    """

    static func table(_ id: Int64) -> String { "view_index_\(id)" }

    /// The per-key row counts of a view's index (the stored reduction of the built-in
    /// `_count`, as CouchDB keeps reductions in its b-tree): one row per distinct key,
    /// with its number of index rows and the row blob of the first row counted (for the
    /// key's JSON when the key does not give it back: keys that collate equal may be
    /// spelled differently, and a group shows one spelling of its key, as it did when
    /// GROUP BY took one row's). A grouped `_count` reads one row per key from it
    /// instead of stepping over every index row. Kept exact in the transactions that
    /// change the index: rows are added only by MappedBatch.insert, which adds their
    /// counts, and every deletion of an index row, whatever deletes it, takes its count
    /// away through a trigger.
    static func countsTable(_ id: Int64) -> String { "view_counts_\(id)" }

    /// `key`: the CollatableKey; `docid`, `n`: the emitting document and emit number;
    /// `row`: the rest of what a query returns for the row (IndexRow: sequence, key JSON
    /// when the key does not give it back, value JSON).
    static func createTable(_ id: Int64) -> String {
        let t = table(id), c = countsTable(id)
        return """
        CREATE TABLE IF NOT EXISTS \(t)(
            key BLOB NOT NULL,
            docid TEXT NOT NULL,
            n INTEGER NOT NULL,
            row BLOB NOT NULL,
            PRIMARY KEY(key, docid, n)) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS \(t)_doc ON \(t)(docid);
        CREATE TABLE IF NOT EXISTS \(c)(
            key BLOB PRIMARY KEY,
            n INTEGER NOT NULL,
            row BLOB NOT NULL) WITHOUT ROWID;
        CREATE TRIGGER IF NOT EXISTS \(t)_uncount AFTER DELETE ON \(t) BEGIN
            UPDATE \(c) SET n = n - 1 WHERE key = OLD.key;
            DELETE FROM \(c) WHERE key = OLD.key AND n <= 0;
        END;
        """
    }

    /// Drops a view's index table (its triggers go with it), its counts and its text keys.
    static func dropTables(_ conn: Connection, _ id: Int64) throws {
        try conn.exec("DROP TABLE IF EXISTS \(table(id)); DROP TABLE IF EXISTS \(countsTable(id))")
        try dropTextTables(conn, id)
    }

    /// The document-ID index of a view's table (it serves the lookups of a document's old
    /// rows). A build from an empty index drops it and makes it at its end.
    static func docIndex(_ id: Int64) -> String { "\(table(id))_doc" }

    static func dropDocIndex(_ conn: Connection, _ id: Int64) throws {
        try conn.exec("DROP INDEX IF EXISTS \(docIndex(id))")
    }

    /// Creates the document-ID index when it is missing (checked first: cheaper than
    /// parsing a CREATE INDEX on every incremental update).
    static func ensureDocIndex(_ conn: Connection, _ id: Int64) throws {
        let s = try conn.prepare("SELECT count(*) FROM sqlite_master WHERE type='index' AND name=?")
        let exists: Bool
        do {
            defer { s.reset() }
            s.bind(1, docIndex(id))
            exists = try s.step() && s.int(0) > 0
        }
        guard !exists else { return }
        // The sort spills to a temporary file beyond the page cache's size: with temporary
        // storage in memory (SQLITE_TEMP_STORE=2) it would hold every entry, 40 MiB for a
        // 1,000,000-row index. (Allowed in a transaction: no TEMP schema is ever opened.)
        let spill = (try? conn.exec("PRAGMA temp_store = FILE")) != nil
        defer { if spill { try? conn.exec("PRAGMA temp_store = DEFAULT") } }
        try conn.exec("CREATE INDEX IF NOT EXISTS \(docIndex(id)) ON \(table(id))(docid)")
    }

    /// The registry's state of one view.
    struct State: Equatable {
        var id: Int64
        var version: String
        var format: String
        var lastSeq: Int64
        var totalRows: Int64
        var generation: Int64

        /// Whether the index's keys are in this build's format (else it is rebuilt).
        var isCurrentFormat: Bool { IndexFormat.isCurrent(format) }
    }

    static func registryExists(_ conn: Connection) throws -> Bool {
        try conn.hasTable("view_indexes")
    }

    private static let loadSQL = SQLText("SELECT id, version, format, last_seq, total_rows, generation FROM view_indexes WHERE coll=? AND name=?")

    /// The view's index state, nil when it has none; `anyFormat` false also gives nil for an
    /// index in another key format (it cannot be read).
    static func load(_ conn: Connection, collectionID: Int64, name: String, anyFormat: Bool = false) throws -> State? {
        // No registry yet: the statement does not prepare (once it exists, it stays cached:
        // no query of sqlite_master on every load) — or, cached while a transaction that
        // made the registry was under way, no longer prepares again once it rolled back.
        let s: Statement
        do {
            s = try conn.prepare(loadSQL)
        } catch let e as CBLError where e.message.contains("no such table") {
            return nil
        }
        defer { s.reset() }
        s.bind(1, collectionID).bind(2, name)
        do {
            guard try s.step() else { return nil }
        } catch let e as CBLError where e.message.contains("no such table") {
            return nil
        }
        let st = State(id: s.int(0), version: s.string(1) ?? "", format: s.string(2) ?? "", lastSeq: s.int(3),
                       totalRows: s.int(4), generation: s.int(5))
        return anyFormat || st.isCurrentFormat ? st : nil
    }

    /// Creates the registry row and table (or, when the version or key format differs,
    /// empties the index and starts over). Inside a write transaction.
    static func ensure(_ conn: Connection, collectionID: Int64, name: String, version: String) throws -> State {
        try dropLegacyIndexes(conn)
        try conn.exec(registrySQL)
        if var st = try load(conn, collectionID: collectionID, name: name, anyFormat: true) {
            if st.version == version && st.isCurrentFormat {
                try conn.exec(createTable(st.id))
                return st
            }
            try dropTables(conn, st.id)                // faster than deleting every row
            try conn.exec(createTable(st.id))
            st.version = version
            st.format = IndexFormat.withoutCollation    // empty: no key yet
            st.lastSeq = 0
            st.totalRows = 0
            st.generation += 1
            try save(conn, st)
            return st
        }
        let s = try conn.prepare("INSERT INTO view_indexes(coll, name, version, format) VALUES (?,?,?,?)")
        s.bind(1, collectionID).bind(2, name).bind(3, version).bind(4, IndexFormat.withoutCollation)
        try s.run()
        guard let st = try load(conn, collectionID: collectionID, name: name) else {
            throw CBLError.internalError("view \(name) was not registered")
        }
        try conn.exec(createTable(st.id))
        return st
    }

    /// Drops the indexes of cblite 0.1 (JSON text keys under a custom SQLite collation,
    /// listed in `view_registry`). Dropping needs no collation; reading them would.
    private static func dropLegacyIndexes(_ conn: Connection) throws {
        guard try conn.hasTable("view_registry") else { return }
        let q = try conn.prepare("SELECT id FROM view_registry")
        var ids: [Int64] = []
        do {
            defer { q.reset() }
            while try q.step() { ids.append(q.int(0)) }
        }
        for id in ids { try conn.exec("DROP TABLE IF EXISTS view_\(id)") }
        try conn.exec("DROP TABLE view_registry")
        Loggers.database.info("dropped \(ids.count) view index(es) of an earlier format; they are rebuilt on demand")
    }

    static func save(_ conn: Connection, _ st: State) throws {
        let s = try conn.prepare("UPDATE view_indexes SET version=?, format=?, last_seq=?, total_rows=?, generation=? WHERE id=?")
        s.bind(1, st.version).bind(2, st.format).bind(3, st.lastSeq).bind(4, st.totalRows).bind(5, st.generation).bind(6, st.id)
        try s.run()
    }

    static func drop(_ conn: Connection, _ id: Int64) throws {
        try dropTables(conn, id)
        let s = try conn.prepare("DELETE FROM view_indexes WHERE id=?")
        s.bind(1, id)
        try s.run()
    }

    /// Names of a collection's views that have an index, sorted.
    static func names(_ conn: Connection, collectionID: Int64) throws -> [String] {
        guard try registryExists(conn) else { return [] }
        let s = try conn.prepare("SELECT name FROM view_indexes WHERE coll=? ORDER BY name")
        defer { s.reset() }
        s.bind(1, collectionID)
        var out: [String] = []
        while try s.step() { out.append(s.string(0) ?? "") }
        return out
    }

    /// The IDs of a collection's views (none when no view was ever defined in this database).
    static func viewIDs(_ conn: Connection, collectionID: Int64) throws -> [Int64] {
        guard try registryExists(conn) else { return [] }
        let q = try conn.prepare("SELECT id FROM view_indexes WHERE coll=?")
        var ids: [Int64] = []
        q.bind(1, collectionID)
        do {
            defer { q.reset() }
            while try q.step() { ids.append(q.int(0)) }
        }
        return ids
    }

    /// Removes a purged document's rows from a view's index (their counts follow, by the
    /// trigger) and records it in the registry: fewer rows, a new generation. Nothing when
    /// the view's table is missing.
    static func removeDocument(_ conn: Connection, _ id: Int64, docID: String) throws {
        let d = try conn.prepare("DELETE FROM \(table(id)) WHERE docid=?")
        d.bind(1, docID)
        do { try d.run() } catch let e as CBLError where e.message.contains("no such table") { return }
        let removed = Int64(conn.changes)
        if removed > 0 {
            let u = try conn.prepare("UPDATE view_indexes SET total_rows = total_rows - ?, generation = generation + 1 WHERE id=?")
            u.bind(1, removed).bind(2, id)
            try u.run()
        }
    }
}
