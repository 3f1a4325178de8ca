/// Validation callbacks per collection (the seeds' validation blocks): each sees every
/// new revision before it is stored and may reject it (403 with a message).
public typealias ValidatorFunction = (_ newJSON: String, _ currentJSON: String?) -> String?   // nil = accept, else reason

final class ValidatorRegistry: @unchecked Sendable {
    private final class Entry {
        let name: String
        let fn: ValidatorFunction
        var inFlight = 0
        init(name: String, fn: @escaping ValidatorFunction) { self.name = name; self.fn = fn }
    }

    private let monitor = Monitor()
    private var byCollection: [Int64: [Entry]] = [:]
    private var runningOn: [ThreadID] = []

    var isEmpty: Bool { monitor.locked { byCollection.isEmpty } }

    func hasValidators(_ collectionID: Int64) -> Bool { monitor.locked { byCollection[collectionID] != nil } }

    /// Sets (or with nil removes) a named validator; removal waits for running calls
    /// unless made from inside one.
    func set(_ name: String, collectionID: Int64, _ fn: ValidatorFunction?) {
        let me = ThreadID.current
        monitor.locked {
            var list = byCollection[collectionID] ?? []
            if let i = list.firstIndex(where: { $0.name == name }) {
                let old = list.remove(at: i)
                while old.inFlight > 0 && !runningOn.contains(me) { _ = monitor.wait(until: nil) }
            }
            if let fn { list.append(Entry(name: name, fn: fn)) }
            byCollection[collectionID] = list.isEmpty ? nil : list
        }
    }

    /// Runs every validator of the collection; throws 403 on the first rejection.
    func validate(collectionID: Int64, newJSON: () -> String, currentJSON: () -> String?) throws {
        let entries: [Entry] = monitor.locked {
            let list = byCollection[collectionID] ?? []
            for e in list { e.inFlight += 1 }
            if !list.isEmpty { runningOn.append(ThreadID.current) }
            return list
        }
        guard !entries.isEmpty else { return }
        var pending = entries[...]
        defer {
            monitor.locked {
                for e in pending { e.inFlight -= 1 }
                if let i = runningOn.firstIndex(of: ThreadID.current) { runningOn.remove(at: i) }
                monitor.broadcast()
            }
        }
        let new = newJSON()
        let current = currentJSON()
        while let e = pending.first {
            let verdict = e.fn(new, current)
            monitor.locked { e.inFlight -= 1; monitor.broadcast() }
            pending = pending.dropFirst()
            if let reason = verdict {
                throw CBLError(.forbidden, reason.isEmpty ? "rejected by validator \(e.name)" : reason)
            }
        }
    }
}

extension Collection {
    /// Registers (or with nil removes) a named validator for this collection, shared by
    /// every handle of the database in this process.
    public func setValidator(name: String, _ fn: ValidatorFunction?) throws {
        try check()
        guard !name.isEmpty else { throw CBLError.badRequest("validator name is empty") }
        store.validators.set(name, collectionID: id, fn)
    }
}
