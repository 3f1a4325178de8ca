import Synchronization

/// Options for opening a database (JSON in the C ABI).
public struct OpenOptions: Sendable {
    public var create = true
    public var busyTimeoutMs = 10_000
    public var encryptionKey: EncryptionKey?
    /// Opens without writing anything (no expiration timer, no clean-up); implies no create.
    public var readOnly = false

    public init() {}

    public init(json: String?) throws {
        guard let json else { return }
        let o = try JSONParser.parseObject(json, what: "options")
        for (k, v) in o.members {
            switch k {
            case "create": create = try v.boolOption(k)
            case "busy_timeout_ms": busyTimeoutMs = Int(try v.intOption(k, in: 0...3_600_000))
            case "read_only": readOnly = try v.boolOption(k)
            case "encryption_key":
                encryptionKey = v.isNull ? nil : try EncryptionKey(json: v)
            default:
                throw CBLError.badRequest("unknown option \"\(k)\"")
            }
        }
    }
}

/// A handle on an open database. Several handles may share one file (and one Store).
public final class Database: @unchecked Sendable {
    public let name: String
    public let directory: String
    let store: Store
    /// How long this handle's writes wait for the database's lock (its open option).
    let busyTimeoutMs: Int
    private let monitor = Monitor()
    /// Whether this handle is closed: set once, under `monitor` (with the transaction
    /// count, and so that no service registers after it); read without it, since every
    /// call checks it and reader threads sharing a handle would otherwise contend on this
    /// handle's lock.
    private let closedFlag = Atomic<Bool>(false)
    /// Transaction levels begun through this handle and not yet ended.
    private var ownTransactions = 0

    public var path: String { store.bundlePath }

    // MARK: opening, closing, deleting

    public static func open(name: String, directory: String?, options: OpenOptions = OpenOptions()) throws -> Database {
        try DatabaseName.validate(name)
        let create = options.create && !options.readOnly
        let dir = try resolveDirectory(directory, create: create)
        let bundle = dir + "/" + DatabaseName.bundleName(name)
        let exists = try checkBundle(bundle, name: name)
        if !exists {
            guard create else { throw CBLError.notFound("database \"\(name)\" does not exist in \(dir)") }
            try FileSystem.createDirectory(bundle)
        }
        let store: Store
        do {
            store = try StoreRegistry.shared.acquire(bundlePath: bundle, create: create,
                                                     busyTimeoutMs: options.busyTimeoutMs, key: options.encryptionKey,
                                                     readOnly: options.readOnly)
        } catch {
            // A database this call created but could not initialise leaves nothing behind.
            if !exists { try? FileSystem.remove(bundle) }
            throw error
        }
        let db = Database(name: name, directory: dir, store: store, busyTimeoutMs: options.busyTimeoutMs)
        if options.readOnly {
            Loggers.database.info("opened \(name) at \(bundle) read-only")
            return db
        }
        AttachmentRekey.recover(bundle: bundle, key: options.encryptionKey)
        // Temporary attachment files a crashed writer left (live writers hold a lock on theirs).
        BlobStore(directory: AttachmentRekey.attachments(bundle), key: options.encryptionKey).cleanTemporaryFiles()
        do {
            try db.upgradeFormat()
            try db.startExpiration()
        } catch {
            StoreRegistry.shared.release(store)
            throw error
        }
        Loggers.database.info("opened \(name) at \(bundle)")
        return db
    }

    /// Whether the bundle holds a database (false: none yet, it may be created). An existing
    /// bundle whose database file is missing or empty is an error, never a new database:
    /// creating one there would hide the loss of everything it held.
    static func checkBundle(_ bundle: String, name: String) throws -> Bool {
        let file = bundle + "/" + DatabaseName.sqliteFile
        if FileSystem.exists(file) {
            if FileSystem.fileSize(file) == 0 && FileSystem.fileSize(file + "-wal") <= 0 {
                throw CBLError(.internalError, "the database file of \"\(name)\" is empty (0 bytes): its data is lost or "
                               + "was never written; restore \(file) from a copy, or delete the database to start over",
                               detail: 26)
            }
            return true
        }
        guard FileSystem.exists(bundle) else { return false }
        // A bundle folder without its database file: a database whose file was lost (a
        // bundle is made with its file; a failed creation removes it).
        throw CBLError(.internalError, "the database file of \"\(name)\" is missing from \(bundle): restore "
                       + "\(DatabaseName.sqliteFile) from a copy, or delete the database to start over", detail: 26)
    }

    /// True when this handle was opened read-only (every write fails with 403).
    public var isReadOnly: Bool { store.readOnly }

    init(name: String, directory: String, store: Store, busyTimeoutMs: Int? = nil) {
        self.name = name
        self.directory = directory
        self.store = store
        self.busyTimeoutMs = busyTimeoutMs ?? store.busyTimeoutMs
    }

