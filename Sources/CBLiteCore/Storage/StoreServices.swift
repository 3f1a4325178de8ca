/// What runs on the file beside the handles (the change watcher, the expiration timer,
/// the WAL checkpointer), and the close that stops it.
extension Store {
    /// Starts delivering other processes' commits to this file's change observers (idempotent).
    /// Without a thread or a connection to give, observers see only this process's changes.
    func watchOtherProcesses() {
        let refused: ExternalChangeWatcher? = monitor.locked {
            guard watcher == nil, !closed.load(ordering: .relaxed) else { return nil }
            let w: ExternalChangeWatcher
            do { w = try ExternalChangeWatcher(store: self) } catch {
                Loggers.changes.warning("cannot watch for other processes' commits to \(filePath): \(error)")
                return nil
            }
            guard (try? services.add(w, owner: nil)) != nil else { return w }   // closing meanwhile
            watcher = w
            return nil
        }
        refused?.stop()                           // outside the lock: its thread reads through this store
    }

    /// Makes the expiration timer (once per file), a service of the file.
    func startExpirationTimer(_ db: Database) {
        monitor.locked {
            guard expiration == nil else { return }
            let timer = ExpirationTimer(store: self, directory: db.directory, name: db.name)
            if (try? services.add(timer, owner: nil)) != nil { expiration = timer }   // no thread runs yet
        }
    }

    /// The last handle closed: stops the file's services newest first (the watcher, which
    /// may poke the expiration timer, then the timer, then the WAL checkpointer, whose
    /// connection closes before the writer's), then closes the connections.
    func close() {
        let stopped = services.stopAll()
        monitor.locked { watcher = nil }
        expiration = nil
        if !stopped.isEmpty { Loggers.storage.debug("\(filePath): stopped \(stopped.joined(separator: ", "))") }
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
