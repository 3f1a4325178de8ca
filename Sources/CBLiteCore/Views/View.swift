/// A map/reduce view of a collection. Its functions are registered at run time on this
/// object (they are not persistent); its index is persistent and updated incrementally.
public final class View: @unchecked Sendable {
    public let collection: Collection
    public let name: String

    private let monitor = Monitor()
    private var map: MapFunction?
    private var reducer: Reducer?
    private var version = ""
    private var backgroundUpdates = 0
    /// The index state a query last found current, with the reader connection and its
    /// PRAGMA data_version then: while that connection reports the same data_version,
    /// nothing was committed to the file since (by any connection or process), so the
    /// index is still current and its registry row unchanged. Saves a query the registry
    /// and collection reads (~8,000 instructions) for one data_version read.
    private struct CurrentIndex {
        weak var conn: Connection?
        let dataVersion: Int64
        let version: String
        let state: ViewStorage.State
    }
    private let currentIndex = LockedValue<CurrentIndex?>(nil)

    /// Documents read per indexing step (the map runs between steps, outside locks).
    static let chunkSize = 512
    /// A document's bytes in the table, at least (the benchmark's ~200-byte bodies take
    /// ~300 with their revision tree): how a scan of n documents is sized.
    static let scanBytesPerDocument = 256
    /// Most rows mapped before they are written (one write transaction per batch): what an
    /// index update holds in memory, about 60 bytes a row of a number key (MappedBatch). Tests lower it.
    var maxBatchRows = MappedBatch.maxRows
    /// Most changed keys an update reports before it reports "everything".
    static let maxChangedKeys = 2048

    init(collection: Collection, name: String) {
        self.collection = collection
        self.name = name
    }

    var store: Store { collection.store }

    /// Registers (nil: removes) the functions. A different version than the index was
    /// built with discards the index on the next update.
    public func setMapReduce(map: MapFunction?, reduce: Reducer?, version: String) {
        monitor.locked {
            self.map = map
            self.reducer = map == nil ? nil : reduce
            self.version = version
        }
    }

    public var hasMap: Bool { monitor.locked { map != nil } }
    public var hasReduce: Bool { monitor.locked { reducer != nil } }
    var currentReducer: Reducer? { monitor.locked { reducer } }

    /// The registry state, nil when the view was never indexed.
    func state() throws -> ViewStorage.State? {
        try collection.check()
        return try store.read { conn in try ViewStorage.load(conn, collectionID: collection.id, name: name) }
    }

    /// The last sequence the index covers (0 when never indexed).
    public var lastSequenceIndexed: Int64 { get throws { try state()?.lastSeq ?? 0 } }
    /// Number of rows in the index.
    public var totalRows: Int64 { get throws { try state()?.totalRows ?? 0 } }
    /// Changes whenever the index's rows change.
    public var generation: Int64 { get throws { try state()?.generation ?? 0 } }

    /// `cbl_view_info`'s object: name, last sequence indexed, rows, staleness.
    public func infoJSON() throws -> [UInt8] {
        JSONWriter.ordered(.object(JSONObject([
            ("name", .string(name)),
            ("last_sequence", .int(try lastSequenceIndexed)),
            ("total_rows", .int(try totalRows)),
            ("stale", .bool(try isStale)),
        ])))
    }

    /// True when the index is behind the collection.
    public var isStale: Bool {
        get throws {
            let st = try state()
            return try collection.lastSequence > (st?.lastSeq ?? 0) || (st == nil && hasMap)
        }
    }

    /// Deletes the view's index (the functions stay registered on this object).
    public func delete() throws {
        try collection.check()
        try collection.mapMissingTable {
            try store.write(timeoutMs: collection.database.busyTimeoutMs) { conn, _ in
                guard try ViewStorage.registryExists(conn),
                      let st = try ViewStorage.load(conn, collectionID: collection.id, name: name, anyFormat: true) else {
                    throw CBLError.notFound("view \"\(name)\" has no index")
                }
                try ViewStorage.drop(conn, st.id)
            }
        }
    }

    // MARK: indexing

    /// Brings the index up to date with the collection: only documents changed since the
    /// last indexed sequence are mapped; deleted ones leave the index, updated ones
    /// replace their rows. The map function runs outside the database's locks (unless
    /// the caller is inside a transaction).
    @discardableResult
    public func updateIndex() throws -> IndexUpdate {
        try collection.check()
        let (map, version) = monitor.locked { (self.map, self.version) }
        guard let map else { throw CBLError(.notAcceptable, "view \"\(name)\" has no map function") }
        // No lock is held while waiting for the database: concurrent updaters of one
        // index each check, in their write transaction, that no one else moved it on.
        let started = MonotonicTime.now()
        let result = try collection.mapMissingTable { try update(map: map, version: version) }
        if result.changed {
            let ms = MonotonicTime.now().milliseconds - started.milliseconds
            Loggers.query.info("updated index of view \(name): generation \(result.generationBefore) -> \(result.generationAfter), \(result.changedKeys.map { "\($0.count) key(s) changed" } ?? "many keys changed"), \(ms) ms")
        }
        return result
    }

