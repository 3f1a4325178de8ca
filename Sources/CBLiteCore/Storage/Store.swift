import CSQLCipher
import Glibc
import Synchronization

/// One open database file, shared by every handle on it in this process:
/// one writer connection behind a recursive, thread-owned write lock, a pool of reader
/// connections (WAL lets them read while a write is in progress), the transaction
/// state, and the change notifier. Handles of one file share one Store, so a change
/// through one notifies the change observers of the others.
public final class Store: @unchecked Sendable {
    public let bundlePath: String
    public let filePath: String
    let busyTimeoutMs: Int
    let notifier = ChangeNotifier()
    let validators = ValidatorRegistry()
    let filters = FilterRegistry()
    /// Signalled after every commit, so changes feeds can wait instead of polling.
    let commits = Monitor()
    /// When this process opened the file (µs since 1970): CouchDB's instance_start_time.
    let openedAtMicros = unixTimeMicrosNow()
    /// Names this Store (this process's use of the file) in the purge log, so that its own
    /// watcher skips its own purges.
    let origin = Int64.random(in: 1...Int64.max)

    private var writer: Connection
    /// The encryption key every connection is opened with (nil: unencrypted). Behind a
    /// lock of its own: reader threads open connections while a re-key replaces it, and
    /// the change watcher reads it under `monitor` (so `monitor` cannot guard it).
    private let keyState: LockedValue<EncryptionKey?>
    var key: EncryptionKey? { keyState.withLock { $0 } }
    private let monitor = Monitor()         // guards the fields below
    private var owner: ThreadID?
    /// `owner`'s pthread_t (0: none), set with it under the lock and read without it: only
    /// the owning thread ever finds its own ID there, so "is it me" needs no lock.
    private let ownerThread = Atomic<UInt>(0)
    private var depth = 0
    private var readers: [Connection] = []
    private let idleReaders = ReaderSlots()
    /// Set under the lock; read without it by every read.
    private let closed = Atomic<Bool>(false)
    /// Bumped before and after a re-key's file swap (odd while it runs). A reader busy
    /// during the swap gives back a connection to the old file, with the old key: it must
    /// be dropped, not reused (its reads would miss every later write).
    private let fileGeneration = Atomic<Int>(0)
    private(set) var txn: TransactionState?

    /// Collection IDs deleted in this process: handles to them fail with 404.
    private var deletedCollections = Set<Int64>()
    /// How many: every call checks its collection, and while none was deleted (nearly
    /// always) that check reads this atomically instead of taking the store's lock, which
    /// reader threads would otherwise contend on.
    private let deletedCollectionCount = Atomic<Int>(0)
    var expiration: ExpirationTimer?
    /// Delivers other processes' commits to change observers (started by the first observer).
    private var watcher: ExternalChangeWatcher?
    /// Copies the WAL into the file off the committing thread (nil: read-only).
    private(set) var walCheckpointer: WALCheckpointer?

    /// Opened read-only: every write fails with 403 and nothing on disk changes.
    let readOnly: Bool
    /// Read-only and SQLite could not make the WAL's -shm file (a read-only directory):
    /// connections open the file as immutable.
    private var immutable = false

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
    private func configureWriter() throws {
        try writer.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
        if walCheckpointer == nil {
            walCheckpointer = WALCheckpointer(label: filePath) { [weak self] in
                guard let self else { throw CBLError.badRequest("database is closed") }
                return try Connection(path: filePath, create: false, busyTimeoutMs: busyTimeoutMs, key: key)
            }
        }
        walCheckpointer!.attach(to: writer)
    }

    /// Runs `body` with the WAL checkpointer's thread stopped and its connection closed.
    private func withCheckpointsStopped<T>(_ body: () throws -> T) rethrows -> T {
        guard let walCheckpointer else { return try body() }
        return try walCheckpointer.whileStopped(body)
    }

    /// A store dropped without close() (tests) still stops the WAL checkpointer's thread.
    deinit { walCheckpointer?.stop() }

    // MARK: write lock and transactions

    /// True when the calling thread holds the write lock (is inside a transaction).
    var ownedByCurrentThread: Bool { ownerThread.load(ordering: .relaxed) == ThreadID.current.raw }

    /// The calling thread's open transaction (nil when it has none, or the database is closed).
    var currentTransaction: TransactionState? { ownedByCurrentThread ? txn : nil }

