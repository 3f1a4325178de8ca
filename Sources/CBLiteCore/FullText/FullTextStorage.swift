import CSQLCipher

/// Where full-text indexes live: a registry `fts_indexes` with one row per (collection,
/// storage name) — the definition's version, its columns and the last indexed sequence —
/// and per index an FTS5 table `fts_<id>` (rowid: the document's sequence when indexed;
/// an unindexed `docid` column, then one column per field) with `fts_map_<id>`, which
/// finds a document's row by its ID when it changes or goes. FTS5 keeps the text
/// (snippets are cut from it) and the terms in shadow tables of the same database file:
/// encrypted with it. A source's field values (FullTextValue) live in `fts_val_<id>`,
/// keyed by the same rowid, where SQL filters (ranges) and sorts by them. The one owner
/// of these tables: every SQL statement on them is written here; the rest of the engine
/// calls these methods (as ViewStorage for views).
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
    static func valueTable(_ id: Int64) -> String { "fts_val_\(id)" }

    /// The registry's version of a source: its own, and the tables' layout (a change of
    /// layout rebuilds every index once).
    static func storedVersion(_ source: FullTextSource) -> String { "2/" + source.version }

    /// Columns are named c0, c1, ... (field paths are not identifiers); queries name
    /// them so (FullTextQuery.fts5).
    static func columnName(_ i: Int) -> String { "c\(i)" }

    static func createTables(_ conn: Connection, _ id: Int64, columns: Int, analyzer: FullTextAnalyzer) throws {
        let cols = (0..<columns).map(columnName).joined(separator: ", ")
        try conn.exec("""
        CREATE VIRTUAL TABLE IF NOT EXISTS \(table(id)) USING fts5(docid UNINDEXED, \(cols), \(analyzer.fts5TokenizeArgument));
        CREATE TABLE IF NOT EXISTS \(mapTable(id))(docid TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS \(valueTable(id))(seq INTEGER NOT NULL, field INTEGER NOT NULL, ord INTEGER NOT NULL, num REAL, str TEXT);
        CREATE INDEX IF NOT EXISTS \(valueTable(id))_num ON \(valueTable(id))(field, num);
        CREATE INDEX IF NOT EXISTS \(valueTable(id))_str ON \(valueTable(id))(field, str);
        CREATE INDEX IF NOT EXISTS \(valueTable(id))_seq ON \(valueTable(id))(seq, field, ord);
        """)
    }

    static func dropTables(_ conn: Connection, _ id: Int64) throws {
        try conn.exec("DROP TABLE IF EXISTS \(table(id)); DROP TABLE IF EXISTS \(mapTable(id)); DROP TABLE IF EXISTS \(valueTable(id))")
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
            if st.version != storedVersion(source) {
                try dropTables(conn, st.id)
                st.version = storedVersion(source)
                st.lastSeq = 0
                try save(conn, st)
            }
            try createTables(conn, st.id, columns: source.columns.count, analyzer: source.analyzer)
            return st
        }
        let s = try conn.prepare("INSERT INTO fts_indexes(coll, name, version) VALUES (?,?,?)")
        s.bind(1, collectionID).bind(2, source.name).bind(3, storedVersion(source))
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
        // An index built before values were stored has no value table until its rebuild.
        let v: Statement
        do { v = try conn.prepare("DELETE FROM \(valueTable(id)) WHERE seq=?") } catch let e as CBLError where e.message.contains("no such table") { return }
        v.bind(1, seq)
        try v.run()
    }

    /// Adds documents' rows, its statements prepared once for a whole chunk (building
    /// and hashing the SQL text per document cost the index build ~10%).
    struct RowWriter {
        private let insert: Statement
        private let map: Statement
        private let value: Statement

        init(_ conn: Connection, _ id: Int64, columns: Int) throws {
            let cols = (0..<columns).map { ", " + columnName($0) }.joined()
            let params = String(repeating: ",?", count: columns)
            insert = try conn.prepare("INSERT INTO \(table(id))(rowid, docid\(cols)) VALUES (?,?\(params))")
            map = try conn.prepare("INSERT INTO \(mapTable(id))(docid, seq) VALUES (?,?)")
            value = try conn.prepare("INSERT INTO \(valueTable(id))(seq, field, ord, num, str) VALUES (?,?,?,?,?)")
        }

        /// Adds a document's row (it has none: removeDocument first when it may).
        func add(sequence: Int64, docID: String, row: FullTextRow) throws {
            insert.bind(1, sequence).bind(2, docID)
            for (i, t) in row.texts.enumerated() { insert.bind(Int32(i + 3), t) }
            try insert.run()
            map.bind(1, docID).bind(2, sequence)
            try map.run()
            var ords: [Int: Int64] = [:]
            for (field, v) in row.values {
                let ord = ords[field, default: 0]
                ords[field] = ord + 1
                value.bind(1, sequence).bind(2, Int64(field)).bind(3, ord)
                switch v {
                case .number(let d): sqlite3_bind_double(value.handle, 4, d); value.bind(5, nil as String?)
                case .string(let s): value.bind(4, nil as Int64?).bind(5, s)
                }
                try value.run()
            }
        }
    }

    // MARK: queries

    /// A condition on rows, in SQL: a (non-ranking) FTS5 sub-query, or a range of a value
    /// field's stored values (`field`: its index in the source's valueFields).
    indirect enum Condition: Equatable {
        case match(String)
        case range(field: Int, lower: FullTextBound?, upper: FullTextBound?)
        case and([Condition])
        case or([Condition])
        case not(Condition)
    }

    /// A value bound to a statement's parameter.
    private enum Parameter {
        case text(String)
        case int(Int64)
        case real(Double)
    }

    /// SQL text and its parameters, in order (`?`).
    private struct SQL {
        var text = ""
        var parameters: [Parameter] = []

        mutating func append(_ t: String, _ p: Parameter...) {
            text += t
            parameters += p
        }

        func bind(_ s: Statement) {
            for (i, p) in parameters.enumerated() {
                switch p {
                case .text(let t): s.bind(Int32(i + 1), t)
                case .int(let n): s.bind(Int32(i + 1), n)
                case .real(let d): sqlite3_bind_double(s.handle, Int32(i + 1), d)
                }
            }
        }
    }

    private static func condition(_ c: Condition, _ id: Int64, into sql: inout SQL) {
        let t = table(id), v = valueTable(id)
        switch c {
        case .match(let m): sql.append("\(t).rowid IN (SELECT rowid FROM \(t) WHERE \(t) MATCH ?)", .text(m))
        case .range(let field, let lower, let upper):
            let column = (lower ?? upper).map { if case .number = $0.value { "num" } else { "str" } } ?? "coalesce(num, str)"
            sql.append("\(t).rowid IN (SELECT seq FROM \(v) WHERE field=? AND \(column) IS NOT NULL", .int(Int64(field)))
            for (b, op) in [(lower, ">"), (upper, "<")] {
                guard let b else { continue }
                let p: Parameter
                switch b.value {
                case .number(let d): p = .real(d)
                case .string(let s): p = .text(s)
                }
                sql.append(" AND \(column) \(op)\(b.inclusive ? "=" : "") ?", p)
            }
            sql.append(")")
        case .and(let xs), .or(let xs):
            guard !xs.isEmpty else { sql.append(c == .and([]) ? "1" : "0"); return }
            let op: String
            if case .and = c { op = " AND " } else { op = " OR " }
            sql.append("(")
            for (i, x) in xs.enumerated() {
                if i > 0 { sql.append(op) }
                condition(x, id, into: &sql)
            }
            sql.append(")")
        case .not(let x):
            sql.append("NOT (")
            condition(x, id, into: &sql)
            sql.append(")")
        }
    }

    /// `FROM … WHERE …` of a plan's rows.
    private static func rows(_ plan: FullTextQueryPlan, _ id: Int64, into sql: inout SQL) {
        let t = table(id)
        sql.append(" FROM \(t) WHERE ")
        if let m = plan.match { sql.append("\(t) MATCH ?", .text(m)) } else { sql.append("1") }
        if let c = plan.condition {
            sql.append(" AND ")
            condition(c, id, into: &sql)
        }
    }

    /// How many rows match a plan.
    static func count(_ conn: Connection, _ id: Int64, plan: FullTextQueryPlan) throws -> Int {
        var sql = SQL()
        sql.append("SELECT count(*)")
        rows(plan, id, into: &sql)
        let s = try conn.prepare(sql.text)
        defer { s.reset() }
        sql.bind(s)
        return try s.step() ? Int(s.int(0)) : 0
    }

    /// One match of a query: the row's sequence and document ID, its BM25 score (higher
    /// is better; 1 for a query without ranked text), per column the snippet when the
    /// column matched (nil otherwise; empty when no snippets were asked for), and the
    /// sort values asked for.
    struct Match {
        let sequence: Int64
        let docID: String
        let score: Double
        let snippets: [String?]
        var sortValues: [FullTextValue?] = []
    }

    /// Sorting by a value field (its index in the source's valueFields, its first value;
    /// rows without one come last either way).
    struct SortKey {
        let field: Int
        let numeric: Bool
        let descending: Bool
    }

    /// Calls `body` with at most `limit` matches of a plan, best first (ties by sequence)
    /// — or in `sort`'s order, then so, from `offset` on — from after `after` (a bookmark's
    /// score and sequence) on, until it returns false. The LIMIT lets SQLite keep only the
    /// best rows while it sorts, where a full sort took 9x raw FTS5's time for a common
    /// term (bench_fts). `snippet`: the highlight marks, the ellipsis and the most tokens
    /// of a snippet (nil: no snippets, none computed; there are none without a MATCH).
    static func search(_ conn: Connection, _ id: Int64, columns: Int, plan: FullTextQueryPlan,
                       after: (score: Double, sequence: Int64)?, limit: Int, sort: [SortKey] = [], offset: Int = 0,
                       snippet: FullTextSnippetStyle?, _ body: (Match) throws -> Bool) throws {
        // bm25() is lower for better matches. snippet() gives a column's text even where
        // the column did not match: a snippet without a highlight is dropped.
        let t = table(id), v = valueTable(id)
        let snippet = plan.match == nil ? nil : snippet
        var sql = SQL()
        let score = plan.match == nil ? "1.0" : "-bm25(\(t))"
        sql.append("SELECT \(t).rowid, docid, \(score) AS score")
        if let snippet {
            for i in 0..<columns {
                sql.append(", snippet(\(t), \(i + 1), ?, ?, ?, ?)", .text(snippet.open), .text(snippet.close), .text(snippet.ellipsis),
                           .int(Int64(snippet.tokens)))
            }
        }
        for (i, k) in sort.enumerated() {
            sql.append(", (SELECT \(k.numeric ? "num" : "str") FROM \(v) WHERE seq=\(t).rowid AND field=? AND ord=0) AS s\(i)", .int(Int64(k.field)))
        }
        rows(plan, id, into: &sql)
        if let after {
            sql.append(" AND (\(score) < ? OR (\(score) = ? AND \(t).rowid > ?))", .real(after.score), .real(after.score), .int(after.sequence))
        }
        sql.append(" ORDER BY ")
        let first = 3 + (snippet == nil ? 0 : columns)
        for (i, k) in sort.enumerated() { sql.append("s\(i) IS NULL, s\(i)\(k.descending ? " DESC" : ""), ") }
        sql.append("score DESC, \(t).rowid LIMIT ? OFFSET ?", .int(Int64(limit)), .int(Int64(offset)))
        let s = try conn.prepare(sql.text)
        defer { s.reset() }
        sql.bind(s)
        while try s.step() {
            let texts: [String?] = snippet.map { style in
                (0..<columns).map { i in
                    guard let x = s.string(Int32(3 + i)), x.contains(style.open) else { return nil }
                    return x
                }
            } ?? []
            var m = Match(sequence: s.int(0), docID: s.string(1) ?? "", score: sqlite3_column_double(s.handle, 2), snippets: texts)
            m.sortValues = sort.enumerated().map { i, k -> FullTextValue? in
                let col = Int32(first + i)
                if s.isNull(col) { return nil }
                return k.numeric ? .number(sqlite3_column_double(s.handle, col)) : s.string(col).map { .string($0) }
            }
            if try !body(m) { return }
        }
    }
}
