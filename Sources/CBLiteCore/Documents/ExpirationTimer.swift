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
        ServiceThread.stop(monitor) {
            stopped = true
            defer { thread = nil }
            return thread
        }
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
