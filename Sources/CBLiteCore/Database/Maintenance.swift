/// Database maintenance: compaction, statistics, integrity checks.
extension Database {
    /// Drops bodies of non-leaf revisions, purges expired documents, and shrinks the
    /// file. Not allowed inside a transaction (406).
    public func compact() throws {
        try checkOpen()
        if store.transactionDepth > 0 { throw CBLError(.notAcceptable, "cannot compact inside a transaction") }
        try purgeExpired()
        for id in try allCollectionIDs() {
            let docStore = DocumentStore(collectionID: id)
            try store.write(timeoutMs: busyTimeoutMs) { conn, _ in
                var updates: [(String, [UInt8]?)] = []
                try docStore.forEachRow(conn, .withTrees) { row in
                    var (tree, current) = try row.tree()
                    if tree.dropAncestorBodies() > 0 { updates.append((row.docID, tree.encode(omitBodyOf: current))) }
                }
                for (docID, encoded) in updates { try docStore.setTree(conn, docID: docID, tree: encoded) }
            }
        }
        try deleteOrphanedAttachments()      // Blobs/: files no kept revision refers to
        try rewriteFile()
        Loggers.database.info("compacted \(name)")
    }

    /// Rewrites the file compactly (SQLite's VACUUM, the write-ahead log folded in before
    /// and after): every table, view indexes included, packed into the fewest pages, free
    /// pages given back. Nothing stored changes. 406 in a transaction.
    public func rewriteFile() throws {
        try checkOpen()
        if store.transactionDepth > 0 { throw CBLError(.notAcceptable, "cannot compact inside a transaction") }
        // The checkpointer's thread stops meanwhile: a passive checkpoint of its running
        // would make these ones give up (SQLite lets one checkpoint run at a time), leaving
        // the rewritten pages in the log and the file unshrunk.
        try store.exclusive(timeoutMs: busyTimeoutMs) { conn in try store.withCheckpointsStopped {
            try conn.exec("PRAGMA wal_checkpoint(TRUNCATE)")
            try conn.exec("VACUUM")
            try conn.exec("PRAGMA wal_checkpoint(TRUNCATE)")
        } }
    }

    /// Rebuilds every SQL index from its table (SQLite's REINDEX): repairs an index an
    /// integrity check reports, and re-sorts after a collation change. 406 in a transaction.
    public func reindex() throws {
        try checkOpen()
        try store.exclusive(timeoutMs: busyTimeoutMs) { conn in try conn.exec("REINDEX") }
        Loggers.database.info("reindexed \(name)")
    }

    /// Refreshes the query planner's statistics.
    public func optimize() throws {
        try checkOpen()
        try store.write(timeoutMs: busyTimeoutMs) { conn, _ in try conn.exec("PRAGMA optimize=0x10002") }
    }

    /// SQLite's integrity check plus the engine's: revision trees valid, the row's current
    /// revision is the tree's winner, counters and sequences consistent. Empty = sound.
    /// The integrity check as the C ABI reports it: the problems, and a 500 naming the
    /// first when there are any (a damaged database is an error, not a result).
    public func integrityReport() -> (problems: [String], error: CBLError?) {
        do {
            let problems = try integrityCheck()
            guard let first = problems.first else { return (problems, nil) }
            return (problems, CBLError.internalError("integrity check found \(problems.count) problem(s); first: \(first)"))
        } catch {
            return ([], CBLError.wrapping(error))
        }
    }

    public func integrityCheck() throws -> [String] {
        try checkOpen()
        var problems: [String] = []
        try store.read { conn in
            let s = try conn.prepareUncached("PRAGMA integrity_check")
            while try s.step() {
                let line = s.string(0) ?? ""
                if line != "ok" { problems.append("sqlite: \(line)") }
            }
        }
        for id in try allCollectionIDs() {
            try store.read { conn in
                let meta = try CollectionMeta.load(id, conn)
                var live: Int64 = 0
                var maxSeq: Int64 = 0
                let damaged = { (docID: String, _: CBLError) in problems.append("\(docID): invalid revision ID") }
                try DocumentStore(collectionID: id).forEachRow(conn, .all, damaged: damaged) { row in
                    let docID = row.docID, flags = row.flags, rev = row.revID
                    maxSeq = max(maxSeq, row.sequence)
                    if !flags.contains(.deleted) { live += 1 }
                    do {
                        let (tree, current) = try row.tree()
                        problems += tree.validate().map { "\(docID): \($0)" }
                        if tree.winner != current { problems.append("\(docID): current revision \(rev) is not the winner") }
                        if tree.nodes[current].deleted != flags.contains(.deleted) { problems.append("\(docID): deleted flag disagrees with the tree") }
                    } catch let e as CBLError {
                        problems.append("\(docID): \(e.message)")
                    }
                }
                if live != meta.docCount { problems.append("collection \(id): document count \(meta.docCount) but \(live) live documents") }
                if maxSeq > meta.lastSeq { problems.append("collection \(id): sequence \(maxSeq) above last sequence \(meta.lastSeq)") }
            }
        }
        return problems
    }
}
