/// A map/reduce view of a collection. Its functions are registered at run time on this
/// object (they are not persistent); its index is persistent and updated incrementally.
public final class View: @unchecked Sendable {
    public let collection: Collection
    public let name: String

    private let monitor = Monitor()
    private var map: MapFunction?
    private var reducer: Reducer?
    private var version = ""
    private var analyzer = FullTextAnalyzer.textKeyDefault
    /// The revision of the design document whose JavaScript the functions are
    /// (DesignViews); nil when they were registered through the API, or there are none.
    private var designRevision: String?
    private var backgroundUpdates = 0
    /// The index state a query last found current (see IndexUpdater.CurrentIndex).
    let currentIndex = LockedValue<IndexUpdater.CurrentIndex?>(nil)

    // The index updater's sizes (IndexUpdater).
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
            self.designRevision = nil
        }
    }

    /// Sets a design document's functions (DesignViews), with its revision.
    func setDesignFunctions(map: MapFunction?, reduce: Reducer?, version: String, revision: String?) {
        monitor.locked {
            self.map = map
            self.reducer = map == nil ? nil : reduce
            self.version = version
            self.designRevision = map == nil ? nil : revision
        }
    }

    /// Whether the functions were registered through the API, and the design document
    /// revision they come from otherwise.
    var functionOrigin: (registered: Bool, designRevision: String?) {
        monitor.locked { (map != nil && designRevision == nil, designRevision) }
    }

    /// How the texts of text keys (Emitter.emit(text:)) are cut into terms, for documents
    /// and full-text queries alike: by default as Couchbase Lite 1.x did (case and
    /// diacritics folded, English stemming, English stop words). Another analyzer is part
    /// of the index's version: changing it rebuilds the index at the next update.
    public var textAnalyzer: FullTextAnalyzer {
        get { monitor.locked { analyzer } }
        set { monitor.locked { analyzer = newValue } }
    }

    /// The version the index records: the functions' version, and the analyzer unless it
    /// is the default (so indexes made before text keys existed stay current).
    static func indexVersion(_ version: String, analyzer: FullTextAnalyzer) -> String {
        analyzer == .textKeyDefault ? version : version + "\u{1}text:" + analyzer.tokenizeOption
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
        try loadDesignFunctions()
        let (map, version, analyzer) = monitor.locked { (self.map, self.version, self.analyzer) }
        guard let map else { throw CBLError(.notAcceptable, "view \"\(name)\" has no map function") }
        let started = MonotonicTime.now()
        let result = try collection.mapMissingTable {
            try IndexUpdater(view: self, map: map, version: View.indexVersion(version, analyzer: analyzer), analyzer: analyzer).run()
        }
        if result.changed {
            let ms = MonotonicTime.now().milliseconds - started.milliseconds
            Loggers.query.info("updated index of view \(name): generation \(result.generationBefore) -> \(result.generationAfter), \(result.changedKeys.map { "\($0.count) key(s) changed" } ?? "many keys changed"), \(ms) ms")
        }
        return result
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