    private func acquire(timeoutMs: Int) throws {
        let me = ThreadID.current
        let started = MonotonicTime.now()
        let deadline = started.adding(milliseconds: timeoutMs)
        let waited: Bool = try monitor.locked {
            if closed.load(ordering: .relaxed) { throw CBLError.badRequest("database is closed") }
            var waited = false
            while let o = owner, o != me {
                waited = true
                if !monitor.wait(until: deadline) && owner != nil && owner != me {
                    Loggers.storage.info("gave up waiting \(timeoutMs) ms for the write lock of \(filePath): another thread holds a transaction open")
                    throw CBLError(.busy, "database is busy: another thread holds a transaction open longer than \(timeoutMs) ms")
                }
                if closed.load(ordering: .relaxed) { throw CBLError.badRequest("database is closed") }
            }
            owner = me
            ownerThread.store(me.raw, ordering: .relaxed)
            depth += 1
            return waited
        }
        if waited {
            let ms = MonotonicTime.now().milliseconds - started.milliseconds
            if ms >= 100 { Loggers.storage.info("waited \(ms) ms for the write lock of \(filePath)") }
            else { Loggers.storage.debug("waited \(ms) ms for the write lock of \(filePath)") }
        }
    }

    private func releaseAll() {
        monitor.locked {
            owner = nil
            ownerThread.store(0, ordering: .relaxed)
            depth = 0
            monitor.broadcast()
        }
    }

    /// Begins (or joins, on the same thread) a transaction. `timeoutMs` bounds the wait
    /// for the lock, held in this process or (through SQLite's busy handler) by another.
    public func begin(timeoutMs: Int? = nil) throws {
        try refuseIfReadOnly()
        let timeout = timeoutMs ?? busyTimeoutMs
        try acquire(timeoutMs: timeout)
        if monitor.locked({ depth }) == 1 {
            do {
                writer.setBusyTimeout(timeout)
                try writer.prepare("BEGIN IMMEDIATE").run()
            } catch {
                releaseAll()
                throw error
            }
            txn = TransactionState()
        }
    }

    func refuseIfReadOnly() throws {
        if readOnly { throw CBLError(.forbidden, "the database was opened read-only") }
    }

    private func requireOwner(_ what: String) throws {
        try monitor.locked {
            guard depth > 0 else { throw CBLError(.notAcceptable, "\(what) without a transaction in progress") }
            guard owner == ThreadID.current else {
                throw CBLError(.notAcceptable, "\(what) from a thread that does not own the transaction")
            }
        }
    }

    /// Ends one level; the outermost commits, then delivers notifications.
    public func commit() throws {
        try requireOwner("commit")
        let remaining = monitor.locked { () -> Int in depth -= 1; return depth }
        if remaining > 0 { return }
        let state = txn
        let watching = monitor.locked { watcher }
        if let state, let watching { watching.noteOwn(state.changes) }
        do {
            if let state {
                try state.flushCollectionMeta(writer)
                // Attachment files put in the transaction become durable before the
                // COMMIT that may name them (group commit: Blobs/PendingBlobs.swift).
                try state.pendingBlobs?.install()
            }
            try writer.prepare("COMMIT").run()
        } catch {
            if let state, let watching { watching.forgetOwn(state.changes) }
            state?.pendingBlobs?.discard()
            try? writer.exec("ROLLBACK")
            txn = nil
            releaseAll()
            throw error
        }
        txn = nil
        if let state, !state.changes.isEmpty { notifier.enqueue(state.changes) }   // commit order
        releaseAll()
        commits.locked { commits.broadcast() }
        notifier.deliverPending()
    }

    /// Rolls back the whole transaction (every nesting level); nothing is notified.
    public func abort() throws {
        try requireOwner("abort")
        try? writer.exec("ROLLBACK")
        txn?.pendingBlobs?.discard()
        txn = nil
        releaseAll()
    }

    /// Depth of the calling thread's transaction (0 when none).
    public var transactionDepth: Int { monitor.locked { owner == ThreadID.current ? depth : 0 } }

    /// Runs `body` as one atomic write: its own transaction, or a savepoint inside the
    /// caller's transaction (so a failed operation leaves no trace in it either).
    /// `savepoint: false` is for operations whose only change is their last statement
    /// (a failure before it writes nothing, and SQLite undoes a failed statement): they
    /// skip the savepoint's two extra statements on the hot path of batched saves.
    func write<T>(savepoint: Bool = true, timeoutMs: Int? = nil, _ body: (Connection, TransactionState) throws -> T) throws -> T {
        if ownedByCurrentThread, let state = txn {
            if !savepoint { return try body(writer, state) }
            let snapshot = state.snapshot()
            try writer.prepare("SAVEPOINT op").run()
            do {
                let r = try body(writer, state)
                try writer.prepare("RELEASE op").run()
                return r
            } catch {
                try? writer.exec("ROLLBACK TO op")
                try? writer.exec("RELEASE op")
                state.restore(snapshot)
                throw error
            }
        }
        try begin(timeoutMs: timeoutMs)
        let r: T
        do {
            r = try body(writer, txn!)
        } catch {
            try? abort()
            throw error
        }
        try commit()
        return r
    }

