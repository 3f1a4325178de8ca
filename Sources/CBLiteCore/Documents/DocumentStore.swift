/// The one owner of a collection's document table, `docs_<collection id>`:
/// its row format and every SQL statement on it. The rest of the engine reads and
/// writes documents through here, so a change to the row format is made in one file.
///
/// A row: `sequence` (the rowid: unique and increasing per collection, so the changes
/// feed is a range scan), `docid` (unique), `flags` (DocFlags), `revid` (the current,
/// winning revision), `body` (its canonical JSON, metadata removed), `revtree` (the
/// RevTree encoding of the other revisions; NULL for a single revision), `expiration`
/// (unix seconds or NULL). Statements are cached per connection by their text.
struct DocumentStore {
    let table: String
    /// The texts of the per-document statements, made once: building them by
    /// interpolation on every call cost ~7,000 instructions an update (callgrind), and
    /// their numbers spare hashing the text on every lookup (SQLText).
    private let sql: SQL

    init(collectionID: Int64) {
        table = Schema.docTable(collectionID)
        sql = SQL(table)
    }

    private struct SQL {
        let row, current, summary, insertFirst, update, appendOnCurrent, insert, setTree, delete, setExpiration, expiration: SQLText
        let designSequences, designRows: SQLText
        init(_ t: String) {
            row = SQLText("SELECT docid, sequence, flags, revid, body, revtree FROM \(t) WHERE docid=?")
            current = SQLText("SELECT sequence, flags, revid, body FROM \(t) WHERE docid=?")
            summary = SQLText("SELECT sequence, flags, revid FROM \(t) WHERE docid=?")
            insertFirst = SQLText("INSERT INTO \(t)(docid, sequence, flags, revid, body) VALUES (?,?,?,?,?)")
            update = SQLText("UPDATE \(t) SET sequence=?, flags=?, revid=?, body=?, revtree=? WHERE sequence=?")
            // The old row's values in SET: its tree, current revision and body.
            appendOnCurrent = SQLText("UPDATE \(t) SET sequence=?1, revid=?2, body=?3, "
                + "revtree=\(RevTreeAppendFunction.name)(revtree, revid, body, ?2, ?4) "
                + "WHERE docid=?5 AND revid=?6 AND (flags & \(DocFlags.deleted.rawValue | DocFlags.hasAttachments.rawValue)) = 0")
            insert = SQLText("INSERT INTO \(t)(docid, sequence, flags, revid, body, revtree) VALUES (?,?,?,?,?,?)")
            setTree = SQLText("UPDATE \(t) SET revtree=? WHERE docid=?")
            delete = SQLText("DELETE FROM \(t) WHERE docid=?")
            setExpiration = SQLText("UPDATE \(t) SET expiration=? WHERE docid=?")
            expiration = SQLText("SELECT expiration FROM \(t) WHERE docid=?")
            // The ID range "_design/"…"_design0" (exclusive): every design document.
            let designRange = "docid >= '_design/' AND docid < '_design0' ORDER BY docid"
            designSequences = SQLText("SELECT sequence FROM \(t) WHERE " + designRange)
            designRows = SQLText("SELECT docid, sequence, flags, revid, body FROM \(t) WHERE " + designRange)
        }
    }

    // MARK: one document

    /// The whole row, or nil when the document does not exist (purged or never saved).
    func row(_ conn: Connection, docID: String) throws -> DocumentRow? {
        let s = try conn.prepare(sql.row)
        defer { s.reset() }
        s.bind(1, docID)
        return try s.step() ? try DocumentRow(s) : nil
    }

    /// The current revision without the tree (a plain read): `read` gets the statement
    /// positioned on columns 0 sequence, 1 flags, 2 revid, 3 body. nil when absent.
    func current<T>(_ conn: Connection, docID: String, _ read: (Statement) throws -> T) throws -> T? {
        try conn.prepare(sql.current).withBoundText(1, docID) { s in try s.step() ? try read(s) : nil }
    }

    /// For another table's query: a LEFT JOIN of each of its rows to the document whose
    /// current revision is at the sequence `sequence` names (an SQL expression over that
    /// table's columns) — a view index's rows read with their documents in the scan's own
    /// statement, a rowid lookup each, instead of a second statement reading a page's
    /// documents by a list of sequences (bench_mango's range find: 79.4 M instructions
    /// then, 73.9 M). The columns it adds: the document's ID (NULL when no row is at that
    /// sequence), flags, revid, body. Whether the joined row is the live document the caller
    /// wants — its ID the one expected, not `deletedFlags` — is for the reader to test on
    /// the columns it reads anyway (cblite_copy_scan_rows): as conditions of the join they
    /// cost a few VDBE opcodes a row more. The table's columns are renamed in a subquery
    /// (SQLite flattens it), so that the other table's names (`docid`) stay unambiguous.
    struct LiveJoin: Equatable {
        let columns: String
        let clause: String
        let deletedFlags: Int64
    }

