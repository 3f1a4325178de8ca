
/// A query's results, read row by row or a page of rows at a time as the source produces
/// them (index scans read pages, so a query over millions of rows holds constant memory).
/// `isStale` tells whether the index changed since. Calls are serialized; the rows a call
/// lends stay valid until the next call reading rows.
public final class QueryEnumerator: @unchecked Sendable {
    private let source: RowSource
    private var skip: Int64
    private var remaining: Int64
    private let includeDocs: Bool
    private let collection: Collection
    private let viewName: String?
    private var prefetched: [QueryRow] = []
    private let lendArena = RowArena(capacity: 1024)       // prefetched rows and include_docs bodies
    /// An error met after a page had rows: those rows are returned, the error by the next call.
    private var deferredError: Error?
    /// Calls reading one row recycle the source only every `rowCallsPerRecycle` calls: a
    /// recycle may always come later (the source then holds at most one more index page a
    /// little longer), and made on every call it cost ~35 instructions a row.
    private static let rowCallsPerRecycle = 256
    private var rowCallsSinceRecycle = 0
    /// Where `nextRows` has its source lend a run of rows (`runCapacity` of them).
    private let run = UnsafeMutablePointer<QueryRowRef>.allocate(capacity: QueryEnumerator.runCapacity)
    private static let runCapacity = 64
    /// Serializes calls. A pthread mutex, not Synchronization.Mutex: ThreadSanitizer does
    /// not see the latter on Linux (see LockedValue).
    private let lock = LockedValue(())

    /// The index's rows before the first one returned (CouchDB's: the start key's place
    /// plus `skip`).
    public let offset: Int64
    /// How include_docs reads each document (`conflicts`: with `_conflicts`).
    private let docOptions: Collection.GetOptions
    /// Rows in the index (documents for all-docs queries) when the query ran.
    public let totalRows: Int64
    /// The index's generation and last indexed sequence when the query ran.
    public let generation: Int64
    public let lastSequence: Int64

    init(source: RowSource, options: QueryOptions, collection: Collection, viewName: String?,
         totalRows: Int64, generation: Int64, lastSequence: Int64, includeDocs: Bool, offset: Int64? = nil) {
        self.source = source
        skip = options.skip
        self.offset = offset ?? options.skip
        docOptions = options.conflicts ? [.conflicts] : []
        remaining = options.limit
        self.includeDocs = includeDocs
        self.collection = collection
        self.viewName = viewName
        self.totalRows = totalRows
        self.generation = generation
        self.lastSequence = lastSequence
        run.initialize(repeating: QueryRowRef(), count: QueryEnumerator.runCapacity)
    }

    deinit {
        run.deinitialize(count: QueryEnumerator.runCapacity)
        run.deallocate()
    }

    /// Fills `row` with the next row, lent until the next call on this enumerator; false
    /// at the end.
    public func next(into row: inout QueryRowRef) throws -> Bool {
        try lock.withLock { _ in
            lendArena.reset()
            rowCallsSinceRecycle += 1
            if rowCallsSinceRecycle >= QueryEnumerator.rowCallsPerRecycle {
                rowCallsSinceRecycle = 0
                source.recycle()
            }
            try throwDeferredError()
            guard try lendRun(max: 1) > 0 else { return false }
            row = run[0]
            return true
        }
    }

    /// Reads the next rows, at most `maxRows`, under one lock, handing them to `body` a run
    /// at a time with the page index of the run's first row: the rows are lent together and
    /// all stay valid until the next call reading rows (this or `next`), though the run's
    /// buffer is reused for the next run (copy the rows, not the buffer). Returns how many
    /// were read: fewer than `maxRows` only at the end, 0 once no rows remain. An error
    /// after some rows were read returns those rows; the next call throws it.
    @discardableResult
    public func nextRows(max maxRows: Int, _ body: (Int, UnsafeMutableBufferPointer<QueryRowRef>) throws -> Void) throws -> Int {
        try lock.withLock { _ in
            try startLending()
            var n = 0
            while n < maxRows {
                let got: Int
                do {
                    got = try lendRun(max: min(maxRows - n, QueryEnumerator.runCapacity))
                } catch let e where n > 0 {
                    deferredError = e
                    break
                }
                if got == 0 { break }
                try body(n, UnsafeMutableBufferPointer(start: run, count: got))
                n += got
            }
            return n
        }
    }

    /// Lends the next rows into `run` (1 to `max` of them; 0 at the end): the prefetched
    /// ones first, then the source's.
    private func lendRun(max: Int) throws -> Int {
        if !prefetched.isEmpty {
            run[0] = lendArena.lend(prefetched.removeFirst())
            return 1
        }
        return try pullRun(max: max)
    }

