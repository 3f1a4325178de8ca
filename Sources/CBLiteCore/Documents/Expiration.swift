import Glibc

/// Document expiration (time to live), with 1-second granularity.
extension Collection {
    /// Sets (unixTime > 0) or clears (0) a document's expiration.
    public func setExpiration(docID: String, unixTime: Int64) throws {
        try check()
        try DocumentBody.validateDocID(docID)
        guard unixTime >= 0 else { throw CBLError.badRequest("expiration must be a time after 1970 (or 0 to clear)") }
        try mapMissingTable {
            try store.write(timeoutMs: database.busyTimeoutMs) { conn, _ in
                guard try docStore.setExpiration(conn, docID: docID, unixTime: unixTime == 0 ? nil : unixTime) else { throw CBLError.notFound("document \"\(docID)\" does not exist") }
            }
        }
        store.expiration?.poke()
    }

    public func expiration(docID: String) throws -> Int64 {
        try check()
        try DocumentBody.validateDocID(docID)
        return try mapMissingTable {
            try store.read { conn in
                guard let expiration = try docStore.expiration(conn, docID: docID) else {
                    throw CBLError.notFound("document \"\(docID)\" does not exist")
                }
                return expiration ?? 0
            }
        }
    }

    /// Purges this collection's documents whose expiration has passed. Returns how many.
    func purgeExpired(now: Int64) throws -> Int {
        try store.write(timeoutMs: database.busyTimeoutMs) { conn, txn in
            let ids = try docStore.expired(conn, at: now)
            for id in ids { try purgeRow(conn, txn, docID: id) }
            return ids.count
        }
    }

    func nextExpiration() throws -> Int64? {
        try store.read { conn in try docStore.nextExpiration(conn) }
    }
}

extension Database {
    /// Purges expired documents of every collection; returns how many.
    @discardableResult
    public func purgeExpired() throws -> Int {
        try checkOpen()
        let now = unixTimeNow()
        var n = 0
        for id in try allCollectionIDs() {
            n += try Collection(database: self, id: id, scope: "", name: "").purgeExpired(now: now)
        }
        return n
    }

    func nextExpiration() throws -> Int64? {
        try allCollectionIDs().compactMap { try Collection(database: self, id: $0, scope: "", name: "").nextExpiration() }.min()
    }

    /// Purges what has expired now and starts the Store's timer (once per Store).
    func startExpiration() throws {
        try purgeExpired()
        store.startExpirationTimer(self)
    }
}

extension Store {
    func startExpirationTimer(_ db: Database) {
        if expiration == nil { expiration = ExpirationTimer(store: self, directory: db.directory, name: db.name) }
    }
}

/// A thread per open database file that sleeps until the next expiration (or a minute,
/// or a poke) and purges what has expired.
final class ExpirationTimer: @unchecked Sendable {
    private let monitor = Monitor()
    private var stopped = false
    private var poked = false
    private var thread: ServiceThread?
    private weak var store: Store?
    private let directory: String
    private let name: String

    init(store: Store, directory: String, name: String) {
        self.store = store
        self.directory = directory
        self.name = name
        // No thread (the system has none to give): expired documents are then purged
        // when the database is next opened.
        thread = try? ServiceThread { [self] in run() }
    }

    func poke() { monitor.locked { poked = true; monitor.broadcast() } }

    /// Stops the thread and waits for it, unless called from it (a listener closing the
    /// database while the timer delivers a purge).
    func stop() {
        let t: ServiceThread? = monitor.locked {
            stopped = true
            monitor.broadcast()
            defer { thread = nil }
            return thread
        }
        t?.join()
    }

    private func run() {
        while true {
            let next = nextDue()
            let stop: Bool = monitor.locked {
                if stopped { return true }
                if !poked {
                    let waitSeconds = next.map { max(0, min(60, $0 - unixTimeNow())) } ?? 60
                    if waitSeconds > 0 || next == nil {
                        _ = monitor.wait(until: MonotonicTime.now().adding(milliseconds: Int(waitSeconds) * 1000 + 50))
                    }
                }
                poked = false
                return stopped
            }
            if stop { return }
            purge()
        }
    }

    /// Works through an unregistered handle on the Store, so the user's handles (and
    /// their open/close accounting) are never involved; fails quietly once it is closed.
    private func withHandle<T>(_ body: (Database) throws -> T) -> T? {
        guard let store else { return nil }
        return try? body(Database(name: name, directory: directory, store: store))
    }

    private func nextDue() -> Int64? { withHandle { try $0.nextExpiration() } ?? nil }

    private func purge() {
        _ = withHandle { db -> Int in
            guard let due = try db.nextExpiration(), due <= unixTimeNow() else { return 0 }
            let n = try db.purgeExpired()
            if n > 0 { Loggers.database.info("purged \(n) expired document(s) of \(name)") }
            return n
        }
    }
}
