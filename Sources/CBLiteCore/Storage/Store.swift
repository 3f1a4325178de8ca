import CSQLCipher
import Glibc
import Synchronization

/// One open database file, shared by every handle on it in this process:
/// one writer connection behind a recursive, thread-owned write lock, a pool of reader
/// connections (WAL lets them read while a write is in progress), the transaction
/// state, and the change notifier. Handles of one file share one Store, so a change
/// through one notifies the change observers of the others.
///
/// By concern: this file opens the file and configures the writer; StoreTransactions.swift
/// has the write lock and transactions, StoreReaders.swift the reader pool,
/// StoreServices.swift what runs beside the handles and the close, StoreEncryption.swift
/// the key change, StoreMetadata.swift collections' bookkeeping and the `info` settings.
public final class Store: @unchecked Sendable {
    public let bundlePath: String
    public let filePath: String
    let busyTimeoutMs: Int
    let notifier = ChangeNotifier()
    let validators = ValidatorRegistry()
    let designValidators = DesignValidators()
    let designDocuments = DesignDocumentCache()
    let filters = FilterRegistry()
    /// Signalled after every commit, so changes feeds can wait instead of polling.
    let commits = Monitor()
    /// When this process opened the file (µs since 1970): CouchDB's instance_start_time.
    let openedAtMicros = unixTimeMicrosNow()
    /// Names this Store (this process's use of the file) in the purge log, so that its own
    /// watcher skips its own purges.
    let origin = Int64.random(in: 1...Int64.max)

    var writer: Connection
    /// The encryption key every connection is opened with (nil: unencrypted). Behind a
    /// lock of its own: reader threads open connections while a re-key replaces it, and
    /// the change watcher reads it under `monitor` (so `monitor` cannot guard it).
    let keyState: LockedValue<EncryptionKey?>
    var key: EncryptionKey? { keyState.withLock { $0 } }
    /// Set once the file is known to be at Schema.version (FormatUpgrade): later opens of
    /// the same file in this process skip the check.
    let formatIsCurrent = LockedValue(false)
    let monitor = Monitor()                 // guards the fields below
    var owner: ThreadID?
    /// `owner`'s pthread_t (0: none), set with it under the lock and read without it: only
    /// the owning thread ever finds its own ID there, so "is it me" needs no lock.
    let ownerThread = Atomic<UInt>(0)
    var depth = 0
    var readers: [Connection] = []
    let idleReaders = ReaderSlots()
    /// Set under the lock; read without it by every read.
    let closed = Atomic<Bool>(false)
    /// Bumped before and after a re-key's file swap (odd while it runs). A reader busy
    /// during the swap gives back a connection to the old file, with the old key: it must
    /// be dropped, not reused (its reads would miss every later write).
    let fileGeneration = Atomic<Int>(0)
    var txn: TransactionState?

    /// Collection IDs deleted in this process: handles to them fail with 404.
    var deletedCollections = Set<Int64>()
    /// How many: every call checks its collection, and while none was deleted (nearly
    /// always) that check reads this atomically instead of taking the store's lock, which
    /// reader threads would otherwise contend on.
    let deletedCollectionCount = Atomic<Int>(0)
    /// What runs on the file and on its handles, stopped at close newest first.
    let services = ServiceList()
    /// Set once, under `monitor`, by the first writable handle (StoreServices.swift).
    var expiration: ExpirationTimer?
    /// Delivers other processes' commits to change observers (started by the first observer).
    var watcher: ExternalChangeWatcher?
    /// Copies the WAL into the file off the committing thread (nil: read-only).
    private(set) var walCheckpointer: WALCheckpointer?

    /// Opened read-only: every write fails with 403 and nothing on disk changes.
    let readOnly: Bool
    /// Read-only and SQLite could not make the WAL's -shm file (a read-only directory):
    /// connections open the file as immutable.
    private(set) var immutable = false

    init(bundlePath: String, filePath: String, create: Bool, busyTimeoutMs: Int, key: EncryptionKey?,
         readOnly: Bool = false) throws {
        self.bundlePath = bundlePath
        self.filePath = filePath
        self.busyTimeoutMs = busyTimeoutMs
        self.keyState = LockedValue(key)
        self.readOnly = readOnly
        if readOnly {
            do {
                writer = try Connection(path: filePath, create: false, busyTimeoutMs: busyTimeoutMs, key: key, readOnly: true)
            } catch let e as CBLError where e.detail & 0xFF == SQLITE_CANTOPEN || e.detail & 0xFF == SQLITE_READONLY {
                Loggers.storage.info("\(filePath): read-only directory, opening the file as immutable")
                immutable = true
                writer = try Connection(path: filePath, create: false, busyTimeoutMs: busyTimeoutMs, key: key,
                                        readOnly: true, immutable: true)
            }
            Loggers.storage.debug("opened \(filePath) read-only\(immutable ? " (immutable)" : "")")
            return
        }
        // The writer may create files (ATTACH during a key change needs it); whether the
        // database may be created was decided by Database.open before this.
        writer = try Connection(path: filePath, create: true, busyTimeoutMs: busyTimeoutMs, key: key)
        try configureWriter()
        Loggers.storage.debug("opened \(filePath) (WAL\(key == nil ? "" : ", encrypted"), busy timeout \(busyTimeoutMs) ms)")
        try writer.exec("BEGIN IMMEDIATE")
        do {
            try writer.exec(Schema.base)
            if try writer.queryInt("SELECT value FROM info WHERE key='schema'") == nil {
                try writer.exec("INSERT INTO info(key, value) VALUES ('schema', \(Schema.version)), ('max_rev_tree_depth', 20)")
                formatIsCurrent.withLock { $0 = true }         // a new file: nothing to upgrade
            }
            // A stable identity for peers (checkpoints, the listener's database info).
            try writer.prepare("INSERT OR IGNORE INTO info(key, value) VALUES ('uuid', '\(FileSystem.uuid())')").run()
            if try writer.queryInt("SELECT id FROM collections WHERE id=1") == nil {
                try writer.exec("INSERT INTO collections(id, scope, name) VALUES (1, '_default', '_default')")
            }
            try writer.exec(Schema.createCollection(1))
            try writer.exec("COMMIT")
        } catch {
            try? writer.exec("ROLLBACK")
            throw error
        }
    }

    /// WAL mode, and checkpoints on the WAL checkpointer's thread instead of in commits.
    func configureWriter() throws {
        try writer.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
        if walCheckpointer == nil {
            walCheckpointer = WALCheckpointer(label: filePath) { [weak self] in
                guard let self else { throw CBLError.badRequest("database is closed") }
                return try Connection(path: filePath, create: false, busyTimeoutMs: busyTimeoutMs, key: key)
            }
            _ = try? services.add(walCheckpointer!, owner: nil)   // the first service: the list is new
        }
        walCheckpointer!.attach(to: writer)
    }

    /// A store dropped without close() (tests) still stops the WAL checkpointer's thread.
    deinit { walCheckpointer?.stop() }
}
