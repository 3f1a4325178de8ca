import Glibc

/// A query that keeps itself up to date: it runs, delivers its first result set, then
/// watches the collection. After each committed change it brings the view's index up to
/// date and re-runs only when the index changed in a way that can affect it (Couchbase
/// Lite 1.3 #1114): rows were added or removed under keys inside the query's range (or
/// the index changed in ways it cannot attribute to keys). A new result set is delivered
/// only when its rows differ from the previous one (or the options changed).
///
/// A live find (a Mango query) works the same way: after each committed change it runs
/// again (bringing its index up to date, as a find does) and delivers its documents when
/// they differ from the previous ones.
///
/// The work and the callbacks run on the live query's own thread, after the commit and
/// outside the engine's locks, so a callback may call back into the library.
public final class LiveQuery: Service, @unchecked Sendable {
    public typealias Callback = (QueryEnumerator) -> Void

    /// The view queried; nil for a live find.
    public let view: View?
    public let collection: Collection
    /// A live find's query (nil for a view's live query).
    private var findRequest: FindRequest?
    public var serviceName: String { "live query" }
    private let callback: Callback
    private let monitor = Monitor()
    private var options: QueryOptions
    private var optionsChanged = true
    private var dirty = true
    private var stopped = false
    private var busy = false
    private var thread: ServiceThread?
    private var token: ChangeObserverToken?
    private var lastRows: [QueryRow]?
    private var lastGeneration: Int64?
    private var worker: ThreadID?
    private var registration: ServiceRegistration?

    private var runs = 0
    private var deliveries = 0
    private var error: CBLError?
    /// How many times the query ran, and how many result sets were delivered (tests).
    public var runCount: Int { monitor.locked { runs } }
    public var deliveryCount: Int { monitor.locked { deliveries } }
    /// The last error of a run (the live query keeps watching).
    public var lastError: CBLError? { monitor.locked { error } }

    public init(view: View, options: QueryOptions, callback: @escaping Callback) {
        self.view = view
        collection = view.collection
        var o = options
        o.update = .before
        self.options = o
        self.callback = callback
    }

    /// A live find: `request` run after each committed change; each row of a delivered
    /// result is a document found (as `Collection.findQuery` gives them).
    public init(collection: Collection, find request: FindRequest, callback: @escaping Callback) {
        view = nil
        self.collection = collection
        findRequest = request
        options = QueryOptions()
        self.callback = callback
    }

    /// Starts watching; the first result set is delivered from the live query's thread.
    public func start() throws {
        if let view, !view.hasMap { throw CBLError(.notAcceptable, "view \"\(view.name)\" has no map function") }
        if findRequest != nil { _ = try collection.find(findRequest!) }       // its errors are start's
        let tok = try collection.addChangeObserver { [weak self] _ in self?.markDirty() }
        // Closing the database handle stops this live query.
        let reg: ServiceRegistration
        do {
            reg = try collection.database.register(self)
        } catch {
            tok.remove()            // the handle was closed: nothing may stay registered
            throw error
        }
        // The observer and the registration become this query's only once it starts; any
        // failure below gives both back (a second start must not replace the first's).
        let failure: CBLError? = monitor.locked {
            if thread != nil || stopped { return CBLError(.notAcceptable, "live query is already started or was stopped") }
            do {
                thread = try ServiceThread { [self] in run() }
            } catch {
                return error as? CBLError ?? CBLError(.internalError, "cannot start the live query's thread: \(error)")
            }
            token = tok
            registration = reg
            return nil
        }
        if let failure {
            collection.database.unregister(reg)
            tok.remove()
            throw failure
        }
    }

    /// Replaces the options; the query re-runs and delivers its new result set.
    public func setOptions(_ options: QueryOptions) {
        var o = options
        o.update = .before
        monitor.locked {
            self.options = o
            optionsChanged = true
            dirty = true
            monitor.broadcast()
        }
    }

    public var currentOptions: QueryOptions { monitor.locked { options } }

    /// Replaces a live find's query; it re-runs and delivers its new result set.
    public func setFind(_ request: FindRequest) throws {
        guard findRequest != nil else { throw CBLError(.badRequest, "not a live find") }
        monitor.locked {
            findRequest = request
            optionsChanged = true
            dirty = true
            monitor.broadcast()
        }
    }

