import CSQLCipher

/// A view's text keys (Couchbase Lite 1.x's `emit(CBLTextKey(text), value)`), in the view's
/// own storage: each is an index row of key null (what ordinary queries show, as 1.x did),
/// whose text is in the view's FTS5 table `view_text_<id>` (the text column, tokenized by
/// the view's analyzer), its rowid that of the row's entry in `view_textmap_<id>` (the
/// row's document ID and emit number). Made with the view's first text key.
///
/// Kept exact with the index rows in the transactions that change them: texts are added
/// only with their rows (MappedBatch.insert), and every deletion of a key-null index row,
/// whatever deletes it (a document's update, deletion or purge), deletes its text through
/// a trigger; the tables are dropped with the index (dropTables: a rebuild, the view's or
/// the collection's deletion). FTS5 keeps the texts and terms in shadow tables of the
/// same database file: encrypted with it.
extension ViewStorage {
    static func textTable(_ id: Int64) -> String { "view_text_\(id)" }
    static func textMapTable(_ id: Int64) -> String { "view_textmap_\(id)" }

    /// The CollatableKey of a text key's row (null).
    static let textRowKey = CollatableKey.encode(.null)

    static func dropTextTables(_ conn: Connection, _ id: Int64) throws {
        try conn.exec("DROP TABLE IF EXISTS \(textTable(id)); DROP TABLE IF EXISTS \(textMapTable(id))")
    }

    static func hasTextTables(_ conn: Connection, _ id: Int64) throws -> Bool {
        try conn.hasTable(textMapTable(id))
    }

    /// Creates the text tables and the trigger that deletes a row's text with the row
    /// (when missing; inside the write transaction of the first text key's rows).
    static func ensureTextTables(_ conn: Connection, _ id: Int64, analyzer: FullTextAnalyzer) throws {
        if try hasTextTables(conn, id) { return }
        let t = table(id), x = textTable(id), m = textMapTable(id)
        let nullKey = textRowKey.map { String($0, radix: 16).leftPadded(2) }.joined()
        try conn.exec("""
        CREATE VIRTUAL TABLE IF NOT EXISTS \(x) USING fts5(text, \(analyzer.fts5TokenizeArgument));
        CREATE TABLE IF NOT EXISTS \(m)(id INTEGER PRIMARY KEY, docid TEXT NOT NULL, n INTEGER NOT NULL, UNIQUE(docid, n));
        CREATE TRIGGER IF NOT EXISTS \(t)_untext AFTER DELETE ON \(t) WHEN OLD.key = X'\(nullKey)' BEGIN
            DELETE FROM \(x) WHERE rowid IN (SELECT id FROM \(m) WHERE docid = OLD.docid AND n = OLD.n);
            DELETE FROM \(m) WHERE docid = OLD.docid AND n = OLD.n;
        END;
        """)
    }

    /// Adds text keys' texts, its statements prepared once for a batch (their rows are
    /// inserted in the same transaction).
    struct TextRowWriter {
        private let map: Statement
        private let text: Statement

        init(_ conn: Connection, _ id: Int64) throws {
            map = try conn.prepare("INSERT INTO \(textMapTable(id))(docid, n) VALUES (?, ?) RETURNING id")
            text = try conn.prepare("INSERT INTO \(textTable(id))(rowid, text) VALUES (?, ?)")
        }

        func add(docID: String, n: Int64, text t: String) throws {
            map.bind(1, docID).bind(2, n)
            let rowid: Int64
            do {
                defer { map.reset() }
                guard try map.step() else { throw CBLError.internalError("a text key was not recorded") }
                rowid = map.int(0)
            }
            text.bind(1, rowid).bind(2, t)
            try text.run()
        }
    }

    /// Reads a document's texts (by emit number), for comparing its rows with new ones;
    /// nil when the view has no text tables.
    struct TextReader {
        private let select: Statement

