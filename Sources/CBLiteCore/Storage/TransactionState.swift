/// What a write transaction accumulates until commit: the collections' counters (written
/// once at commit instead of once per save) and the changes to notify.
final class TransactionState {
    private var settled: [Int64: CollectionMeta] = [:]
    /// The collection saved to last, kept out of the dictionary: every save reads and
    /// advances its counters, and hashing the key 3 times a save cost ~550 instructions
    /// (callgrind). When set, it is newer than `settled`'s entry.
    private var recent: (id: Int64, meta: CollectionMeta)?
    var changes: [ChangeEvent] = []
    /// Set when a design document was written in this transaction: it does not fill the
    /// cache of validate_doc_update functions (JavaScript/DesignValidation.swift).
    var designDocumentsChanged = false
    /// Attachment files put in this transaction: synced and installed by the commit
    /// before COMMIT, deleted by a rollback (Blobs/PendingBlobs.swift).
    var pendingBlobs: PendingBlobs?
    /// Set when SQLite rolled the whole transaction back by itself (an I/O error or a full
    /// disk while writing a page out mid-transaction; SQLite's "automatic rollback"): the
    /// operations done in it are gone, and later statements would each commit alone.
    /// Every later operation and the commit fail with it, until the caller aborts.
    var lostTo: CBLError?

    /// Every collection's counters touched in this transaction.
    var metas: [Int64: CollectionMeta] {
        var all = settled
        if let recent { all[recent.id] = recent.meta }
        return all
    }

    struct Snapshot { let metas: [Int64: CollectionMeta]; let changeCount: Int }

    func snapshot() -> Snapshot { Snapshot(metas: metas, changeCount: changes.count) }

    func restore(_ s: Snapshot) {
        settled = s.metas
        recent = nil
        changes.removeSubrange(s.changeCount...)
    }

    func meta(_ id: Int64, _ conn: Connection) throws -> CollectionMeta {
        if let recent, recent.id == id { return recent.meta }
        if let recent { settled[recent.id] = recent.meta }
        let m = try settled[id] ?? CollectionMeta.load(id, conn)
        recent = (id, m)
        return m
    }

    /// Allocates the next sequence of a collection and adjusts its document count.
    func nextSequence(_ id: Int64, countDelta: Int64, _ conn: Connection) throws -> Int64 {
        var m = try meta(id, conn)
        m.lastSeq += 1
        m.docCount += countDelta
        recent = (id, m)
        return m.lastSeq
    }

    func adjustCount(_ id: Int64, by delta: Int64, _ conn: Connection) throws {
        guard delta != 0 else { return }
        var m = try meta(id, conn)
        m.docCount += delta
        recent = (id, m)
    }

    func forget(_ id: Int64) {
        settled[id] = nil
        if recent?.id == id { recent = nil }
    }

    private var maxDepthValue: Int?

    func resetMaxDepth() { maxDepthValue = nil }

    /// maxRevTreeDepth, read once per transaction (another process may have changed it).
    func maxDepth(_ conn: Connection) throws -> Int {
        if let d = maxDepthValue { return d }
        let d = Int(try conn.queryInt("SELECT value FROM info WHERE key='max_rev_tree_depth'") ?? 20)
        maxDepthValue = d
        return d
    }

    private static let flushSQL = SQLText("UPDATE collections SET last_seq=?, doc_count=? WHERE id=?")

    func flushCollectionMeta(_ conn: Connection) throws {
        let all = metas
        guard !all.isEmpty else { return }
        let s = try conn.prepare(TransactionState.flushSQL)
        for (id, m) in all {
            s.bind(1, m.lastSeq).bind(2, m.docCount).bind(3, id)
            try s.run()
        }
    }
}
