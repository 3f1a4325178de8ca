import Glibc

/// One emitted row: the key in its index form (CollatableKey) and as compact JSON text,
/// and the value as compact JSON text (nil when none was emitted).
public struct EmittedRow: Equatable {
    public let key: [UInt8]
    public let keyJSON: [UInt8]
    public let value: [UInt8]?
}

/// Collects the rows a map function emits, into the batch being indexed. Keys and values
/// are stored as compact JSON text (object members in their emitted order); a value may
/// be absent (nil), which is stored as nothing.
public final class Emitter {
    let batch: MappedBatch
    /// For a binding's use: one emitter serves all map calls of one index update, so a
    /// binding can keep its per-emitter state here, and release it in `onRelease`.
    public var context: AnyObject?
    public var onRelease: (() -> Void)?

    init(batch: MappedBatch) { self.batch = batch }

    deinit { onRelease?() }

    public func emit(_ key: JSONValue, _ value: JSONValue?) {
        batch.addRow(key: key, keyJSON: nil, value: value.map { Collation.compactJSON($0) })
    }

    /// Emits JSON texts (validated and made compact; 400 when invalid).
    public func emit(keyJSON: UnsafeBufferPointer<UInt8>, valueJSON: UnsafeBufferPointer<UInt8>?) throws {
        let value = try valueJSON.map { try Collation.compactJSON(json: $0) }
        if let n = MappedBatch.plainInteger(keyJSON) {       // the common case, without a parse
            batch.addRow(key: .int(n), keyJSON: keyJSON, value: value)
        } else {
            batch.addRow(key: try JSONParser.parse(bytes: keyJSON), keyJSON: nil, value: value)
        }
    }

    public func emit(keyJSON: String, valueJSON: String?) throws {
        var k = keyJSON
        try k.withUTF8 { kb in
            if var v = valueJSON {
                try v.withUTF8 { vb in try emit(keyJSON: kb, valueJSON: vb) }
            } else {
                try emit(keyJSON: kb, valueJSON: nil)
            }
        }
    }
}

/// The document a map function sees: its current revision as JSON, with "_id" and "_rev".
/// It points into the chunk of documents being mapped (read and rendered in one buffer).
public struct MapDocument {
    private let chunk: MapChunk
    private let entry: MapChunk.Entry

    init(_ chunk: MapChunk, _ entry: MapChunk.Entry) {
        self.chunk = chunk
        self.entry = entry
    }

    public var docID: String { String(decoding: chunk.bytes[entry.id], as: UTF8.self) }
    public var revID: String { String(decoding: chunk.bytes[entry.rev], as: UTF8.self) }
    public var sequence: Int64 { entry.sequence }
    public var json: [UInt8] { Array(chunk.bytes[entry.json]) }

    /// The parsed document.
    public var object: JSONObject {
        get throws {
            try chunk.bytes.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: UnsafeBufferPointer(rebasing: $0[entry.json])) }
        }
    }

    /// Calls `body` with the JSON as a C string (it is followed by a 0 byte in the chunk).
    public func withCString<T>(_ body: (UnsafePointer<CChar>) throws -> T) rethrows -> T {
        try chunk.bytes.withUnsafeBufferPointer {
            try body(UnsafeRawPointer($0.baseAddress! + entry.json.lowerBound).assumingMemoryBound(to: CChar.self))
        }
    }
}

/// A chunk of documents read for mapping: per document its sequence, whether it is
/// deleted, and ranges of one buffer holding its ID, revision ID and JSON (followed by a
/// 0 byte) — rendered straight from the columns, with no allocation per document.
final class MapChunk {
    struct Entry {
        let sequence: Int64
        let deleted: Bool
        let id: Range<Int>, rev: Range<Int>, json: Range<Int>
    }

    let bytes: [UInt8]
    let entries: [Entry]

    private init(bytes: [UInt8], entries: [Entry]) {
        self.bytes = bytes
        self.entries = entries
    }