    func liveJoin(sequence: String) -> LiveJoin {
        LiveJoin(columns: "doc_docid, doc_flags, doc_revid, doc_body",
                 clause: "LEFT JOIN (SELECT sequence AS doc_sequence, docid AS doc_docid, flags AS doc_flags, "
                    + "revid AS doc_revid, body AS doc_body FROM \(table)) ON doc_sequence = \(sequence)",
                 deletedFlags: DocFlags.deleted.rawValue)
    }

    /// Sequence, flags and current revision, or nil when absent.
    func summary(_ conn: Connection, docID: String) throws -> (sequence: Int64, flags: DocFlags, revID: String)? {
        let s = try conn.prepare(sql.summary)
        defer { s.reset() }
        s.bind(1, docID)
        return try s.step() ? (s.int(0), DocFlags(rawValue: s.int(1)), s.string(2) ?? "") : nil
    }

    /// Creates a document of one revision. Throws 409 when the ID exists (SQLite's
    /// UNIQUE constraint), which the save path turns into an update.
    func insertFirst(_ conn: Connection, docID: String, sequence: Int64, flags: DocFlags, revID: RevID, body: [UInt8]) throws {
        let s = try conn.prepare(sql.insertFirst)
        var id = docID, rev = revID.string
        try id.withUTF8 { id in try rev.withUTF8 { rev in try body.withUnsafeBufferPointer { body in
            s.bindBorrowedText(1, id).bind(2, sequence).bind(3, flags.rawValue).bindBorrowedText(4, rev).bindBorrowedText(5, body)
            try s.run()                 // resets: the borrowed bytes are no longer used
        } } }
    }

    /// Writes the document's new state under a new sequence: an update of the existing
    /// row, found by its current sequence (`replacing`: a rowid lookup, where the document
    /// ID would cost a search of its index; callgrind), or an insert.
    func write(_ conn: Connection, docID: String, replacing oldSequence: Int64?, sequence: Int64, flags: DocFlags,
               revID: RevID, body: [UInt8]?, tree: [UInt8]?) throws {
        if let oldSequence {
            let s = try conn.prepare(sql.update)
            s.bind(1, sequence).bind(2, flags.rawValue).bind(3, revID.string).bindText(4, body).bindBlob(5, tree).bind(6, oldSequence)
            try s.run()
            guard conn.changes == 1 else {
                throw CBLError.internalError("the row of \"\(docID)\" is no longer at sequence \(oldSequence)")
            }
        } else {
            let s = try conn.prepare(sql.insert)
            s.bind(1, docID).bind(2, sequence).bind(3, flags.rawValue).bind(4, revID.string).bindText(5, body).bindBlob(6, tree)
            try s.run()
        }
    }

    /// Saves `revID`, an undeleted child of `parent` without attachments, when `parent` is
    /// the current revision of a live document without attachments, in one statement: the
    /// row is moved to `sequence` and its tree extended where SQLite reads the row
    /// (RevTreeAppendFunction), so it is not read first. The flags stay: the new revision
    /// is the winner, and the undeleted leaves, so the conflict flag, are as they were.
    /// false when no row is in that state (the general save path finds out why).
    func appendOnCurrent(_ conn: Connection, docID: String, parent: RevID, revID: RevID, body: [UInt8],
                         sequence: Int64, maxDepth: Int) throws -> Bool {
        let s = try conn.prepare(sql.appendOnCurrent)
        var id = docID, rev = revID.string, par = parent.string
        try id.withUTF8 { id in try rev.withUTF8 { rev in try par.withUTF8 { par in try body.withUnsafeBufferPointer { body in
            s.bind(1, sequence).bindBorrowedText(2, rev).bindBorrowedText(3, body).bind(4, Int64(maxDepth))
                .bindBorrowedText(5, id).bindBorrowedText(6, par)
            try s.run()                 // resets: the borrowed bytes are no longer used
        } } } }
        return conn.changes == 1
    }

