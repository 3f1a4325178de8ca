/// Brings a view's index up to date with its collection: only documents changed since the
/// last indexed sequence are mapped; deleted ones leave the index, updated ones replace
/// their rows. Documents are mapped a chunk at a time outside any lock (unless the caller
/// is inside a transaction) into a batch (MappedBatch), which one write transaction adds to
/// the index. No lock is held while waiting for the database: concurrent updaters of one
/// index each check, in their write transaction, that no one else moved it on.
struct IndexUpdater {
    let view: View
    let map: MapFunction
    /// The map function's version: an index built with another one is emptied and rebuilt.
    let version: String
    /// How text keys are indexed (View.textAnalyzer; part of `version` when not the default).
    let analyzer: FullTextAnalyzer

    /// The index state a query last found current, with the reader connection and its
    /// PRAGMA data_version then: while that connection reports the same data_version,
    /// nothing was committed to the file since (by any connection or process), so the
    /// index is still current and its registry row unchanged. Saves a query the registry
    /// and collection reads (~8,000 instructions) for one data_version read. Kept by the
    /// View (View.currentIndex).
    struct CurrentIndex {
        weak var conn: Connection?
        let dataVersion: Int64
        let version: String
        let state: ViewStorage.State
    }

    private var collection: Collection { view.collection }
    private var store: Store { view.store }
    private var name: String { view.name }

    /// One update: maps and writes batches until the index reaches the collection's end.
    func run() throws -> IndexUpdate {
        let collID = collection.id
        let timeout = collection.database.busyTimeoutMs
        // The index's state and whether the collection moved on since: an index found
        // current (most queries) costs these reads (or only the data_version's), and no batch.
        let (loaded, current) = try store.read { conn -> (ViewStorage.State?, Bool) in
            // Inside a transaction (the writer's own changes do not move its data_version)
            // the registry is read.
            let owned = store.ownedByCurrentThread
            let dataVersion = owned ? nil : try conn.dataVersion()    // before the reads it vouches for
            if let dataVersion, let known = view.currentIndex.withLock({ $0 }), known.conn === conn,
               known.dataVersion == dataVersion, known.version == version {
                return (known.state, true)
            }
            guard let st = try ViewStorage.load(conn, collectionID: collID, name: name), st.version == version else {
                return (nil, false)
            }
            let collLast = try store.collectionMeta(collID, reading: conn).lastSeq
            let current = collLast <= st.lastSeq
            if current, let dataVersion {
                view.currentIndex.withLock { $0 = CurrentIndex(conn: conn, dataVersion: dataVersion, version: version, state: st) }
            }
            return (st, current)
        }
        if let loaded, current {
            return IndexUpdate(generationBefore: loaded.generation, generationAfter: loaded.generation, changedKeys: [],
                               state: loaded)
        }
        var state: ViewStorage.State = try {
            if let loaded { return loaded }
            return try store.write(timeoutMs: timeout) { conn, _ in
                try ViewStorage.ensure(conn, collectionID: collID, name: name, version: version)
            }
        }()
        let before = state.generation
        var changedKeys: [[UInt8]]? = []
        var restarts = 0
        var ownIncrements: Int64 = 0
        // A build from an empty index: documents at or below this sequence (the
        // collection's last when the build started) have no rows in the index yet, as long
        // as every batch since was written by this update. Their rows are appended without
        // looking up old ones, and the document-ID index is made once, at the end.
        var freshThrough: Int64? = nil
        while true {
            let from = state.lastSeq
            let batch = MappedBatch(maxRows: view.maxBatchRows)
            let mapped = try mapBatch(from: from, into: batch)
            let upTo = mapped.upTo
            if upTo <= from { break }
            if from == 0 { freshThrough = mapped.collectionLast }
            var wroteChanges = false
            let fresh = freshThrough
            let result = try store.write(timeoutMs: timeout) { conn, _ in
                try write(batch, from: from, upTo: upTo, freshThrough: fresh, last: mapped.reachedEnd,
                          readMeta: mapped.firstMeta, conn: conn, changedKeys: &changedKeys,
                          changed: &wroteChanges)
            }
            if let result {
                if wroteChanges { ownIncrements += 1 }
                state = result
            } else {
                restarts += 1
                if restarts > 100 { throw CBLError(.busy, "view \"\(name)\" keeps being re-indexed concurrently") }
                changedKeys = nil
                freshThrough = nil
                guard let st = try store.read({ conn in try ViewStorage.load(conn, collectionID: collID, name: name) }),
                      st.version == version else {
                    state = try store.write(timeoutMs: timeout) { conn, _ in
                        try ViewStorage.ensure(conn, collectionID: collID, name: name, version: version)
                    }
                    continue
                }
                state = st
            }
        }
        let after = state.generation
        if after - before != ownIncrements { changedKeys = nil }   // changed by someone else too
        return IndexUpdate(generationBefore: before, generationAfter: after, changedKeys: changedKeys, state: state)
    }

