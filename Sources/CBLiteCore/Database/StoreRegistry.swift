/// Open Stores by bundle path: every handle of one database in this process shares one.
final class StoreRegistry: @unchecked Sendable {
    static let shared = StoreRegistry()

    private let monitor = Monitor()
    private var stores: [String: (store: Store, handles: Int)] = [:]

    func acquire(bundlePath: String, create: Bool, busyTimeoutMs: Int, key: EncryptionKey?,
                 readOnly: Bool = false) throws -> Store {
        try monitor.locked {
            if let entry = stores[bundlePath] {
                // One open file per database: its handles are all read-only or all read-write.
                guard entry.store.readOnly == readOnly else {
                    throw CBLError(.notAcceptable, entry.store.readOnly
                        ? "the database is open read-only in this process: close those handles to open it read-write"
                        : "the database is open read-write in this process: use that handle, or close it to open read-only")
                }
                // Handles share the open file: a second handle must know the same key.
                guard entry.store.key == key else {
                    throw CBLError(.unauthorized, key == nil ? "the database is encrypted: an encryption key is required"
                                                             : "wrong encryption key")
                }
                stores[bundlePath] = (entry.store, entry.handles + 1)
                return entry.store
            }
            let store = try Store(bundlePath: bundlePath, filePath: bundlePath + "/" + DatabaseName.sqliteFile,
                                  create: create, busyTimeoutMs: busyTimeoutMs, key: key, readOnly: readOnly)
            stores[bundlePath] = (store, 1)
            return store
        }
    }

    /// Drops one handle; the last one closes the Store.
    func release(_ store: Store) {
        let last: Bool = monitor.locked {
            guard let entry = stores[store.bundlePath] else { return false }
            if entry.handles <= 1 {
                stores[store.bundlePath] = nil
                return true
            }
            stores[store.bundlePath] = (entry.store, entry.handles - 1)
            return false
        }
        if last { store.close() }
    }

    func isOpen(_ bundlePath: String) -> Bool { monitor.locked { stores[bundlePath] != nil } }

    func handleCount(_ bundlePath: String) -> Int { monitor.locked { stores[bundlePath]?.handles ?? 0 } }
}
