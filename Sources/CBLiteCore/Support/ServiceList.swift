/// The services running on one database file, in the order they started: a Store's one
/// stop list. An entry belongs to a handle (stopped when that handle closes) or to the
/// file (stopped when its last handle closes); either way newest first, since a service
/// may use those started before it (the watcher pokes the expiration timer, every commit
/// reaches the WAL checkpointer, a live query reads through its handle's file).
///
/// The list holds its services weakly, as the close hooks it replaces did: a live query
/// or a replicator dropped by its owner still goes away (with its threads), and a
/// service the list outlives is skipped. Thread-safe. Stops run outside the list's lock,
/// so a service's stop may call back into the library (and unregister itself: a no-op,
/// its entry is gone by then).
final class ServiceList: @unchecked Sendable {
    private struct Entry {
        let id: Int
        let owner: ObjectIdentifier?
        weak var service: (any Service)?
    }

    private let monitor = Monitor()
    private var entries: [Entry] = []
    private var nextID = 0
    private var closed = false

    /// Adds `service`, owned by the handle `owner` (nil: the file). Throws once the file's
    /// services were stopped: the caller then stops it itself.
    func add(_ service: any Service, owner: AnyObject?) throws -> ServiceRegistration {
        try monitor.locked {
            if closed { throw CBLError.badRequest("database is closed") }
            nextID += 1
            entries.removeAll { $0.service == nil }
            entries.append(Entry(id: nextID, owner: owner.map(ObjectIdentifier.init), service: service))
            return ServiceRegistration(id: nextID)
        }
    }

    /// Removes a service that ended on its own; unknown registrations are ignored.
    func remove(_ registration: ServiceRegistration) {
        monitor.locked { entries.removeAll { $0.id == registration.id } }
    }

    /// Stops the services of the handle `owner`, newest first; returns their names in the
    /// order they were stopped.
    @discardableResult
    func stop(owner: AnyObject) -> [String] {
        let key = ObjectIdentifier(owner)
        return stop(monitor.locked {
            defer { entries.removeAll { $0.owner == key } }
            return entries.filter { $0.owner == key }
        })
    }

    /// Stops every service left (the file closes), newest first, and refuses new ones;
    /// returns their names in the order they were stopped.
    @discardableResult
    func stopAll() -> [String] {
        stop(monitor.locked {
            closed = true
            defer { entries.removeAll() }
            return entries
        })
    }

    private func stop(_ taken: [Entry]) -> [String] {
        taken.reversed().compactMap { e in
            guard let service = e.service else { return nil }
            service.stop()
            return service.serviceName
        }
    }

    /// How many services `owner` has registered (nil: every one), for tests.
    func count(owner: AnyObject?) -> Int {
        let key = owner.map(ObjectIdentifier.init)
        return monitor.locked { entries.filter { $0.service != nil && (key == nil || $0.owner == key) }.count }
    }

    /// The registered services' names in start order (tests).
    var names: [String] { monitor.locked { entries.compactMap { $0.service?.serviceName } } }
}
