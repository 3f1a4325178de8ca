import CSQLCipher

/// Where full-text indexes live: a registry `fts_indexes` with one row per (collection,
/// storage name) — the definition's version, its columns and the last indexed sequence —
/// and per index an FTS5 table `fts_<id>` (rowid: the document's sequence when indexed;
/// an unindexed `docid` column, then one column per field) with `fts_map_<id>`, which
/// finds a document's row by its ID when it changes or goes. FTS5 keeps the text
/// (snippets are cut from it) and the terms in shadow tables of the same database file:
/// encrypted with it. The one owner of these tables: every SQL statement on them is
/// written here; the rest of the engine calls these methods (as ViewStorage for views).
enum FullTextStorage {
    static let registrySQL = """
    CREATE TABLE IF NOT EXISTS fts_indexes(
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        coll INTEGER NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0,
        UNIQUE(coll, name));
    """

    static func table(_ id: Int64) -> String { "fts_\(id)" }
    static func mapTable(_ id: Int64) -> String { "fts_map_\(id)" }

    /// Columns are named c0, c1, ... (field paths are not identifiers); queries name
    /// them so (FullTextQuery.fts5).
    static func columnName(_ i: Int) -> String { "c\(i)" }

    static func createTables(_ conn: Connection, _ id: Int64, columns: Int, analyzer: FullTextAnalyzer) throws {
        let cols = (0..<columns).map(columnName).joined(separator: ", ")
        try conn.exec("""
        CREATE VIRTUAL TABLE IF NOT EXISTS \(table(id)) USING fts5(docid UNINDEXED, \(cols), \(analyzer.fts5TokenizeArgument));
        CREATE TABLE IF NOT EXISTS \(mapTable(id))(docid TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID;
        """)
    }

    static func dropTables(_ conn: Connection, _ id: Int64) throws {
        try conn.exec("DROP TABLE IF EXISTS \(table(id)); DROP TABLE IF EXISTS \(mapTable(id))")
    }

    struct State: Equatable {
        var id: Int64
        var version: String
        var lastSeq: Int64
    }

    private static let loadSQL = SQLText("SELECT id, version, last_seq FROM fts_indexes WHERE coll=? AND name=?")
    private static let indexesSQL = SQLText("SELECT id, name FROM fts_indexes WHERE coll=? ORDER BY name")

    /// A registry statement, nil while there is no registry (then it does not prepare;
    /// once it does, it stays cached: no query of sqlite_master on every search).
    private static func registryStatement(_ conn: Connection, _ sql: SQLText) throws -> Statement? {
        do { return try conn.prepare(sql) } catch let e as CBLError where e.message.contains("no such table") { return nil }
    }

    static func load(_ conn: Connection, collectionID: Int64, name: String) throws -> State? {
        guard let s = try registryStatement(conn, loadSQL) else { return nil }
        defer { s.reset() }
        s.bind(1, collectionID).bind(2, name)
        guard try s.step() else { return nil }
        return State(id: s.int(0), version: s.string(1) ?? "", lastSeq: s.int(2))
    }

    /// Creates the registry row and tables, or empties and re-creates them when the
    /// version differs (the columns or tokenizer may have changed). In a write transaction.
    static func ensure(_ conn: Connection, collectionID: Int64, source: FullTextSource) throws -> State {
        try conn.exec(registrySQL)
        if var st = try load(conn, collectionID: collectionID, name: source.name) {
            if st.version != source.version {
                try dropTables(conn, st.id)
                st.version = source.version
                st.lastSeq = 0
                try save(conn, st)
            }
            try createTables(conn, st.id, columns: source.columns.count, analyzer: source.analyzer)
            return st
        }
        let s = try conn.prepare("INSERT INTO fts_indexes(coll, name, version) VALUES (?,?,?)")
        s.bind(1, collectionID).bind(2, source.name).bind(3, source.version)
        try s.run()
        guard let st = try load(conn, collectionID: collectionID, name: source.name) else {
            throw CBLError.internalError("full-text index \(source.name) was not registered")
        }
        try createTables(conn, st.id, columns: source.columns.count, analyzer: source.analyzer)
        return st
    }

    static func save(_ conn: Connection, _ st: State) throws {
        let s = try conn.prepare("UPDATE fts_indexes SET version=?, last_seq=? WHERE id=?")
        s.bind(1, st.version).bind(2, st.lastSeq).bind(3, st.id)
        try s.run()
    }

    static func drop(_ conn: Connection, _ id: Int64) throws {
        try dropTables(conn, id)
        let s = try conn.prepare("DELETE FROM fts_indexes WHERE id=?")
        s.bind(1, id)
        try s.run()
    }