    /// Replaces the encoded tree only (compaction drops ancestor bodies; the sequence
    /// stays, since no revision changed).
    func setTree(_ conn: Connection, docID: String, tree: [UInt8]?) throws {
        let s = try conn.prepare(sql.setTree)
        s.bindBlob(1, tree).bind(2, docID)
        try s.run()
    }

    func delete(_ conn: Connection, docID: String) throws {
        let s = try conn.prepare(sql.delete)
        s.bind(1, docID)
        try s.run()
    }

    // MARK: design documents

    /// The sequences of the design documents' rows (deleted ones too), in ID order: every
    /// write, deletion or purge of one changes them (a write moves its row to a new
    /// sequence, and sequences are not reused), so they stamp the design documents' state
    /// (DesignDocumentCache). Read from the document-ID index alone.
    func designSequences(_ conn: Connection) throws -> [Int64] {
        let s = try conn.prepare(sql.designSequences)
        defer { s.reset() }
        var out: [Int64] = []
        while try s.step() { out.append(s.int(0)) }
        return out
    }

    /// Every design document's row (deleted ones too), in ID order: `read` gets the
    /// statement on each, columns 0 docid, 1 sequence, 2 flags, 3 revid, 4 body.
    func designRows(_ conn: Connection, _ read: (Statement) throws -> Void) throws {
        let s = try conn.prepare(sql.designRows)
        defer { s.reset() }
        while try s.step() { try read(s) }
    }

    // MARK: expiration

    /// Sets (nil: clears) the expiration; false when the document does not exist.
    func setExpiration(_ conn: Connection, docID: String, unixTime: Int64?) throws -> Bool {
        let s = try conn.prepare(sql.setExpiration)
        s.bind(1, unixTime).bind(2, docID)
        try s.run()
        return conn.changes > 0
    }

    /// .some(nil): the document exists without an expiration; nil: it does not exist.
    func expiration(_ conn: Connection, docID: String) throws -> Int64?? {
        let s = try conn.prepare(sql.expiration)
        defer { s.reset() }
        s.bind(1, docID)
        guard try s.step() else { return nil }
        return .some(s.isNull(0) ? nil : s.int(0))
    }

    func expired(_ conn: Connection, at now: Int64) throws -> [String] {
        let s = try conn.prepare("SELECT docid FROM \(table) WHERE expiration IS NOT NULL AND expiration <= ?")
        defer { s.reset() }
        s.bind(1, now)
        var ids: [String] = []
        while try s.step() { ids.append(s.string(0) ?? "") }
        return ids
    }

    func nextExpiration(_ conn: Connection) throws -> Int64? {
        try conn.queryInt("SELECT min(expiration) FROM \(table) WHERE expiration IS NOT NULL")
    }

    // MARK: scans by sequence

    /// The changes feed: rows after `since`, in sequence order, at most `limit` (negative:
    /// all). Columns: 0 sequence, 1 docid, 2 flags, 3 revid, 4 body (NULL unless
    /// `body`), 5 revtree (NULL unless `tree`). The caller resets the statement.
    func changes(_ conn: Connection, since: Int64, descending: Bool, limit: Int64, body: Bool, tree: Bool) throws -> Statement {
        let cols = "sequence, docid, flags, revid" + (body ? ", body" : ", NULL") + (tree ? ", revtree" : ", NULL")
        let s = try conn.prepare("SELECT \(cols) FROM \(table) WHERE sequence > ? ORDER BY sequence \(descending ? "DESC" : "ASC") LIMIT ?")
        s.bind(1, since).bind(2, limit)
        return s
    }

    /// Rows with a sequence in (after, through], in order, at most `limit` (the view
    /// indexer's batches). Columns: 0 docid, 1 sequence, 2 flags, 3 revid, 4 body.
    func sequenceRange(_ conn: Connection, after: Int64, through: Int64, limit: Int64) throws -> Statement {
        let s = try conn.prepare("SELECT docid, sequence, flags, revid, body FROM \(table) WHERE sequence > ? AND sequence <= ? ORDER BY sequence LIMIT ?")
        s.bind(1, after).bind(2, through).bind(3, limit)
        return s
    }

    func count(_ conn: Connection, after: Int64, through: Int64) throws -> Int64 {
        let s = try conn.prepare("SELECT count(*) FROM \(table) WHERE sequence > ? AND sequence <= ?")
        defer { s.reset() }
        s.bind(1, after).bind(2, through)
        _ = try s.step()
        return s.int(0)
    }

    // MARK: scans by document ID or sequence (all-docs)