    /// Reads up to `limit` documents with sequences in (from, to].
    static func read(_ conn: Connection, docStore: DocumentStore, from: Int64, to: Int64, limit: Int) throws -> MapChunk {
        let s = try docStore.sequenceRange(conn, after: from, through: to, limit: Int64(limit))
        defer { s.reset() }
        var w = JSONWriter(canonical: false, capacity: 64 * 1024)
        var entries: [Entry] = []
        entries.reserveCapacity(limit)
        let none = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        while try s.step() {
            let id = s.borrowedBytes(0) ?? none, rev = s.borrowedBytes(3) ?? none
            let deleted = DocFlags(rawValue: s.int(2)).contains(.deleted)
            let idStart = w.bytes.count
            w.appendRaw(id)
            let revStart = w.bytes.count
            w.appendRaw(rev)
            let jsonStart = w.bytes.count
            if !deleted { DocumentJSON.write(into: &w, docID: id, rev: rev, deleted: false, body: s.borrowedBytes(4)) }
            let jsonEnd = w.bytes.count
            w.appendByte(0)
            entries.append(Entry(sequence: s.int(1), deleted: deleted, id: idStart..<revStart, rev: revStart..<jsonStart,
                                 json: jsonStart..<jsonEnd))
        }
        return MapChunk(bytes: w.bytes, entries: entries)
    }
}

/// A map function: called with each document, emits rows. It must be pure (the seeds'
/// rules); it may be called on any thread.
public typealias MapFunction = (MapDocument, Emitter) throws -> Void

/// A reduce function: either one of the built-in reducers, computed natively, or a
/// custom function of (keys, values, rereduce) returning JSON. With rereduce, keys is nil
/// and values are results of earlier calls.
public enum Reducer {
    case count
    case sum
    case stats
    case custom((_ keys: [[UInt8]]?, _ values: [[UInt8]], _ rereduce: Bool) throws -> [UInt8])

    /// `_count`, `_sum`, `_stats`; nil for any other name.
    public init?(builtin name: String) {
        switch name {
        case "_count": self = .count
        case "_sum": self = .sum
        case "_stats": self = .stats
        default: return nil
        }
    }

    /// The reducer a caller asked for: a built-in by name or a custom function, never both
    /// (400); nil when neither (a map-only view).
    public static func chosen(builtin: String?, custom: Reducer?) throws -> Reducer? {
        if builtin != nil && custom != nil { throw CBLError.badRequest("give either a reduce callback or a built-in reducer, not both") }
        guard let builtin else { return custom }
        guard let r = Reducer(builtin: builtin) else {
            throw CBLError.badRequest("unknown built-in reducer \"\(builtin.prefix(80))\" (use _count, _sum or _stats)")
        }
        return r
    }
}

