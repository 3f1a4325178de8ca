/// Brings a full-text index up to date with its collection, as IndexUpdater does a view's:
/// documents changed since the last indexed sequence are read a chunk at a time (MapChunk)
/// and their texts extracted outside any lock, then one write transaction per chunk
/// replaces their rows — a deleted document's row goes, a changed one's is rewritten.
/// Concurrent updaters of one index each check, in their transaction, that no one else
/// moved it on; documents changed or purged since they were read are left to a later chunk.
struct FullTextUpdater {
    let collection: Collection
    let source: FullTextSource

    /// Updates the index; returns its state, current with the collection's last sequence
    /// as this update found it.
    @discardableResult
    func run() throws -> FullTextStorage.State {
        let store = collection.store, collID = collection.id
        let timeout = collection.database.busyTimeoutMs
        // The index's state and the collection's counters in one read: an index found
        // current (most searches) costs that read alone.
        var (state, known): (FullTextStorage.State?, CollectionMeta?) = try store.read { conn in
            (try FullTextStorage.load(conn, collectionID: collID, name: source.name), try store.collectionMeta(collID, reading: conn))
        }
        if state == nil || state!.version != FullTextStorage.storedVersion(source) {
            state = try store.write(timeoutMs: timeout) { conn, _ in
                try FullTextStorage.ensure(conn, collectionID: collID, source: source)
            }
        }
        var st = state!
        var restarts = 0
        var spare: MapChunk? = nil
        // A build from an empty index: documents at or below this sequence (the
        // collection's last when it began) have no rows yet, as long as every chunk since
        // was written by this update — nothing to look up or remove for them.
        var freshThrough: Int64? = nil
        while true {
            let meta = try known ?? store.collectionMeta(collID)
            known = nil
            if meta.lastSeq <= st.lastSeq { return st }
            let from = st.lastSeq
            if from == 0 { freshThrough = meta.lastSeq }
            let fresh = freshThrough ?? 0
            if spare != nil && !isKnownUniquelyReferenced(&spare!) { spare = nil }
            let reusable = spare
            spare = nil
            let chunk = try store.read { conn in
                try MapChunk.read(conn, docStore: collection.docStore, from: from, to: meta.lastSeq,
                                  limit: View.chunkSize, reusing: reusable)
            }
            defer { spare = chunk }
            // (sequence, ID, row: nil when the document leaves the index)
            var docs: [(Int64, String, FullTextRow?)] = []
            docs.reserveCapacity(chunk.entries.count)
            for e in chunk.entries {
                let id = String(decoding: chunk.bytes(e.id), as: UTF8.self)
                var row: FullTextRow? = nil
                if e.mapped, let r = try source.extractRow(MapDocument(chunk, e)), !r.isEmpty { row = r }
                docs.append((e.sequence, id, row))
            }
            let upTo = chunk.entries.count < View.chunkSize ? meta.lastSeq : chunk.entries.last!.sequence
            let written: FullTextStorage.State? = try store.write(timeoutMs: timeout) { conn, _ in
                guard var now = try FullTextStorage.load(conn, collectionID: collID, name: source.name),
                      now.version == FullTextStorage.storedVersion(source), now.lastSeq == from else { return nil }
                // Nothing saved or purged since the read (a save takes a new sequence, a
                // purge lowers the live count): the documents read are still current.
                let unchanged = try store.collectionMeta(collID) == meta
                let rows = try FullTextStorage.RowWriter(conn, now.id, columns: source.columns.count)
                for (seq, id, row) in docs {
                    if !unchanged {
                        let current = try collection.docStore.summary(conn, docID: id)?.sequence
                        if current != nil && current != seq { continue }     // changed: a later chunk has it
                        if current == nil {                                  // purged
                            try FullTextStorage.removeDocument(conn, now.id, docID: id)
                            continue
                        }
                    }
                    if seq > fresh { try FullTextStorage.removeDocument(conn, now.id, docID: id) }
                    if let row { try rows.add(sequence: seq, docID: id, row: row) }
                }
                now.lastSeq = upTo
                try FullTextStorage.save(conn, now)
                return now
            }
            if let written {
                st = written
            } else {
                restarts += 1
                freshThrough = nil
                if restarts > 100 { throw CBLError(.busy, "full-text index \"\(source.name)\" keeps being re-indexed concurrently") }
                st = try store.write(timeoutMs: timeout) { conn, _ in
                    try FullTextStorage.ensure(conn, collectionID: collID, source: source)
                }
            }
        }
    }
}
