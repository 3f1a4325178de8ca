/// Database maintenance: compaction, statistics, integrity checks.
extension Database {
    /// Drops bodies of non-leaf revisions, purges expired documents, and shrinks the
    /// file. Not allowed inside a transaction (406).
    public func compact() throws {
        try checkOpen()
        if store.transactionDepth > 0 { throw CBLError(.notAcceptable, "cannot compact inside a transaction") }
        try purgeExpired()
        for id in try allCollectionIDs() {
            let table = Schema.docTable(id)
            try store.write(timeoutMs: busyTimeoutMs) { conn, _ in
                let s = try conn.prepare("SELECT docid, flags, revid, body, revtree FROM \(table) WHERE revtree IS NOT NULL")
                var updates: [(String, [UInt8]?)] = []
                while try s.step() {
                    guard let rev = RevID(s.string(2) ?? "") else { continue }
                    var (tree, current) = try RevTree.decode(s.bytes(4), current: rev,
                                                             currentDeleted: DocFlags(rawValue: s.int(1)).contains(.deleted),
                                                             currentBody: s.bytes(3))
                    if tree.dropAncestorBodies() > 0 { updates.append((s.string(0) ?? "", tree.encode(omitBodyOf: current))) }
                }
                s.reset()
                let u = try conn.prepare("UPDATE \(table) SET revtree=? WHERE docid=?")
                for (docID, encoded) in updates {
                    u.bindBlob(1, encoded).bind(2, docID)
                    try u.run()
                }
            }
        }
        try deleteOrphanedAttachments()      // Blobs/: files no kept revision refers to
        try store.exclusive(timeoutMs: busyTimeoutMs) { conn in
            try conn.exec("PRAGMA wal_checkpoint(TRUNCATE)")
            try conn.exec("VACUUM")
            try conn.exec("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        Loggers.database.info("compacted \(name)")
    }

    /// Refreshes the query planner's statistics.
    public func optimize() throws {
        try checkOpen()
        try store.write(timeoutMs: busyTimeoutMs) { conn, _ in try conn.exec("PRAGMA optimize=0x10002") }
    }

    /// SQLite's integrity check plus the engine's: revision trees valid, the row's current
    /// revision is the tree's winner, counters and sequences consistent. Empty = sound.
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
            let table = Schema.docTable(id)
            try store.read { conn in
                let meta = try CollectionMeta.load(id, conn)
                let s = try conn.prepareUncached("SELECT docid, sequence, flags, revid, body, revtree FROM \(table)")
                var live: Int64 = 0
                var maxSeq: Int64 = 0
                while try s.step() {
                    let docID = s.string(0) ?? ""
                    let flags = DocFlags(rawValue: s.int(2))
                    maxSeq = max(maxSeq, s.int(1))
                    if !flags.contains(.deleted) { live += 1 }
                    guard let rev = RevID(s.string(3) ?? "") else { problems.append("\(docID): invalid revision ID"); continue }
                    do {
                        let (tree, current) = try RevTree.decode(s.bytes(5), current: rev, currentDeleted: flags.contains(.deleted), currentBody: s.bytes(4))
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