    /// Maps the documents after sequence `from`, chunk by chunk, outside any lock, until the
    /// batch is full or the collection's end is reached. Returns the sequence the batch
    /// covers up to (`from` when there is nothing to index), the collection's last
    /// sequence when mapping began, whether the batch reached the collection's end, and
    /// the collection's counters read before the first chunk (nil: nothing was read).
    private func mapBatch(from: Int64, into batch: MappedBatch) throws
        -> (upTo: Int64, collectionLast: Int64, reachedEnd: Bool, firstMeta: CollectionMeta?) {
        let docStore = collection.docStore
        var upTo = from
        var firstLast: Int64 = from
        var firstMeta: CollectionMeta? = nil
        let emitter = Emitter(batch: batch)
        var spare: MapChunk? = nil
        var scanBytes = 0                          // what the scan reads, about (Connection.scanning)
        while true {
            let meta = try store.collectionMeta(collection.id)
            let collLast = meta.lastSeq
            if collLast <= upTo { return (upTo, max(firstLast, upTo), true, firstMeta) }
            if batch.isFull { return (upTo, firstLast, false, firstMeta) }
            if upTo == from {
                firstLast = collLast
                firstMeta = meta
                batch.reserve(documents: Int(clamping: collLast - from))
                let (bytes, overflow) = Int(clamping: collLast - from).multipliedReportingOverflow(by: View.scanBytesPerDocument)
                scanBytes = overflow ? .max : bytes
            }
            let chunkFrom = upTo
            // The previous chunk's memory, unless a map function kept one of its documents.
            if spare != nil && !isKnownUniquelyReferenced(&spare!) { spare = nil }
            let reusable = spare
            spare = nil
            let chunk = try store.read { conn in
                try conn.scanning(bytes: scanBytes) {
                    try MapChunk.read(conn, docStore: docStore, from: chunkFrom, to: collLast, limit: View.chunkSize,
                                      reusing: reusable)
                }
            }
            defer { spare = chunk }
            for e in chunk.entries {
                batch.beginDocument(id: chunk.bytes(e.id), sequence: e.sequence)
                if e.mapped { try map(MapDocument(chunk, e), emitter) }
            }
            let docs = chunk.entries
            upTo = docs.count < View.chunkSize ? collLast : docs.last!.sequence
        }
    }

