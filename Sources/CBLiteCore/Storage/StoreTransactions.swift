/// The write lock and transactions: one writer at a time in this process, a recursive
/// lock owned by a thread, SAVEPOINTs for nested operations, notifications after COMMIT.
extension Store {
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
                if let lost = state.lostTo { throw lost }
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
            if let lost = state.lostTo { throw lost }
            do {
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
            } catch {
                noteRollback(state, after: error)
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

    /// After a failed operation inside a transaction: when SQLite rolled the whole
    /// transaction back (it does on an I/O error or a full disk), the transaction is lost.
    private func noteRollback(_ state: TransactionState, after error: Error) {
        guard !writer.isInTransaction, state.lostTo == nil else { return }
        let e = CBLError.wrapping(error)
        state.lostTo = CBLError(e.status, "the transaction was rolled back by this failure: \(e.message); abort it", detail: e.detail)
        Loggers.storage.warning("\(filePath): transaction lost: \(e)")
    }

    /// Runs `body` on the writer connection outside any transaction (VACUUM, checks).
    func exclusive<T>(timeoutMs: Int? = nil, _ body: (Connection) throws -> T) throws -> T {
        if ownedByCurrentThread { throw CBLError(.notAcceptable, "not allowed inside a transaction") }
        try refuseIfReadOnly()
        try acquire(timeoutMs: timeoutMs ?? busyTimeoutMs)
        defer { releaseAll() }
        return try body(writer)
    }
}
