import CBLiteCore
import CouchWire

/// The databases a listener serves: handles given by the host (`serve(name:database:)`)
/// and, with a directory, that directory's databases, opened on first use (as LiteServ
/// did) and closed when the listener stops. A URL name `db.scope.collection` (or
/// `db.collection`, default scope) reaches a collection. Each database is held through a
/// ServedDatabase, registered with it, so that closing it ends its feeds at once.
final class DatabaseRegistry: @unchecked Sendable {
    let directory: String?
    private let lock = Monitor()
    private var given: [String: ServedDatabase] = [:]
    private var opened: [String: ServedDatabase] = [:]
    private var stopped = false

    init(directory: String?) { self.directory = directory }

    private var namesObserver: (@Sendable () -> Void)?
    /// Called after a database is created or deleted through the listener (not for
    /// collections): the DNS-SD advertisement lists the databases served.
    var onNamesChanged: (@Sendable () -> Void)? {
        get { lock.locked { namesObserver } }
        set { lock.locked { namesObserver = newValue } }
    }

    private var compression: AttachmentCompression?
    /// CouchDB's attachment compression on every database served (ServerConfig's).
    var attachmentCompression: AttachmentCompression? {
        get { lock.locked { compression } }
        set {
            let held: [ServedDatabase] = lock.locked {
                compression = newValue
                return Array(given.values) + Array(opened.values)
            }
            for h in held { h.database.attachmentCompression = newValue }
        }
    }

    /// A database about to be served, under the lock: with the served databases' settings.
    private func serving(_ database: Database) -> ServedDatabase {
        database.attachmentCompression = compression
        return ServedDatabase(database)
    }

    /// Splits a URL database name into (database, scope, collection).
    static func split(_ urlName: String) throws -> (db: String, scope: String?, collection: String?) {
        if !urlName.isEmpty && !urlName.utf8.contains(UInt8(ascii: ".")) { return (urlName, nil, nil) }  // the common case, on every request
        let parts = urlName.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !parts.contains(where: \.isEmpty) else {
            throw CouchError(status: 400, error: "illegal_database_name", reason: "Name: '\(urlName)'. Empty database, scope or collection name.")
        }
        switch parts.count {
        case 1: return (parts[0], nil, nil)
        case 2: return (parts[0], nil, parts[1])
        case 3: return (parts[0], parts[1], parts[2])
        default: throw CouchError(status: 400, error: "illegal_database_name", reason: "Name: '\(urlName)'. Use db, db.collection or db.scope.collection.")
        }
    }

    static func validate(_ name: String) throws {
        do { try DatabaseName.validate(name) } catch let e as CBLError {
            throw CouchError(status: 400, error: "illegal_database_name", reason: "Name: '\(name)'. \(e.message)")
        }
    }

    /// The host's call (not a request's): a bad name is the engine's 400, not an HTTP answer.
    func serve(name: String, database: Database?) throws {
        try DatabaseName.validate(name)
        let released: ServedDatabase? = lock.locked {
            defer { given[name] = database.map(serving) }
            return given[name]
        }
        released?.release()
    }

    /// The open database `name`; 404 when it is neither given nor in the directory.
    func database(_ name: String) throws -> Database { try served(name).database }

    /// The hold on the open database `name` (opening a directory database on first use).
    func served(_ name: String) throws -> ServedDatabase {
        try DatabaseRegistry.validate(name)
        var gone: ServedDatabase?
        defer { if let gone { try? gone.database.close() } }       // outside the lock: it ends the feeds
        return try lock.locked {
            guard !stopped else { throw CouchError(status: 503, error: "service_unavailable", reason: "The listener is stopping.") }
            if let held = given[name] {
                guard !held.database.isClosed else { throw CouchError.databaseNotFound }
                return held
            }
            let onDisk = directory.map { (try? Database.exists(name: name, directory: $0)) == true } ?? false
            if let held = opened[name], !held.database.isClosed {
                if onDisk { return held }
                // Its file left the served directory (deleted, moved, the directory gone):
                // the handle would go on writing into a file nobody sees again. Closed
                // and forgotten; the name is a 404 like any absent database.
                opened[name] = nil
                gone = held
                Loggers.listener.warning("served database \(name): its file is gone from \(directory ?? ""); closed")
            }
            guard let directory, onDisk else { throw CouchError.databaseNotFound }
            var options = OpenOptions()
            options.create = false
            let held = serving(try Database.open(name: name, directory: directory, options: options))
            opened[name] = held
            return held
        }
    }

