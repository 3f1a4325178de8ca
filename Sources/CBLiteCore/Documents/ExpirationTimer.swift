/// Purges a database file's expired documents while it is open in this process, on a
/// thread that runs only while an expiration is pending: it sleeps until the next one is
/// due (or a minute, or a poke), purges what has expired, and ends once none is left.
///
/// Why the thread comes and goes: any second thread costs a single-threaded host on every
/// file-descriptor system call (Linux then counts references on the file table; measured
/// here, ~58 ns a call, ~3.7% of the benchmark's read phase), so a database with no
/// expirations, the common case, runs none. The thread is started by `poke`: at open when
/// the file holds a pending expiration, when this process sets one, and when the change
/// watcher sees another process commit (`pokeIfPending`). Couchbase Lite's Housekeeper
/// works the same way: it schedules from the file at open and from its own process's
/// changes.
final class ExpirationTimer: Service, @unchecked Sendable {
    var serviceName: String { "expiration timer" }
    private let monitor = Monitor()
    private var stopped = false
    private var poked = false
    private var thread: ServiceThread?
    private var noThread = false
    private weak var store: Store?
    private let directory: String
    private let name: String

    init(store: Store, directory: String, name: String) {
        self.store = store
        self.directory = directory
        self.name = name
    }

    /// Whether the thread runs now (tests).
    var isRunning: Bool { monitor.locked { thread != nil } }

    /// Something may have changed: look again, starting the thread unless it runs.
    func poke() {
        monitor.locked {
            poked = true
            monitor.broadcast()
            guard thread == nil, !stopped, !noThread else { return }
            do { thread = try ServiceThread { [self] in run() } } catch {
                // No thread to give: expired documents are purged when the database is
                // next opened (or compacted).
                noThread = true
                Loggers.database.warning("\(name): no thread for the expiration timer (\(error))")
            }
        }
    }

    /// Starts the thread only when the file holds a pending expiration (one indexed read
    /// on the caller's thread): for callers that do not know whether one was set.
    func pokeIfPending() {
        if monitor.locked({ thread != nil || stopped }) { return }
        if nextDue() != nil { poke() }
    }

    /// Stops the thread and waits for it, unless called from it (an observer closing the
    /// database while the timer delivers a purge).
    func stop() {
        ServiceThread.stop(monitor) {
            stopped = true
            defer { thread = nil }
            return thread
        }
    }

    private func run() {
        while true {
            let next = nextDue()
            let (end, ownThread): (Bool, ServiceThread?) = monitor.locked {
                if stopped { return (true, nil) }             // stop() joins (or detached) it
                if next == nil && !poked {
                    // Nothing pending: the thread ends (detached below); a poke starts another.
                    defer { thread = nil }
                    return (true, thread)
                }
                if !poked, let next {
                    let waitSeconds = max(0, min(60, next - unixTimeNow()))
                    if waitSeconds > 0 {
                        _ = monitor.wait(until: MonotonicTime.now().adding(milliseconds: Int(waitSeconds) * 1000 + 50))
                    }
                }
                poked = false
                return (stopped, nil)
            }
            if end {
                ownThread?.join()                             // from the thread itself: detaches it
                return
            }
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