    /// The (id, storage name) of a collection's full-text indexes.
    static func indexes(_ conn: Connection, collectionID: Int64) throws -> [(id: Int64, name: String)] {
        guard let s = try registryStatement(conn, indexesSQL) else { return [] }
        defer { s.reset() }
        s.bind(1, collectionID)
        var out: [(Int64, String)] = []
        while try s.step() { out.append((s.int(0), s.string(1) ?? "")) }
        return out
    }

    // MARK: rows

    /// Removes a document's row (nothing when it has none).
    static func removeDocument(_ conn: Connection, _ id: Int64, docID: String) throws {
        let q = try conn.prepare("SELECT seq FROM \(mapTable(id)) WHERE docid=?")
        q.bind(1, docID)
        let seq: Int64?
        do {
            defer { q.reset() }
            seq = try q.step() ? q.int(0) : nil
        }
        guard let seq else { return }
        let d = try conn.prepare("DELETE FROM \(table(id)) WHERE rowid=?")
        d.bind(1, seq)
        try d.run()
        let m = try conn.prepare("DELETE FROM \(mapTable(id)) WHERE docid=?")
        m.bind(1, docID)
        try m.run()
    }

    /// Adds documents' rows, its statements prepared once for a whole chunk (building
    /// and hashing the SQL text per document cost the index build ~10%).
    struct RowWriter {
        private let insert: Statement
        private let map: Statement

        init(_ conn: Connection, _ id: Int64, columns: Int) throws {
            let cols = (0..<columns).map { ", " + columnName($0) }.joined()
            let params = String(repeating: ",?", count: columns)
            insert = try conn.prepare("INSERT INTO \(table(id))(rowid, docid\(cols)) VALUES (?,?\(params))")
            map = try conn.prepare("INSERT INTO \(mapTable(id))(docid, seq) VALUES (?,?)")
        }

        /// Adds a document's row (it has none: removeDocument first when it may).
        func add(sequence: Int64, docID: String, texts: [String?]) throws {
            insert.bind(1, sequence).bind(2, docID)
            for (i, t) in texts.enumerated() { insert.bind(Int32(i + 3), t) }
            try insert.run()
            map.bind(1, docID).bind(2, sequence)
            try map.run()
        }
    }

    // MARK: queries

    /// One match of a query: the row's sequence and document ID, its BM25 score (higher
    /// is better) and, per column, the snippet when the column matched (nil otherwise;
    /// empty when no snippets were asked for).
    struct Match {
        let sequence: Int64
        let docID: String
        let score: Double
        let snippets: [String?]
    }

    /// Calls `body` with at most `limit` matches of an FTS5 query, best first (ties by
    /// sequence), from after `after` (a bookmark's score and sequence) on, until it
    /// returns false. The LIMIT lets SQLite keep only the best rows while it sorts, where
    /// a full sort took 9x raw FTS5's time for a common term (bench_fts).
    /// `snippet`: the highlight marks, the ellipsis and the most tokens of a snippet (nil:
    /// no snippets, none computed).
    static func search(_ conn: Connection, _ id: Int64, columns: Int, match: String, after: (score: Double, sequence: Int64)?, limit: Int,
                       snippet: FullTextSnippetStyle?, _ body: (Match) throws -> Bool) throws {
        // bm25() is lower for better matches. snippet() gives a column's text even where
        // the column did not match: a snippet without a highlight is dropped.
        let t = table(id)
        let snippets = snippet == nil ? "" : (0..<columns).map { ", snippet(\(t), \($0 + 1), ?2, ?3, ?4, ?5)" }.joined()
        var sql = "SELECT rowid, docid, -bm25(\(t)) AS score\(snippets) FROM \(t) WHERE \(t) MATCH ?1"
        if after != nil { sql += " AND (-bm25(\(t)) < ?6 OR (-bm25(\(t)) = ?6 AND rowid > ?7))" }
        sql += " ORDER BY score DESC, rowid LIMIT ?8"
        let s = try conn.prepare(sql)
        defer { s.reset() }
        s.bind(1, match)
        if let snippet {
            s.bind(2, snippet.open).bind(3, snippet.close).bind(4, snippet.ellipsis).bind(5, Int64(snippet.tokens))
        }
        if let after {
            sqlite3_bind_double(s.handle, 6, after.score)
            s.bind(7, after.sequence)
        }
        s.bind(8, Int64(limit))
        while try s.step() {
            let texts: [String?] = snippet.map { style in
                (0..<columns).map { i in
                    guard let x = s.string(Int32(3 + i)), x.contains(style.open) else { return nil }
                    return x
                }
            } ?? []
            let m = Match(sequence: s.int(0), docID: s.string(1) ?? "", score: sqlite3_column_double(s.handle, 2), snippets: texts)
            if try !body(m) { return }
        }
    }
}