    /// Runs `body` on a connection that sees the latest committed state, or the calling
    /// thread's own uncommitted writes when it is inside a transaction.
    func read<T>(_ body: (Connection) throws -> T) throws -> T {
        if ownedByCurrentThread { return try body(writer) }
        if closed.load(ordering: .acquiring) { throw CBLError.badRequest("database is closed") }
        let conn = try takeReader()
        defer { giveBack(conn) }
        return try body(conn)
    }

    /// The thread's idle reader, else one from the pool, else another thread's idle one,
    /// else a new one; readers of an earlier file generation met on the way are dropped.
    private func takeReader() throws -> Connection {
        let generation = fileGeneration.load(ordering: .acquiring)
        var candidate = idleReaders.take()
        while true {
            if let c = candidate, c.fileGeneration == generation { return c }
            guard let next = monitor.locked({ readers.popLast() }) ?? idleReaders.takeAny() else { break }
            candidate = next
        }
        return try openReader()
    }

    /// A new reader connection. One opened while a re-key swaps the file (the generation
    /// is odd then) can meet the new file with the old key, or no file: it fails, and is
    /// tried again once the swap is over, with the new key.
    private func openReader() throws -> Connection {
        let deadline = MonotonicTime.now().adding(milliseconds: max(busyTimeoutMs, 1000))
        while true {
            let generation = fileGeneration.load(ordering: .acquiring)
            do {
                let c = try Connection(path: filePath, create: false, busyTimeoutMs: busyTimeoutMs, key: key,
                                       readOnly: readOnly, immutable: immutable)
                c.fileGeneration = generation
                return c
            } catch {
                let now = fileGeneration.load(ordering: .acquiring)
                let swapped = now != generation || now & 1 == 1
                guard swapped, !closed.load(ordering: .acquiring), MonotonicTime.now() < deadline else { throw error }
                // A swap still under way: wait for its end (changeKey moves the generation
                // on, then wakes the monitor's waiters), not a poll.
                monitor.locked {
                    while fileGeneration.load(ordering: .acquiring) == now, now & 1 == 1, !closed.load(ordering: .relaxed),
                          monitor.wait(until: deadline) {}
                }
            }
        }
    }

    /// Returns a reader to the thread's idle slot or the pool; after close, or when the
    /// file was swapped since it was opened, drops it.
    private func giveBack(_ conn: Connection) {
        guard conn.fileGeneration == fileGeneration.load(ordering: .acquiring) else { return }
        if idleReaders.offer(conn) {
            // close() may have drained the slot just before: look again, drop it if so.
            if closed.load(ordering: .acquiring) { idleReaders.drainMine() }
            return
        }
        monitor.locked { if !closed.load(ordering: .relaxed) { readers.append(conn) } }
    }

    /// Runs `body` on the writer connection outside any transaction (VACUUM, checks).
    func exclusive<T>(timeoutMs: Int? = nil, _ body: (Connection) throws -> T) throws -> T {
        if ownedByCurrentThread { throw CBLError(.notAcceptable, "not allowed inside a transaction") }
        try refuseIfReadOnly()
        try acquire(timeoutMs: timeoutMs ?? busyTimeoutMs)
        defer { releaseAll() }
        return try body(writer)
    }

    /// Starts delivering other processes' commits to this file's change observers (idempotent).
    /// Without a thread or a connection to give, observers see only this process's changes.
    func watchOtherProcesses() {
        monitor.locked {
            guard watcher == nil, !closed.load(ordering: .relaxed) else { return }
            do { watcher = try ExternalChangeWatcher(store: self) } catch {
                Loggers.changes.warning("cannot watch for other processes' commits to \(filePath): \(error)")
            }
        }
    }

    func close() {
        let watching: ExternalChangeWatcher? = monitor.locked { defer { watcher = nil }; return watcher }
        watching?.stop()                          // first: it may poke the expiration timer
        expiration?.stop()
        expiration = nil
        walCheckpointer?.stop()                   // its connection closes first: the writer's close is the last
        let writerToClose: Connection? = monitor.locked {
            closed.store(true, ordering: .releasing)
            readers.removeAll()
            monitor.broadcast()
            return owner == nil ? writer : nil     // an open transaction keeps it until deinit
        }
        idleReaders.drain()
        writerToClose?.close()                    // releases the file (WAL checkpoint) now
    }