    /// Whether the URL database name's database is open already (given, or opened by an
    /// earlier request): finding its collection then opens no file (served() only checks
    /// that the file is still there).
    func isOpen(_ urlName: String) -> Bool {
        guard let dbName = try? DatabaseRegistry.split(urlName).db else { return false }
        return lock.locked {
            if stopped { return false }
            if let held = given[dbName] ?? opened[dbName] { return !held.database.isClosed }
            return false
        }
    }

    /// How many databases are open now (given or opened), for `_stats`' `open_databases`.
    var openCount: Int {
        lock.locked {
            Set(given.filter { !$0.value.database.isClosed }.map(\.key))
                .union(opened.filter { !$0.value.database.isClosed }.map(\.key)).count
        }
    }

    /// The collection a URL database name stands for (404 when missing).
    func collection(_ urlName: String) throws -> Collection { try collectionAndHold(urlName).collection }

    /// The same, with the hold on its database (for a feed that waits on it).
    func collectionAndHold(_ urlName: String) throws -> (collection: Collection, hold: ServedDatabase) {
        let (dbName, scope, coll) = try DatabaseRegistry.split(urlName)
        let held = try served(dbName)
        guard let coll else { return (try held.database.defaultCollection(), held) }
        guard let c = try held.database.collection(scope: scope, name: coll) else { throw CouchError.databaseNotFound }
        return (c, held)
    }

    func exists(_ urlName: String) -> Bool { (try? collection(urlName)) != nil }

    /// PUT /db: creates a database in the directory, or a collection of an existing one.
    func create(_ urlName: String) throws {
        let (dbName, scope, coll) = try DatabaseRegistry.split(urlName)
        try DatabaseRegistry.validate(dbName)
        if let coll {
            let db = try database(dbName)
            if try db.collection(scope: scope, name: coll) != nil { throw CouchError.databaseExists }
            _ = try db.createCollection(scope: scope, name: coll)
            return
        }
        try lock.locked {
            if given[dbName] != nil { throw CouchError.databaseExists }
            guard let directory else {
                throw CouchError.forbidden("This listener serves given databases only; it cannot create one.")
            }
            if (try? Database.exists(name: dbName, directory: directory)) == true { throw CouchError.databaseExists }
            opened[dbName] = serving(try Database.open(name: dbName, directory: directory))
        }
        onNamesChanged?()
    }

    /// DELETE /db: deletes a directory database (or a collection).
    func delete(_ urlName: String) throws {
        let (dbName, scope, coll) = try DatabaseRegistry.split(urlName)
        if let coll {
            let db = try database(dbName)
            guard try db.collection(scope: scope, name: coll) != nil else { throw CouchError.databaseNotFound }
            try db.deleteCollection(scope: scope, name: coll)
            return
        }
        try DatabaseRegistry.validate(dbName)
        try lock.locked {
            if given[dbName] != nil { throw CouchError.forbidden("A database given to the listener cannot be deleted through it.") }
            guard let directory, (try? Database.exists(name: dbName, directory: directory)) == true else { throw CouchError.databaseNotFound }
            if let held = opened.removeValue(forKey: dbName), !held.database.isClosed { try? held.database.close() }
            try Database.delete(name: dbName, directory: directory)
        }
        onNamesChanged?()
    }

    /// Every served database name, sorted (`_all_dbs`).
    func allNames() -> [String] {
        var names = Set(lock.locked { given.filter { !$0.value.database.isClosed }.map(\.key) })
        if let directory, let listed = try? Database.list(directory: directory) { names.formUnion(listed) }
        return names.sorted()
    }

    /// Closes the databases this listener opened, which ends their feeds; lets go of the
    /// given ones (they stay the host's).
    func stop() {
        let (toClose, toRelease): ([ServedDatabase], [ServedDatabase]) = lock.locked {
            stopped = true
            defer { opened = [:] }
            return (Array(opened.values), Array(given.values))
        }
        for held in toClose where !held.database.isClosed { try? held.database.close() }
        for held in toRelease { held.release() }
    }
}
