/// Reads: the calling thread's own transaction, else a reader connection from the pool
/// (WAL lets readers run beside the writer).
extension Store {
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
}