    // MARK: encryption

    /// Re-encrypts the database with `newKey` (nil: decrypts it): exports every table into
    /// a new file keyed with `newKey` (sqlcipher_export), then atomically replaces the
    /// old file and reopens. The old file stays intact until the rename.
    func changeKey(_ newKey: EncryptionKey?, timeoutMs: Int? = nil,
                   beforeSwap: (Connection) throws -> Void = { _ in }, afterSwap: () throws -> Void = {}) throws {
        // The WAL checkpointer's connection would hold the old file open: stopped meanwhile.
        try exclusive(timeoutMs: timeoutMs) { conn in try withCheckpointsStopped {
            try beforeSwap(conn)
            let temp = filePath + ".rekey"
            for suffix in ["", "-wal", "-shm", "-journal"] { try? FileSystem.remove(temp + suffix) }
            try conn.exec("PRAGMA wal_checkpoint(TRUNCATE)")
            let attach = try conn.prepareUncached("ATTACH DATABASE ? AS rekeyed KEY ?")
            attach.bind(1, temp)
            attach.bindText(2, newKey?.sqlcipherKeyBytes ?? [])
            try attach.run()
            do {
                let export = try conn.prepareUncached("SELECT sqlcipher_export('rekeyed')")
                _ = try export.step()
                export.reset()
                let version = try conn.queryInt("PRAGMA user_version") ?? 0
                try conn.exec("PRAGMA rekeyed.user_version = \(version)")
                try conn.exec("DETACH DATABASE rekeyed")
            } catch {
                try? conn.exec("DETACH DATABASE rekeyed")
                try? FileSystem.remove(temp)
                throw error
            }
            // Swap files with no idle connection open on the old one. A reader busy now is
            // dropped when it gives its connection back: the generation moves on before the
            // swap, and again after it for readers opened on the old file in between.
            fileGeneration.add(1, ordering: .acquiringAndReleasing)
            monitor.locked { readers.removeAll() }
            idleReaders.drain()
            defer {
                fileGeneration.add(1, ordering: .acquiringAndReleasing)
                monitor.locked { monitor.broadcast() }      // readers waiting in openReader
            }
            writer = try Connection(path: ":memory:", create: true, busyTimeoutMs: 0)
            do {
                for suffix in ["-wal", "-shm"] { try? FileSystem.remove(filePath + suffix) }
                try FileSystem.rename(temp, filePath)
            } catch {
                writer = try Connection(path: filePath, create: true, busyTimeoutMs: busyTimeoutMs, key: key)
                try configureWriter()
                throw error
            }
            keyState.withLock { $0 = newKey }
            writer = try Connection(path: filePath, create: true, busyTimeoutMs: busyTimeoutMs, key: newKey)
            try configureWriter()
            monitor.locked { watcher }?.reopen()
            try afterSwap()
        } }
    }

    // MARK: collections

    func markCollectionDeleted(_ id: Int64) {
        monitor.locked {
            if deletedCollections.insert(id).inserted { deletedCollectionCount.add(1, ordering: .releasing) }
        }
    }
    func isCollectionDeleted(_ id: Int64) -> Bool {
        if deletedCollectionCount.load(ordering: .acquiring) == 0 { return false }
        return monitor.locked { deletedCollections.contains(id) }
    }

    /// last_seq and doc_count, including the calling thread's uncommitted changes.
    func collectionMeta(_ id: Int64) throws -> CollectionMeta {
        try read { conn in try collectionMeta(id, reading: conn) }
    }

    /// The same, from inside `read`, on the connection it gave.
    func collectionMeta(_ id: Int64, reading conn: Connection) throws -> CollectionMeta {
        if ownedByCurrentThread, let state = txn { return try state.meta(id, writer) }
        return try CollectionMeta.load(id, conn)
    }
}

// MARK: settings kept in the `info` table
extension Store {
    func maxRevTreeDepth() throws -> Int {
        Int(try read { try $0.queryInt("SELECT value FROM info WHERE key='max_rev_tree_depth'") } ?? 20)
    }

    func setMaxRevTreeDepth(_ depth: Int) throws {
        try write { conn, txn in
            let s = try conn.prepare("INSERT OR REPLACE INTO info(key, value) VALUES ('max_rev_tree_depth', ?)")
            s.bind(1, Int64(depth))
            try s.run()
            txn.resetMaxDepth()
        }
    }
}
