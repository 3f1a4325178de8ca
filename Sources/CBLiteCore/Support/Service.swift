/// Something that runs on a database and must end before it closes: on a handle, live
/// queries, replicators and a listener's hold on a database it serves; on the file, the
/// change watcher, the expiration timer and the WAL checkpointer. Each registers in its
/// Store's one stop list (`ServiceList`) when it starts; closing stops them newest first,
/// as Couchbase Lite C's CBLActiveService. Only starting and stopping go through this
/// protocol: the store's hot paths keep their typed references.
public protocol Service: AnyObject, Sendable {
    /// What it is, for logs ("live query", "replicator").
    var serviceName: String { get }

    /// Ends the service and returns once none of its work runs, except when called from
    /// the service's own thread (a callback stopping its own service), which must not wait
    /// for itself. Idempotent; callable from any thread, never under an engine lock.
    func stop()
}

/// What `Database.register` gives back, for `Database.unregister` when the service ends
/// before the database closes.
public struct ServiceRegistration: Hashable, Sendable {
    let id: Int
}
