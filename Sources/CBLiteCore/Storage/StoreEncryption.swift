/// Changing the encryption key: the file is exported under the new key and swapped in
/// while no connection, reader or checkpointer has the old one open.
extension Store {
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
}
