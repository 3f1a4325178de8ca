/// What a write transaction accumulates until commit: the collections' counters (written
/// once at commit instead of once per save) and the changes to notify.
final class TransactionState {
    private(set) var metas: [Int64: CollectionMeta] = [:]
    var changes: [ChangeEvent] = []
    /// Attachment files put in this transaction: synced and installed by the commit
    /// before COMMIT, deleted by a rollback (Blobs/PendingBlobs.swift).
    var pendingBlobs: PendingBlobs?

    struct Snapshot { let metas: [Int64: CollectionMeta]; let changeCount: Int }

    func snapshot() -> Snapshot { Snapshot(metas: metas, changeCount: changes.count) }

    func restore(_ s: Snapshot) {
        metas = s.metas
        changes.removeSubrange(s.changeCount...)
    }

    func meta(_ id: Int64, _ conn: Connection) throws -> CollectionMeta {
        if let m = metas[id] { return m }
        let m = try CollectionMeta.load(id, conn)
        metas[id] = m
        return m
    }

    /// Allocates the next sequence of a collection and adjusts its document count.
    func nextSequence(_ id: Int64, countDelta: Int64, _ conn: Connection) throws -> Int64 {
        var m = try meta(id, conn)
        m.lastSeq += 1
        m.docCount += countDelta
        metas[id] = m
        return m.lastSeq
    }

    func adjustCount(_ id: Int64, by delta: Int64, _ conn: Connection) throws {
        guard delta != 0 else { return }
        var m = try meta(id, conn)
        m.docCount += delta
        metas[id] = m
    }

    func forget(_ id: Int64) { metas[id] = nil }

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
        guard !metas.isEmpty else { return }
        let s = try conn.prepare(TransactionState.flushSQL)
        for (id, m) in metas {
            s.bind(1, m.lastSeq).bind(2, m.docCount).bind(3, id)
            try s.run()
        }
    }
}