    private func update(map: MapFunction, version: String) throws -> IndexUpdate {
        let collID = collection.id
        let timeout = collection.database.busyTimeoutMs
        // The index's state and whether the collection moved on since: an index found
        // current (most queries) costs these reads (or only the data_version's), and no batch.
        let (loaded, current) = try store.read { conn -> (ViewStorage.State?, Bool) in
            // Inside a transaction (the writer's own changes do not move its data_version)
            // the registry is read.
            let owned = store.ownedByCurrentThread
            let dataVersion = owned ? nil : try conn.dataVersion()    // before the reads it vouches for
            if let dataVersion, let known = currentIndex.withLock({ $0 }), known.conn === conn,
               known.dataVersion == dataVersion, known.version == version {
                return (known.state, true)
            }
            guard let st = try ViewStorage.load(conn, collectionID: collID, name: name), st.version == version else {
                return (nil, false)
            }
            let collLast = try store.collectionMeta(collID, reading: conn).lastSeq
            let current = collLast <= st.lastSeq
            if current, let dataVersion {
                currentIndex.withLock { $0 = CurrentIndex(conn: conn, dataVersion: dataVersion, version: version, state: st) }
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
            let batch = MappedBatch(maxRows: maxBatchRows)
            let mapped = try mapBatch(map: map, from: from, into: batch)
            let upTo = mapped.upTo
            if upTo <= from { break }
            if from == 0 { freshThrough = mapped.collectionLast }
            var wroteChanges = false
            let fresh = freshThrough
            let result = try store.write(timeoutMs: timeout) { conn, _ in
                try write(batch, from: from, upTo: upTo, freshThrough: fresh, last: mapped.reachedEnd,
                          readMeta: mapped.firstMeta, version: version, conn: conn, changedKeys: &changedKeys,
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
    private func mapBatch(map: MapFunction, from: Int64, into batch: MappedBatch) throws
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
                if !e.deleted { try map(MapDocument(chunk, e), emitter) }
            }
            let docs = chunk.entries
            upTo = docs.count < View.chunkSize ? collLast : docs.last!.sequence
        }
    }

    /// Writes a mapped batch covering (from, upTo] (inside the write transaction); nil
    /// when someone else moved the index on meanwhile. Documents at or below
    /// `freshThrough` have no rows in the index (a build from an empty index; see update);
    /// `last`: the batch reaches the collection's end; `readMeta`: the collection's counters
    /// read before its first document was.
    private func write(_ batch: MappedBatch, from: Int64, upTo: Int64, freshThrough: Int64?, last: Bool,
                       readMeta: CollectionMeta?, version: String, conn: Connection, changedKeys: inout [[UInt8]]?,
                       changed: inout Bool) throws -> ViewStorage.State? {
        guard var st = try ViewStorage.load(conn, collectionID: collection.id, name: name),
              st.version == version, st.lastSeq == from else { return nil }   // someone else indexed
        let docStore = collection.docStore
        let vt = ViewStorage.table(st.id)
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
        let old = try conn.prepare("SELECT key, row FROM \(vt) WHERE docid=? ORDER BY n")
        let del = try conn.prepare("DELETE FROM \(vt) WHERE docid=?")
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
            var oldRows: [EmittedRow] = []
            if !fresh {
                old.bind(1, docID)
                defer { old.reset() }
                while try old.step() {
                    let stored = try IndexRow.read(old.borrowedNonEmpty(1))
                    oldRows.append(EmittedRow(key: old.bytes(0) ?? [], keyJSON: try stored.keyJSONBytes(key: old.borrowedBytes(0)),
                                              value: stored.value.map { Array($0) }))
                }
            }
            if oldRows.isEmpty && newCount == 0 { continue }
            if !oldRows.isEmpty && !purged && View.sameRows(oldRows, batch.rows(of: i)) {
                // The same rows: rewritten for their new sequence, but not a change.
                del.bind(1, docID)
                try del.run()
                toInsert.append(i)
                continue
            }
            anyChange = true
            if !oldRows.isEmpty {
                del.bind(1, docID)
                try del.run()
            }
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
        try batch.insert(documents: insertAll ? nil : toInsert, allNew: insertAll, intoView: st.id, conn: conn)
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
            return (x.value ?? []).lexicographicallyPrecedes(y.value ?? []) || (x.value == nil && y.value != nil)
        }
        return a.sorted(by: less) == b.sorted(by: less)
    }

    // MARK: background updates (update = "after")

    /// Updates the index on a background thread.
    func updateInBackground() {
        monitor.locked { backgroundUpdates += 1 }
        ServiceThread.detached { [self] in
            do { try self.updateIndex() } catch {
                Loggers.database.warning("background update of view \(self.name) failed: \(error)")
            }
            self.monitor.locked { self.backgroundUpdates -= 1; self.monitor.broadcast() }
        }
    }

    /// Waits until background updates started by queries with update "after" are done.
    public func waitForBackgroundUpdates() {
        monitor.locked { while backgroundUpdates > 0 { _ = monitor.wait(until: nil) } }
    }
}