/// The result of bringing an index up to date: which generation it went from and to, and
/// the keys of the rows that were added or removed (nil: too many, or unknown).
public struct IndexUpdate: Sendable {
    public let generationBefore: Int64
    public let generationAfter: Int64
    public let changedKeys: [[UInt8]]?
    /// The index's state when the update finished (a query reads it instead of loading it again).
    let state: ViewStorage.State
    public var changed: Bool { generationBefore != generationAfter }
}

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

    /// Documents read per indexing step (the map runs between steps, outside locks).
    static let chunkSize = 512
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

    /// True when the index is behind the collection.
    /// `cbl_view_info`'s object: name, last sequence indexed, rows, staleness.
    public func infoJSON() throws -> [UInt8] {
        JSONWriter.ordered(.object(JSONObject([
            ("name", .string(name)),
            ("last_sequence", .int(try lastSequenceIndexed)),
            ("total_rows", .int(try totalRows)),
            ("stale", .bool(try isStale)),
        ])))
    }

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
        var state: ViewStorage.State = try {
            if let st = try store.read({ conn in try ViewStorage.load(conn, collectionID: collID, name: name) }),
               st.version == version {
                return st
            }
            return try store.write(timeoutMs: timeout) { conn, _ in
                try ViewStorage.ensure(conn, collectionID: collID, name: name, version: version)
            }
        }()
        let before = state.generation
        var changedKeys: [[UInt8]]? = []
        var restarts = 0
        var ownIncrements: Int64 = 0
        while true {
            let from = state.lastSeq
            let batch = MappedBatch()
            let upTo = try mapBatch(map: map, from: from, into: batch)
            if upTo <= from { break }
            var wroteChanges = false
            let result = try store.write(timeoutMs: timeout) { conn, _ in
                try write(batch, from: from, upTo: upTo, version: version, conn: conn,
                          changedKeys: &changedKeys, changed: &wroteChanges)
            }
            if let result {
                if wroteChanges { ownIncrements += 1 }
                state = result
            } else {
                restarts += 1
                if restarts > 100 { throw CBLError(.busy, "view \"\(name)\" keeps being re-indexed concurrently") }
                changedKeys = nil
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
    /// covers up to (`from` when there is nothing to index).
    private func mapBatch(map: MapFunction, from: Int64, into batch: MappedBatch) throws -> Int64 {
        let docStore = collection.docStore
        var upTo = from
        let emitter = Emitter(batch: batch)
        while !batch.isFull {
            let collLast = try store.collectionMeta(collection.id).lastSeq
            if collLast <= upTo { break }
            if upTo == from { batch.reserve(documents: Int(clamping: collLast - from)) }
            let chunkFrom = upTo
            let chunk = try store.read { conn in
                try MapChunk.read(conn, docStore: docStore, from: chunkFrom, to: collLast, limit: View.chunkSize)
            }
            for e in chunk.entries {
                batch.beginDocument(id: chunk.bytes[e.id], sequence: e.sequence)
                if !e.deleted { try map(MapDocument(chunk, e), emitter) }
            }
            let docs = chunk.entries
            upTo = docs.count < View.chunkSize ? collLast : docs.last!.sequence
        }
        return upTo
    }

    /// Writes a mapped batch covering (from, upTo] (inside the write transaction); nil
    /// when someone else moved the index on meanwhile.
    private func write(_ batch: MappedBatch, from: Int64, upTo: Int64, version: String, conn: Connection,
                       changedKeys: inout [[UInt8]]?, changed: inout Bool) throws -> ViewStorage.State? {
        guard var st = try ViewStorage.load(conn, collectionID: collection.id, name: name),
              st.version == version, st.lastSeq == from else { return nil }   // someone else indexed
        let docStore = collection.docStore
        let vt = ViewStorage.table(st.id)
        // Documents changed or purged since they were read must not be indexed from that
        // read. Sequences are never reused and a change moves a document above every
        // sequence read, so when the range still holds as many documents as were read,
        // none of them changed; otherwise each is checked.
        let unchanged = try docStore.count(conn, after: from, through: upTo) == batch.docs.count
        // A first build starts from an empty index: nothing to look up or replace.
        let emptyIndex = from == 0
        let old = try conn.prepare("SELECT key, row FROM \(vt) WHERE docid=? ORDER BY n")
        let del = try conn.prepare("DELETE FROM \(vt) WHERE docid=?")
        var toInsert: [Int] = []              // documents whose rows are written
        toInsert.reserveCapacity(batch.docs.count)
        var anyChange = false
        for (i, doc) in batch.docs.enumerated() {
            if emptyIndex && unchanged {           // a first build: every document's rows are new
                guard doc.rowCount > 0 else { continue }
                toInsert.append(i)
                anyChange = true
                st.totalRows += Int64(doc.rowCount)
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
                if nowSeq == nil { purged = true } else if nowSeq != doc.sequence { continue }
            }
            let newCount = purged ? 0 : Int(doc.rowCount)
            var oldRows: [EmittedRow] = []
            if !emptyIndex {
                old.bind(1, docID)
                defer { old.reset() }
                while try old.step() {
                    let stored = try IndexRow.read(old.borrowedNonEmpty(1))
                    oldRows.append(EmittedRow(key: old.bytes(0) ?? [], keyJSON: Array(stored.keyJSON), value: stored.value.map { Array($0) }))
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
        try batch.insert(documents: toInsert, into: vt, conn: conn, bulk: emptyIndex)
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

extension Collection {
    /// The view of this collection named `name` (its index is created by the first
    /// update). Names: 1–255 bytes of UTF-8 without control characters.
    public func view(named name: String) throws -> View {
        try check()
        let u = name.utf8
        guard !u.isEmpty, u.count <= 255, !u.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw CBLError.badRequest("view name must be 1 to 255 bytes without control characters")
        }
        return View(collection: self, name: name)
    }

    /// Names of the views of this collection that have an index.
    public func viewNames() throws -> [String] {
        try check()
        return try store.read { conn in
            guard try ViewStorage.registryExists(conn) else { return [] }
            let s = try conn.prepare("SELECT name FROM view_indexes WHERE coll=? ORDER BY name")
            defer { s.reset() }
            s.bind(1, id)
            var out: [String] = []
            while try s.step() { out.append(s.string(0) ?? "") }
            return out
        }
    }
}
