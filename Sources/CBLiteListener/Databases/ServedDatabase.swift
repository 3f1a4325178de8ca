import CBLiteCore

/// The listener's hold on a database it serves, registered as one of the database's
/// services: closing the database (its owner's `cbl_db_close`, or the listener's own close
/// of a directory database) ends the `_changes` feeds waiting on it at once, as it stops
/// live queries and replicators, instead of each feed finding it closed at its next wake-up.
///
/// Thread-safe. The registry keeps it while it serves the database; the database's stop
/// list holds it weakly.
final class ServedDatabase: Service, @unchecked Sendable {
    let database: Database
    var serviceName: String { "listener" }
    /// How long a close waits for the feeds it ended to send their last line.
    static let feedEndTimeoutMs = 1000

    private let monitor = Monitor()
    private var feeds: [ObjectIdentifier: Cancellation] = [:]
    private var stopped = false
    private var registration: ServiceRegistration?

    /// Registers with `database`; one already closed is served as closed (404 per request).
    init(_ database: Database) {
        self.database = database
        registration = try? database.register(self)
        if registration == nil { stopped = true }
    }

    /// A feed starts waiting on this database; cancelled at once when it is closed.
    func feedStarted(_ cancellation: Cancellation) {
        let closed: Bool = monitor.locked {
            if !stopped { feeds[ObjectIdentifier(cancellation)] = cancellation }
            return stopped
        }
        if closed { cancellation.cancel() }
    }

    func feedEnded(_ cancellation: Cancellation) {
        monitor.locked {
            if feeds.removeValue(forKey: ObjectIdentifier(cancellation)) != nil { monitor.broadcast() }
        }
    }

    /// The database closes: ends its feeds and waits (bounded: a feed may be blocked on a
    /// slow client) until they have written their last line.
    func stop() {
        let waiting: [Cancellation] = monitor.locked {
            stopped = true
            registration = nil
            return Array(feeds.values)
        }
        for c in waiting { c.cancel() }
        let deadline = MonotonicTime.now().adding(milliseconds: Self.feedEndTimeoutMs)
        monitor.locked { while !feeds.isEmpty && monitor.wait(until: deadline) {} }
    }

    /// The listener lets go of the database (serves another, or stops): its close no
    /// longer concerns this listener.
    func release() {
        let r: ServiceRegistration? = monitor.locked { defer { registration = nil }; return registration }
        if let r { database.unregister(r) }
    }
}