    public var isFind: Bool { monitor.locked { findRequest != nil } }

    private func markDirty() {
        monitor.locked { dirty = true; monitor.broadcast() }
    }

    /// Stops watching. Returns once no callback is running and none will follow (unless
    /// called from the callback itself). Idempotent.
    public func stop() {
        let (t, tok, reg): (ServiceThread?, ChangeObserverToken?, ServiceRegistration?) = monitor.locked {
            stopped = true
            monitor.broadcast()
            let r = (thread, token, registration)
            thread = nil
            token = nil
            registration = nil
            return r
        }
        if let reg { collection.database.unregister(reg) }
        tok?.remove()
        guard let t else { return }
        t.join()
    }

    public var isRunning: Bool { monitor.locked { thread != nil && !stopped } }

    /// Waits until every change notified so far has been processed (tests, and callers
    /// that want a settled result). Returns false when stopped.
    @discardableResult
    public func waitIdle() -> Bool {
        monitor.locked {
            while !stopped && (dirty || busy) { _ = monitor.wait(until: nil) }
            return !stopped
        }
    }

    /// The rows of the last delivered result set.
    public var rows: [QueryRow]? { monitor.locked { lastRows } }

    private func run() {
        while true {
            let work: (QueryOptions, FindRequest?, Bool)? = monitor.locked {
                while !stopped && !dirty { _ = monitor.wait(until: nil) }
                if stopped { return nil }
                dirty = false
                busy = true
                defer { optionsChanged = false }
                return (options, findRequest, optionsChanged)
            }
            guard let (opts, find, forced) = work else { return }
            if let find { processFind(find, forced: forced) } else if let view { process(view, opts, forced: forced) }
            monitor.locked { busy = false; monitor.broadcast() }
        }
    }

    private func process(_ view: View, _ opts: QueryOptions, forced: Bool) {
        do {
            let update = try view.updateIndex()
            let relevant: Bool = {
                if forced || lastRows == nil { return true }
                if lastGeneration != update.generationBefore { return true }   // changed by someone else
                if !update.changed { return false }
                guard let keys = update.changedKeys else { return true }
                // Map rows, groups and aggregates alike come from rows in the key range.
                return keys.contains { opts.mayContain(key: $0) }
            }()
            lastGeneration = update.generationAfter
            guard relevant else { return }
            var o = opts
            o.update = .never
            let rows = try view.query(o).allRows()
            let gen = update.generationAfter
            guard record(rows, forced: forced) else { return }
            let e = QueryEnumerator(source: ValueRows(ArrayRowSource(rows)), options: QueryOptions(), collection: collection,
                                    viewName: view.name, totalRows: (try? view.totalRows) ?? 0, generation: gen,
                                    lastSequence: (try? view.lastSequenceIndexed) ?? 0, includeDocs: o.includeDocs)
            callback(e)
        } catch {
            failed(error)
        }
    }

    /// A live find's run: every change may change which documents match, so it runs again.
    private func processFind(_ request: FindRequest, forced: Bool) {
        do {
            let rows = try collection.findQuery(request).result.allRows()
            guard record(rows, forced: forced) else { return }
            callback(QueryEnumerator(source: ValueRows(ArrayRowSource(rows)), options: QueryOptions(), collection: collection,
                                     viewName: nil, totalRows: 0, generation: 0, lastSequence: (try? collection.lastSequence) ?? 0,
                                     includeDocs: false))
        } catch {
            failed(error)
        }
    }

    /// Counts a run; whether its rows are to be delivered (they differ from the last
    /// delivered, or the query changed), then recorded as delivered.
    private func record(_ rows: [QueryRow], forced: Bool) -> Bool {
        monitor.locked { runs += 1 }
        if !forced, let last = monitor.locked({ lastRows }), last == rows { return false }
        return monitor.locked {
            if stopped { return false }
            lastRows = rows
            deliveries += 1
            return true
        }
    }

    private func failed(_ error: Error) {
        let e = error as? CBLError ?? (error as? MangoError)?.cblError ?? CBLError(.internalError, "\(error)")
        monitor.locked { self.error = e }
        Loggers.database.warning("live query on \(view.map { "view \($0.name)" } ?? "a find") failed: \(e)")
    }

    deinit {
        token?.remove()
    }
}