    /// What an all-docs scan keeps.
    enum Filter { case all, live, conflicted }
    /// One bound of a scan: `>=`/`>` (lower) or `<=`/`<` (upper) on the ordering column.
    struct Bound { var value: SQLArg; var inclusive: Bool }

    /// Rows ordered by document ID (or by sequence), within the bounds, after `offset`,
    /// at most `limit` (negative: all). Columns: 0 docid, 1 sequence, 2 flags, 3 revid, and
    /// 4 body `withBody` (a scan that reads every document: one statement, not one a document).
    func summaries(_ conn: Connection, bySequence: Bool = false, filter: Filter, lower: Bound?, upper: Bound?,
                   descending: Bool, limit: Int64, offset: Int64 = 0, withBody: Bool = false) throws -> Statement {
        let col = bySequence ? "sequence" : "docid"
        var conds: [String] = []
        var args: [SQLArg] = []
        switch filter {
        case .all: break
        case .live: conds.append("(flags & \(DocFlags.deleted.rawValue)) = 0")
        case .conflicted: conds.append("(flags & \(DocFlags.conflicted.rawValue)) != 0")
        }
        if let lower { conds.append("\(col) \(lower.inclusive ? ">=" : ">") ?"); args.append(lower.value) }
        if let upper { conds.append("\(col) \(upper.inclusive ? "<=" : "<") ?"); args.append(upper.value) }
        let sql = "SELECT docid, sequence, flags, revid\(withBody ? ", body" : "") FROM \(table)"
            + (conds.isEmpty ? "" : " WHERE " + conds.joined(separator: " AND "))
            + " ORDER BY \(col) \(descending ? "DESC" : "ASC") LIMIT ? OFFSET ?"
        let s = try conn.prepare(sql)
        for (i, a) in args.enumerated() { a.bind(s, Int32(i + 1)) }
        s.bind(Int32(args.count + 1), limit).bind(Int32(args.count + 2), max(0, offset))
        return s
    }

    /// How many rows passing `filter` come before `bound` in `descending` (or ascending)
    /// order: where a range query starts, counted (CouchDB's `offset`).
    func count(_ conn: Connection, bySequence: Bool = false, filter: Filter, before bound: Bound, descending: Bool) throws -> Int64 {
        let col = bySequence ? "sequence" : "docid"
        var conds: [String] = []
        switch filter {
        case .all: break
        case .live: conds.append("(flags & \(DocFlags.deleted.rawValue)) = 0")
        case .conflicted: conds.append("(flags & \(DocFlags.conflicted.rawValue)) != 0")
        }
        // Before an inclusive bound: strictly beyond it; before an exclusive one: up to it.
        conds.append("\(col) \(descending ? ">" : "<")\(bound.inclusive ? "" : "=") ?")
        let s = try conn.prepare("SELECT count(*) FROM \(table) WHERE " + conds.joined(separator: " AND "))
        defer { s.reset() }
        bound.value.bind(s, 1)
        return try s.step() ? s.int(0) : 0
    }

    // MARK: whole-table scans (maintenance)

    /// Every stored document: live ones and tombstones (purged ones are gone). SQLite
    /// counts the entries of the smallest index (docid's), so the cost grows with the table.
    func storedCount(_ conn: Connection) throws -> Int64 {
        try conn.queryInt("SELECT count(*) FROM \(table)") ?? 0
    }

    /// Which rows a maintenance scan visits.
    enum Rows { case all, withTrees, withAttachments }

    /// Visits rows as DocumentRows; uncached statements (maintenance runs rarely). A row
    /// that cannot be read goes to `damaged` (the integrity check reports it and goes
    /// on) or, without one, ends the scan with its error.
    func forEachRow(_ conn: Connection, _ which: Rows, damaged: ((String, CBLError) -> Void)? = nil,
                    _ visit: (DocumentRow) throws -> Void) throws {
        let condition: String
        switch which {
        case .all: condition = ""
        case .withTrees: condition = " WHERE revtree IS NOT NULL"
        case .withAttachments: condition = " WHERE (flags & \(DocFlags.hasAttachments.rawValue)) != 0"
        }
        let s = try conn.prepareUncached("SELECT docid, sequence, flags, revid, body, revtree FROM \(table)" + condition)
        while try s.step() {
            let row: DocumentRow
            do {
                row = try DocumentRow(s)
            } catch let e as CBLError where damaged != nil {
                damaged?(s.string(0) ?? "", e)
                continue
            }
            try visit(row)
        }
    }
}
