/// Named filter functions for the changes feed and push replication (the seeds'
/// `setFilterNamed`): a filter sees each changed document's JSON and the caller's
/// parameters and says whether the change passes. Registered per database file, so
/// every handle (the listener's too) sees the same filters.
public typealias ChangeFilterFunction = @Sendable (_ docJSON: [UInt8], _ params: JSONObject) -> Bool

final class FilterRegistry: @unchecked Sendable {
    private final class Entry {
        let fn: ChangeFilterFunction
        var inFlight = 0
        init(_ fn: @escaping ChangeFilterFunction) { self.fn = fn }
    }

    private let monitor = Monitor()
    private var byName: [String: Entry] = [:]
    private var runningOn: [ThreadID] = []

    /// Sets (nil: removes) a filter. Replacing or removing one waits for its running
    /// calls, unless made from inside one, so a caller may free what the old one used.
    func set(_ name: String, _ fn: ChangeFilterFunction?) {
        let me = ThreadID.current
        monitor.locked {
            if let old = byName.removeValue(forKey: name) {
                while old.inFlight > 0 && !runningOn.contains(me) { _ = monitor.wait(until: nil) }
            }
            if let fn { byName[name] = Entry(fn) }
        }
    }

    /// Whether a filter is registered as `name`.
    func contains(_ name: String) -> Bool { monitor.locked { byName[name] != nil } }

    /// Runs `body` with the filter named `name`; 404 when there is none.
    func with<T>(_ name: String, _ body: (@escaping ChangeFilterFunction) throws -> T) throws -> T {
        let entry: Entry = try monitor.locked {
            guard let e = byName[name] else { throw CBLError.notFound("no filter named \"\(name)\" is registered") }
            e.inFlight += 1
            runningOn.append(ThreadID.current)
            return e
        }
        defer {
            monitor.locked {
                entry.inFlight -= 1
                if let i = runningOn.firstIndex(of: ThreadID.current) { runningOn.remove(at: i) }
                monitor.broadcast()
            }
        }
        return try body(entry.fn)
    }
}

extension Database {
    /// Registers (nil: removes) the filter `name`, for every handle of this database.
    public func setFilter(name: String, _ filter: ChangeFilterFunction?) throws {
        try checkOpen()
        guard !name.isEmpty, name.utf8.count <= 255, !name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw CBLError.badRequest("a filter name is 1 to 255 bytes without control characters")
        }
        store.filters.set(name, filter)
    }
}
