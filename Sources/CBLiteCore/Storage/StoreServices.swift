/// What runs on the file beside the handles (the change watcher, the expiration timer,
/// the WAL checkpointer), and the close that stops it.
extension Store {
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
        walCheckpointer?.stop()                      // its connection closes first: the writer's close is the last
        let writerToClose: Connection? = monitor.locked {
            closed.store(true, ordering: .releasing)
            readers.removeAll()
            monitor.broadcast()
            return owner == nil ? writer : nil     // an open transaction keeps it until deinit
        }
        idleReaders.drain()
        writerToClose?.close()                    // releases the file (WAL checkpoint) now
    }

    /// Runs `body` with the WAL checkpointer's thread stopped and its connection closed.
    func withCheckpointsStopped<T>(_ body: () throws -> T) rethrows -> T {
        guard let walCheckpointer else { return try body() }
        return try walCheckpointer.whileStopped(body)
    }
}