    /// Writes a mapped batch covering (from, upTo] (inside the write transaction); nil
    /// when someone else moved the index on meanwhile. Documents at or below
    /// `freshThrough` have no rows in the index (a build from an empty index; see run);
    /// `last`: the batch reaches the collection's end; `readMeta`: the collection's counters
    /// read before its first document was.
    private func write(_ batch: MappedBatch, from: Int64, upTo: Int64, freshThrough: Int64?, last: Bool,
                       readMeta: CollectionMeta?, conn: Connection, changedKeys: inout [[UInt8]]?,
                       changed: inout Bool) throws -> ViewStorage.State? {
        guard var st = try ViewStorage.load(conn, collectionID: collection.id, name: name),
              st.version == version, st.lastSeq == from else { return nil }   // someone else indexed
        let docStore = collection.docStore
        // Documents changed or purged since they were read must not be indexed from that
        // read. Sequences are never reused and a change moves a document above every
        // sequence read, so when the range still holds as many documents as were read,
        // none of them changed; otherwise each is checked. Counting the range reads its
        // whole sequence index: when the collection's last sequence and live count are
        // still those read before the first document, nothing was saved since (a save
        // takes a new sequence) and no live document was purged (purging a tombstone,
        // which left no rows, changes nothing here), so the count is skipped.
        let unchanged = try (readMeta != nil && store.collectionMeta(collection.id) == readMeta)
            || docStore.count(conn, after: from, through: upTo) == batch.docCount
        // A build from an empty index: nothing to look up or replace for documents that
        // were there when it began (batch documents are in sequence order).
        let freshLimit = from == 0 ? Int64.max : (freshThrough ?? 0)
        let allFresh = (batch.lastSequence ?? 0) <= freshLimit
        // The document-ID index serves only lookups of old rows: a build from an empty index
        // drops it and makes it once at its end (CREATE INDEX sorts in bulk, where inserting
        // rows in key order would write it at random); a batch that looks rows up first
        // makes sure it exists (an interrupted build leaves it missing).
        var docIndexMade = false
        if from == 0 {
            try ViewStorage.dropDocIndex(conn, st.id)
        } else if !allFresh {
            try ViewStorage.ensureDocIndex(conn, st.id)
            docIndexMade = true
        }
        if changedKeys != nil && unchanged {
            // Every row of a fresh document is a change: when they alone are too many keys,
            // say "many" at once instead of collecting them first.
            var freshRows = 0
            for i in 0..<batch.docCount where batch.sequence(of: i) <= freshLimit { freshRows += batch.rowCount(of: i) }
            if changedKeys!.count + freshRows > View.maxChangedKeys { changedKeys = nil }
        }
        let rows = try ViewStorage.DocumentRows(conn, st.id)
        let insertAll = allFresh && unchanged      // every row of the batch is new
        var toInsert: [Int] = []              // documents whose rows are written (unless all are)
        if !insertAll { toInsert.reserveCapacity(batch.docCount) }
        var anyChange = false
        for i in 0..<batch.docCount {
            let sequence = batch.sequence(of: i), rowCount = batch.rowCount(of: i)
            let fresh = sequence <= freshLimit
            if fresh && unchanged {                // every row of this document is new
                guard rowCount > 0 else { continue }
                if !insertAll { toInsert.append(i) }
                anyChange = true
                st.totalRows += Int64(rowCount)
                if changedKeys != nil {
                    changedKeys!.append(contentsOf: batch.keys(of: i))
                    if changedKeys!.count > View.maxChangedKeys { changedKeys = nil }
                }
                continue
            }
            let docID = batch.docID(i)
            var purged = false
            if !unchanged {
                let nowSeq = try docStore.summary(conn, docID: docID)?.sequence
                // A document purged meanwhile is not re-added; one changed meanwhile is
                // indexed by a later batch (its new sequence is above this one's).
                if nowSeq == nil { purged = true } else if nowSeq != sequence { continue }
            }
            let newCount = purged ? 0 : rowCount
            let oldRows = fresh ? [] : try rows.read(docID: docID)
            if oldRows.isEmpty && newCount == 0 { continue }
            if !oldRows.isEmpty && !purged && IndexUpdater.sameRows(oldRows, batch.rows(of: i)) {
                // The same rows: rewritten for their new sequence, but not a change.
                try rows.delete(docID: docID)
                toInsert.append(i)
                continue
            }
            anyChange = true
            if !oldRows.isEmpty { try rows.delete(docID: docID) }
            if newCount > 0 { toInsert.append(i) }
            st.totalRows += Int64(newCount - oldRows.count)
            if changedKeys != nil {
                changedKeys!.append(contentsOf: oldRows.map(\.key))
                if newCount > 0 { changedKeys!.append(contentsOf: batch.keys(of: i)) }
                if changedKeys!.count > View.maxChangedKeys { changedKeys = nil }
            }
        }
        // Recorded with the rows, in their transaction: an index holding sort keys names
        // the collator they came from.
        if batch.keysNeedCollator { st.format = IndexFormat.collated }
        try batch.insert(documents: insertAll ? nil : toInsert, allNew: insertAll, intoView: st.id, analyzer: analyzer, conn: conn)
        batch.clear()                              // before the document-ID index's sort needs memory
        if last && !docIndexMade { try ViewStorage.ensureDocIndex(conn, st.id) }
        st.lastSeq = upTo
        if anyChange { st.generation += 1 }
        changed = anyChange
        try ViewStorage.save(conn, st)
        return st
    }

    /// Whether two documents' rows are the same multiset (emit order aside).
    static func sameRows(_ a: [EmittedRow], _ b: [EmittedRow]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        func less(_ x: EmittedRow, _ y: EmittedRow) -> Bool {
            if x.keyJSON != y.keyJSON { return x.keyJSON.lexicographicallyPrecedes(y.keyJSON) }
            if x.text != y.text { return (x.text ?? "") < (y.text ?? "") || (x.text == nil && y.text != nil) }
            return (x.value ?? []).lexicographicallyPrecedes(y.value ?? []) || (x.value == nil && y.value != nil)
        }
        return a.sorted(by: less) == b.sorted(by: less)
    }
}