    /// Reads the source's next rows into `run` (1 to `max`; 0 at the end): skip, limit and
    /// include_docs applied to a run of them at once.
    private func pullRun(max: Int) throws -> Int {
        if remaining == 0 { return 0 }
        while skip > 0 {
            let skipped = try source.next(into: run, max: Int(Swift.min(skip, Int64(QueryEnumerator.runCapacity))))
            if skipped == 0 { return 0 }
            skip -= Int64(skipped)
        }
        let want = remaining > 0 ? Int(Swift.min(remaining, Int64(max))) : max
        let got = try source.next(into: run, max: want)
        if remaining > 0 { remaining -= Int64(got) }
        if includeDocs {
            for i in 0..<got { attachDoc(&run[i]) }
        }
        return got
    }

    /// The rows lent by the previous calls are given back; throws an error deferred by it.
    @inline(__always)
    private func startLending() throws {
        lendArena.reset()
        source.recycle()
        rowCallsSinceRecycle = 0
        try throwDeferredError()
    }

    @inline(__always)
    private func throwDeferredError() throws {
        if let e = deferredError {
            deferredError = nil
            throw e
        }
    }

    /// The next row, lent until the next call on this enumerator; nil at the end.
    public func nextRef() throws -> QueryRowRef? {
        var row = QueryRowRef()
        return try next(into: &row) ? row : nil
    }

    /// The next row as values, nil at the end.
    public func next() throws -> QueryRow? {
        try nextRef().map { QueryRow($0) }
    }

    private func attachDoc(_ row: inout QueryRowRef) {
        guard let id = row.docID else { return }
        let doc = try? collection.get(docID: String(decoding: id, as: UTF8.self), options: docOptions)
        row.doc = lendArena.buffer(lendArena.store(doc))
    }

    /// Reads the first rows now (update "after": they are read before the update starts).
    func prefetch(_ n: Int) throws {
        try lock.withLock { _ in
            while prefetched.count < n {
                source.recycle()                 // each row is copied before the next
                guard try pullRun(max: 1) > 0 else { break }
                prefetched.append(QueryRow(run[0]))
            }
        }
    }

    /// Every remaining row.
    public func allRows() throws -> [QueryRow] {
        var out: [QueryRow] = []
        while let r = try next() { out.append(r) }
        return out
    }

    /// True when re-running the query could give other rows: the index changed since, or
    /// the collection has changes the index does not cover yet. Conservative.
    public var isStale: Bool {
        get throws {
            guard let viewName else {
                return try collection.lastSequence != lastSequence
            }
            let st = try collection.store.read { conn in
                try ViewStorage.load(conn, collectionID: collection.id, name: viewName)
            }
            guard let st else { return true }
            let collLast = try collection.lastSequence
            return st.generation != generation || st.lastSeq < lastSequence || collLast > st.lastSeq
        }
    }

    /// The remaining rows as CouchDB-style JSON:
    /// {"total_rows":n,"offset":skip,"update_seq":seq,"rows":[...]}.
    public func json() throws -> [UInt8] {
        var all: [UInt8] = []
        try writeJSON(chunkBytes: .max) { all = $0 }
        return all
    }

    /// The same JSON handed to `sink` in pieces of about `chunkBytes` (a listener streams
    /// them, so a response of any size is written in bounded memory); `updateSeq: false`
    /// leaves out "update_seq" (CouchDB's `_all_docs` gives it only when asked);
    /// `offset: false` writes it null (CouchDB's `_all_docs` with `keys`).
    /// `document`: each `doc` as the caller shows it (the listener's CouchDB form of attachments).
    /// `couchShape`: rows without cblite's "seq" and "source_id" (QueryRowRef.write).
    public func writeJSON(updateSeq: Bool = true, offset withOffset: Bool = true, couchShape: Bool = false,
                          chunkBytes: Int = 64 * 1024,
                          document: ((UnsafeBufferPointer<UInt8>) throws -> [UInt8])? = nil,
                          to sink: ([UInt8]) throws -> Void) throws {
        var w = JSONWriter(capacity: chunkBytes == .max ? 1024 : chunkBytes + 4096)
        w.append("{\"total_rows\":\(totalRows),\"offset\":\(withOffset ? String(offset) : "null"),")
        if updateSeq { w.append("\"update_seq\":\(lastSequence),") }
        w.append("\"rows\":[")
        var first = true
        var r = QueryRowRef()
        while try next(into: &r) {
            if !first { w.append(",") }
            first = false
            if includeDocs, let document, let doc = r.doc {
                var shown = r
                try document(doc).withUnsafeBufferPointer { shown.doc = $0; shown.write(&w, includeDocs: true, couchShape: couchShape) }
            } else {
                r.write(&w, includeDocs: includeDocs, couchShape: couchShape)
            }
            if w.bytes.count >= chunkBytes {
                try sink(w.bytes)
                w = JSONWriter(capacity: chunkBytes + 4096)
            }
        }
        w.append("]}")
        try sink(w.bytes)
    }
}
