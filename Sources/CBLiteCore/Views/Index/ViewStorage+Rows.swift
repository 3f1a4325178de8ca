import CSQLCipher

/// The index updater's writes to a view's rows and per-key counts (see ViewStorage).
extension ViewStorage {
    /// One document's rows in a view's table, for a batch's write transaction: the
    /// statements are prepared once a batch and serve each of its documents.
    struct DocumentRows {
        private let old: Statement
        private let del: Statement
        /// The view's text keys, when it has any (their texts are part of the rows compared).
        private let texts: TextReader?

        init(_ conn: Connection, _ id: Int64) throws {
            let t = ViewStorage.table(id)
            old = try conn.prepare("SELECT key, row, n FROM \(t) WHERE docid=? ORDER BY n")
            del = try conn.prepare("DELETE FROM \(t) WHERE docid=?")
            texts = try TextReader(conn, id)
        }

        /// The document's rows, in emit order.
        func read(docID: String) throws -> [EmittedRow] {
            var rows: [EmittedRow] = []
            var numbers: [Int64] = []
            old.bind(1, docID)
            do {
                defer { old.reset() }
                while try old.step() {
                    let stored = try IndexRow.read(old.borrowedNonEmpty(1))
                    rows.append(EmittedRow(key: old.bytes(0) ?? [], keyJSON: try stored.keyJSONBytes(key: old.borrowedBytes(0)),
                                           value: stored.value.map { Array($0) }))
                    numbers.append(old.int(2))
                }
            }
            if let texts, !rows.isEmpty {
                let byNumber = try texts.texts(docID: docID)
                if !byNumber.isEmpty {
                    for i in rows.indices { rows[i].text = byNumber[numbers[i]] }
                }
            }
            return rows
        }

        /// Deletes the document's rows (their counts follow, by the trigger).
        func delete(docID: String) throws {
            del.bind(1, docID)
            try del.run()
        }
    }

    /// Inserts rows into a view's table a slice at a time, each slice in one
    /// INSERT ... SELECT over cblite_index_rows (the statement is prepared once a batch).
    /// `allNew`: none of the rows' documents has rows in the table, so no row can conflict
    /// with the primary key, and REPLACE lets SQLite skip looking for a conflict (a seek a
    /// row) when the table has no other index, as during a build (the document-ID index is
    /// made at its end).
    struct RowInserter {
        private let insert: Statement

        init(_ conn: Connection, _ id: Int64, allNew: Bool) throws {
            insert = try conn.prepare("INSERT \(allNew ? "OR REPLACE " : "")INTO \(ViewStorage.table(id))(key, docid, n, row) SELECT key, docid, n, row FROM cblite_index_rows(?)")
        }

        func insert(_ rows: UnsafePointer<cblite_index_rows>) throws {
            insert.bindIndexRows(1, rows)
            try insert.run()
        }
    }

    /// Adds `n` rows of `key` to the counts (`row`: one of their row blobs).
    static func addCount(_ conn: Connection, _ id: Int64, key: UnsafeBufferPointer<UInt8>, n: Int,
                         row: UnsafeBufferPointer<UInt8>) throws {
        let s = try conn.prepare("INSERT INTO \(countsTable(id))(key, n, row) VALUES (?, ?, ?) "
                                 + "ON CONFLICT(key) DO UPDATE SET n = n + excluded.n")
        defer { s.reset() }
        s.bindBorrowedBlob(1, key).bind(2, Int64(n)).bindBorrowedBlob(3, row)
        try s.run()
    }
}