        init?(_ conn: Connection, _ id: Int64) throws {
            guard try ViewStorage.hasTextTables(conn, id) else { return nil }
            select = try conn.prepare("SELECT m.n, x.text FROM \(textMapTable(id)) m JOIN \(textTable(id)) x ON x.rowid = m.id WHERE m.docid=?")
        }

        func texts(docID: String) throws -> [Int64: String] {
            select.bind(1, docID)
            defer { select.reset() }
            var out: [Int64: String] = [:]
            while try select.step() { out[select.int(0)] = select.string(1) ?? "" }
            return out
        }
    }

    // MARK: full-text queries

    /// One text key matching a full-text query: its row's document ID, emit number and
    /// stored form (IndexRow), its text, BM25 score (higher is better), where it matched
    /// (cblite_matches' "term start length" triples) and its snippet when asked for.
    struct TextMatch {
        let docID: String
        let n: Int64
        let row: [UInt8]
        let score: Double
        let text: String
        let matches: String
        let snippet: String?
    }

    /// Where a page of matches ended (the next page starts after it).
    struct TextCursor {
        let score: Double
        let docID: String
        let n: Int64
    }

    /// A page of at most `limit` text keys matching an FTS5 query, from after `after`:
    /// best first when `ranked` (ties in index order), else in index order (document ID,
    /// emit number); `descending` reverses either. nil when the view has no text tables.
    static func textSearchPage(_ conn: Connection, _ id: Int64, match: String, ranked: Bool, descending: Bool,
                               after: TextCursor?, limit: Int, snippet: FullTextSnippetStyle?) throws -> [TextMatch]? {
        guard try hasTextTables(conn, id) else { return nil }
        let x = textTable(id), m = textMapTable(id), t = table(id)
        let score = "-bm25(\(x))"
        let snippets = snippet == nil ? "" : ", snippet(\(x), 0, ?2, ?3, ?4, ?5)"
        var sql = "SELECT m.docid, m.n, v.row, \(score), x.text, cblite_matches(\(x))\(snippets) FROM \(x) x"
            + " JOIN \(m) m ON m.id = x.rowid JOIN \(t) v ON v.key = ?6 AND v.docid = m.docid AND v.n = m.n"
            + " WHERE \(x) MATCH ?1"
        // Index order within equal scores; `descending` flips every comparison.
        let (later, dir) = descending ? ("<", "DESC") : (">", "ASC")
        let (worse, scoreDir) = descending ? (">", "ASC") : ("<", "DESC")
        if after != nil {
            sql += ranked ? " AND (\(score) \(worse) ?7 OR (\(score) = ?7 AND (m.docid, m.n) \(later) (?8, ?9)))"
                          : " AND (m.docid, m.n) \(later) (?8, ?9)"
        }
        sql += ranked ? " ORDER BY \(score) \(scoreDir), m.docid \(dir), m.n \(dir)" : " ORDER BY m.docid \(dir), m.n \(dir)"
        sql += " LIMIT ?10"
        let s = try conn.prepare(sql)
        defer { s.reset() }
        s.bind(1, match)
        if let snippet {
            s.bind(2, snippet.open).bind(3, snippet.close).bind(4, snippet.ellipsis).bind(5, Int64(snippet.tokens))
        }
        s.bindBlob(6, textRowKey)
        if let after {
            if ranked { sqlite3_bind_double(s.handle, 7, after.score) }
            s.bind(8, after.docID).bind(9, after.n)
        }
        s.bind(10, Int64(limit))
        var out: [TextMatch] = []
        while try s.step() {
            out.append(TextMatch(docID: s.string(0) ?? "", n: s.int(1), row: s.bytes(2) ?? [],
                                 score: sqlite3_column_double(s.handle, 3), text: s.string(4) ?? "",
                                 matches: s.string(5) ?? "", snippet: snippet == nil ? nil : s.string(6)))
        }
        return out
    }
}

private extension String {
    func leftPadded(_ n: Int) -> String { String(repeating: "0", count: max(0, n - count)) + self }
}