    /// The directory a call names: `directory`, or the default one when nil. 400 when it
    /// is empty (it would name the file system's root for the files inside it) or when
    /// there is no default.
    static func directoryArgument(_ directory: String?) throws -> String {
        let dir = try directory ?? DatabaseName.defaultDirectory()
        guard !dir.isEmpty else { throw CBLError.badRequest("directory is empty") }
        return dir
    }

    static func resolveDirectory(_ directory: String?, create: Bool) throws -> String {
        let dir = try directoryArgument(directory)
        if create { try FileSystem.createDirectory(dir) }
        guard FileSystem.isDirectory(dir) else { throw CBLError.notFound("directory \(dir) does not exist") }
        return try FileSystem.realPath(dir)
    }

    public var isClosed: Bool { closedFlag.load(ordering: .acquiring) }

    public func checkOpen() throws {
        if isClosed { throw CBLError.badRequest("database \"\(name)\" is closed") }
    }

    /// Closes this handle. 406 while a transaction begun through it is open.
    public func close() throws {
        try monitor.locked {
            if isClosed { throw CBLError.badRequest("database \"\(name)\" is already closed") }
            if ownTransactions > 0 {
                throw CBLError(.notAcceptable, "cannot close \"\(name)\": a transaction is open")
            }
            closedFlag.store(true, ordering: .releasing)
        }
        // Changes feeds waiting on this handle wake and find it closed while its services stop.
        store.commits.locked { store.commits.broadcast() }
        // Stop what runs on this handle, newest first (outside our lock: a stop waits for
        // its thread); the last handle's release stops the file's own.
        let stopped = store.services.stop(owner: self)
        StoreRegistry.shared.release(store)
        Loggers.database.info("closed \(name)\(stopped.isEmpty ? "" : " (stopped \(stopped.joined(separator: ", ")))")")
    }

    /// A stable identity of this database, made when it was created (a peer's checkpoints
    /// and the listener's database info name it).
    public var uuid: String {
        get throws {
            try checkOpen()
            guard let u = try store.read({ try $0.queryString("SELECT value FROM info WHERE key='uuid'") }) else {
                throw CBLError.internalError("the database has no uuid")
            }
            return u
        }
    }

    /// When this process opened the database file, in µs since 1970 (CouchDB's
    /// instance_start_time: a peer that sees it change knows the database was reopened).
    public var instanceStartTime: Int64 { store.openedAtMicros }

    /// Registers a service that runs on this handle (a live query, a replicator, a
    /// listener serving it) in the file's stop list: closing the handle stops it, newest
    /// first, before the close returns. The list holds it weakly. Fails (400) once closed.
    public func register(_ service: any Service) throws -> ServiceRegistration {
        try monitor.locked {                 // with close's flag: none registers after it
            if isClosed { throw CBLError.badRequest("database \"\(name)\" is closed") }
            return try store.services.add(service, owner: self)
        }
    }

    /// For a service that ended before the handle closes; harmless twice or after close.
    public func unregister(_ registration: ServiceRegistration) { store.services.remove(registration) }

    /// How many services are registered to stop when this handle closes (tests).
    var serviceCount: Int { store.services.count(owner: self) }

    /// Closes this handle and deletes the database's files; 503 when other handles in
    /// this process still have it open.
    public func delete() throws {
        try checkOpen()
        if StoreRegistry.shared.handleCount(store.bundlePath) > 1 {
            throw CBLError(.busy, "database \"\(name)\" is open through other handles; close them first")
        }
        try close()
        try FileSystem.remove(store.bundlePath)
    }

    public static func delete(name: String, directory: String?) throws {
        try DatabaseName.validate(name)
        let dir = try resolveDirectory(directory, create: false)
        let bundle = dir + "/" + DatabaseName.bundleName(name)
        guard FileSystem.exists(bundle) else { throw CBLError.notFound("database \"\(name)\" does not exist") }
        if StoreRegistry.shared.isOpen(bundle) {
            throw CBLError(.busy, "database \"\(name)\" is open in this process; close it first")
        }
        try FileSystem.remove(bundle)
    }

    /// Whether the database `name` has its file in `directory` (nil: the default); opens
    /// nothing. A missing directory gives false; 400 for an invalid name, an empty
    /// directory or no default directory.
    public static func exists(name: String, directory: String?) throws -> Bool {
        try DatabaseName.validate(name)
        let dir = try directoryArgument(directory)
        return FileSystem.exists(dir + "/" + DatabaseName.bundleName(name) + "/" + DatabaseName.sqliteFile)
    }

    /// The databases in `directory` (nil: the default), sorted; none when it is missing.
    /// 400 for an empty directory or no default one.
    public static func list(directory: String?) throws -> [String] {
        let dir = try directoryArgument(directory)
        return try FileSystem.list(dir).compactMap { file in
            guard let n = DatabaseName.name(fromBundle: file),
                  FileSystem.exists(dir + "/" + file + "/" + DatabaseName.sqliteFile) else { return nil }
            return n
        }.sorted()
    }

    /// Installs a prebuilt database bundle under `name` (the seeds' "replace database"),
    /// copying into a temporary folder first so nothing is ever left half-copied.
    public static func copy(from source: String, name: String, directory: String?) throws {
        try DatabaseName.validate(name)
        guard FileSystem.isDirectory(source), FileSystem.exists(source + "/" + DatabaseName.sqliteFile) else {
            throw CBLError.notFound("\(source) is not a database bundle")
        }
        let dir = try resolveDirectory(directory, create: true)
        let target = dir + "/" + DatabaseName.bundleName(name)
        guard !FileSystem.exists(target) else {
            throw CBLError(.preconditionFailed, "database \"\(name)\" already exists")
        }
        let temp = dir + "/." + DatabaseName.bundleName(name) + ".tmp-" + FileSystem.uuid()
        do {
            try FileSystem.copyTree(source, temp)
            try FileSystem.rename(temp, target)
        } catch {
            try? FileSystem.remove(temp)
            throw error
        }
    }

    /// Changes the encryption key (nil removes encryption; on a plain database a key adds
    /// it). Every handle of this process follows; no other process may have it open.
    public func changeEncryptionKey(_ key: EncryptionKey?) throws {
        try checkOpen()
        if store.transactionDepth > 0 { throw CBLError(.notAcceptable, "cannot change the key inside a transaction") }
        let bundle = store.bundlePath
        try store.changeKey(key, timeoutMs: busyTimeoutMs,
                            beforeSwap: { conn in try AttachmentRekey.stage(bundle: bundle, from: self.store.key, to: key, conn) },
                            afterSwap: { try AttachmentRekey.finish(bundle: bundle, key: key) })
        Loggers.database.info("changed the encryption of \(name)")
    }

    public var isEncrypted: Bool { store.key != nil }

    // MARK: transactions

    public func begin() throws {
        try checkOpen()
        try store.begin(timeoutMs: busyTimeoutMs)
        monitor.locked { ownTransactions += 1 }
    }

    public func commit() throws {
        try checkOpen()
        do {
            try store.commit()
        } catch let e as CBLError where e.status == .notAcceptable {
            throw e                      // not this thread's transaction: nothing changed
        } catch {
            monitor.locked { ownTransactions = 0 }   // a failed outermost commit rolled back
            throw error
        }
        monitor.locked { ownTransactions = max(0, ownTransactions - 1) }
    }

    public func abort() throws {
        try checkOpen()
        try store.abort()
        monitor.locked { ownTransactions = 0 }
    }

    /// Runs `body` in a transaction: commits when it returns true, aborts (409) when false
    /// or when it throws.
    public func inTransaction(_ body: () throws -> Bool) throws {
        try begin()
        let commitIt: Bool
        do {
            commitIt = try body()
        } catch {
            try? abort()
            throw error
        }
        if commitIt {
            try commit()
        } else {
            try abort()
            throw CBLError.conflict("transaction aborted by its body")
        }
    }

    // MARK: settings

    private let compression = Mutex<AttachmentCompression?>(nil)
    /// Which attachments get a gzip form kept beside them when attached, for CouchDB
    /// peers (nil: none, the default; the listener sets it on what it serves).
    public var attachmentCompression: AttachmentCompression? {
        get { compression.withLock { $0 } }
        set { compression.withLock { $0 = newValue } }
    }

    public var maxRevTreeDepth: Int {
        get throws {
            try checkOpen()
            return try store.maxRevTreeDepth()
        }
    }

    public func setMaxRevTreeDepth(_ depth: Int) throws {
        try checkOpen()
        guard depth >= 1 && depth <= 100_000 else { throw CBLError.badRequest("maxRevTreeDepth must be from 1 to 100000") }
        try store.setMaxRevTreeDepth(depth)
    }

    /// The database's `_security` object (SecurityObject); nil until one is set. One for
    /// all the database's collections.
    public var securityObject: SecurityObject? {
        get throws {
            try checkOpen()
            guard let text = try store.securityText() else { return nil }
            // The listener asks on every request of a user who is not a server admin: the
            // text is read each time (another process may have set it), parsed only when it
            // changed.
            if let known = parsedSecurity.withLock({ $0 }), known.text == text { return known.object }
            let object = try SecurityObject(json: text)
            parsedSecurity.withLock { $0 = (text, object) }
            return object
        }
    }
    private let parsedSecurity = Mutex<(text: String, object: SecurityObject)?>(nil)

    public func setSecurityObject(_ security: SecurityObject) throws {
        try checkOpen()
        try store.setSecurityText(security.jsonText)
    }

    // MARK: notifications

    public func setNotificationsBuffered(_ on: Bool) throws {
        try checkOpen()
        store.notifier.isBuffered = on
    }

    public func sendNotifications() throws {
        try checkOpen()
        store.notifier.flush()
    }

    public func waitForNotifications(timeoutMs: Int) throws {
        try checkOpen()
        guard store.notifier.waitIdle(timeoutMs: timeoutMs) else {
            throw CBLError(.busy, "notifications still pending after \(timeoutMs) ms")
        }
    }
}
