import CSQLCipher

/// Process-wide settings of the compiled-in SQLCipher, applied once before the first
/// connection opens (they are globals: setting them per connection raced with other
/// threads' connections, found by ThreadSanitizer). Page authentication uses HMAC-SHA256
/// (hardware-accelerated on current CPUs) instead of SQLCipher 4's default SHA512: the
/// format of cblite's encrypted files, ~1.3x faster encrypted reads. (SQLCipher's own
/// logging to stderr is compiled out: SQLCIPHER_OMIT_DEFAULT_LOGGING.)
private let sqlcipherConfigured: Bool = {
    _ = cblite_sqlite_configure()         // adaptive mutexes, no memory-mapped files; before the open below initializes SQLite
    var db: OpaquePointer?
    guard sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
        sqlite3_close_v2(db)
        return false
    }
    _ = sqlite3_exec(db, "PRAGMA cipher_default_hmac_algorithm = HMAC_SHA256", nil, nil, nil)
    sqlite3_close_v2(db)
    return true
}()

/// One SQLite (SQLCipher) connection with a statement cache. Not thread-safe: the
/// Store hands each connection to one thread at a time.
public final class Connection {
    let db: OpaquePointer
    private var cache: [String: Statement] = [:]
    /// The same statements, indexed by SQLText.number (numbers are dense: an array lookup
    /// instead of hashing, ~120 instructions a read; callgrind). Numbers past
    /// `maxNumbered` (a process with thousands of collection tables) use `cache` alone.
    private var cacheByNumber: [Statement?] = []
    private static let maxNumbered = 4096
    /// The store's file generation this reader was opened in (Store.read drops a reader
    /// of an earlier one: a file swapped by a re-key).
    var fileGeneration = 0
    public let path: String
    /// The page cache this connection keeps, KiB: SQLite's default (2 MiB), 16 MiB when
    /// encrypted.
    let cacheKiB: Int
    private static let defaultCacheKiB = 2000, encryptedCacheKiB = 16384
    /// What a hook registered on this connection points to (WALCheckpointer.attach): kept
    /// alive as long as the connection can call it.
    var walHookOwner: AnyObject?

    // Once `db` is set, a throwing init still runs deinit, which closes the handle.
    /// `readOnly`: SQLITE_OPEN_READONLY; `immutable` also tells SQLite that nobody writes
    /// the file (no -shm needed: a WAL database in a read-only directory).
    public init(path: String, create: Bool, busyTimeoutMs: Int, key: EncryptionKey? = nil,
                readOnly: Bool = false, immutable: Bool = false) throws {
        _ = sqlcipherConfigured
        var handle: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0))
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        let rc = sqlite3_open_v2(Connection.uri(path, readOnly: readOnly, immutable: immutable), &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let handle { sqlite3_close_v2(handle) }
            throw SQLiteError.make(rc, message)
        }
        db = handle
        self.path = path
        cacheKiB = key != nil ? Connection.encryptedCacheKiB : Connection.defaultCacheKiB
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, Int32(clamping: busyTimeoutMs))
        if let key {
            let material = key.sqlcipherKeyBytes
            let rc = material.withUnsafeBytes { cblite_sqlcipher_key(db, $0.baseAddress, Int32($0.count)) }
            if rc != SQLITE_OK {
                throw CBLError(.internalError, "could not apply the encryption key", detail: rc)
            }
        }
        // Refuse to run without a working codec: a database we believe encrypted must
        // never be written in plaintext by a replaced SQLite.
        let codec = try? queryString("PRAGMA cipher_version")
        guard let codec, !codec.isEmpty else {
            throw CBLError.internalError("SQLCipher codec is not available in this build")
        }
        // An encrypted page costs a decryption and an HMAC on every cache miss (the OS page
        // cache no longer helps), so encrypted connections keep a larger page cache: 16 MiB.
        if key != nil { _ = sqlite3_exec(db, "PRAGMA cache_size = -\(cacheKiB)", nil, nil, nil) }
        // View indexes take batches of rows through one INSERT ... SELECT (MappedBatch).
        let vt = cblite_register_index_rows(db)
        if vt != SQLITE_OK { throw SQLiteError.make(vt, "could not register cblite_index_rows") }
        // Updates on the current revision extend the revision tree inside their UPDATE.
        let fn = RevTreeAppendFunction.register(db)
        if fn != SQLITE_OK { throw SQLiteError.make(fn, "could not register \(RevTreeAppendFunction.name)") }
        // Full-text indexes with stop words name this tokenizer in their schema (FullTextAnalyzer).
        let ft = cblite_register_fts_tokenizers(db)
        if ft != SQLITE_OK { throw SQLiteError.make(ft, "could not register the full-text tokenizers") }
        // A view's full-text query reads where each row matched (ViewTextStorage).
        let fm = cblite_register_fts_functions(db)
        if fm != SQLITE_OK { throw SQLiteError.make(fm, "could not register the full-text functions") }
        // The first read tells a wrong (or missing) key: SQLITE_NOTADB, mapped to 401.
        // A file that is not a database at all (or has a damaged header) gives the same
        // code: FileDiagnosis tells them apart.
        do {
            _ = try queryInt("SELECT count(*) FROM sqlite_master")
        } catch let e as CBLError where e.status == .unauthorized {
            throw FileDiagnosis.notADatabaseError(path, keyGiven: key != nil, detail: e.detail)
        }
    }

    /// A file: URI for `path` (every byte outside the unreserved set percent-encoded, so
    /// '?', '#' and '%' in a path stay part of it).
    static func uri(_ path: String, readOnly: Bool, immutable: Bool) -> String {
        if path == ":memory:" { return path }
        let hex = Array("0123456789ABCDEF")
        var out = "file:"
        for b in path.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "/"), UInt8(ascii: "-"),
                 UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.append(Character(Unicode.Scalar(b)))
            default:
                out += "%" + String(hex[Int(b >> 4)]) + String(hex[Int(b & 15)])
            }
        }
        var query: [String] = []
        if readOnly { query.append("mode=ro") }
        if immutable { query.append("immutable=1") }
        return query.isEmpty ? out : out + "?" + query.joined(separator: "&")
    }

    private var isOpen = true

    deinit { close() }

    /// Finalizes the cached statements and closes the handle (idempotent).
    public func close() {
        guard isOpen else { return }
        isOpen = false
        cache.removeAll()
        cacheByNumber.removeAll()
        sqlite3_close_v2(db)
    }

    /// A cached prepared statement for `sql`.
    public func prepare(_ sql: String) throws -> Statement {
        if let s = cache[sql] { return s }
        let s = try prepareUncached(sql)
        cache[sql] = s
        return s
    }

    /// A cached prepared statement for `sql`, found by its number.
    public func prepare(_ sql: SQLText) throws -> Statement {
        let n = sql.number
        if n < cacheByNumber.count, let s = cacheByNumber[n] { return s }
        let s = try prepare(sql.text)
        guard n < Connection.maxNumbered else { return s }
        if n >= cacheByNumber.count { cacheByNumber.append(contentsOf: repeatElement(nil, count: n + 1 - cacheByNumber.count)) }
        cacheByNumber[n] = s
        return s
    }

    public func prepareUncached(_ sql: String) throws -> Statement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            // The SQL goes to the log, not into the message people read.
            let code = sqlite3_extended_errcode(db), message = String(cString: sqlite3_errmsg(db))
            Loggers.storage.debug("SQLite error \(code) (\(message)) preparing: \(sql)")
            throw SQLiteError.last(db, code, message)
        }
        return Statement(stmt, self)
    }

    public func setBusyTimeout(_ ms: Int) { sqlite3_busy_timeout(db, Int32(clamping: ms)) }

    /// Runs `body`, part of a one-pass scan reading about `bytes` bytes (a view build
    /// mapping every document), with a page cache of `scanCacheKiB` when the scan is larger
    /// than the connection's own cache; the cache's size is set back after. Pages read once
    /// would evict the cache anyway; shrinking it gives their memory back to the heap at
    /// once, where the scan's batch grows: the view build's peak, -1.8 MiB at N=100,000
    /// (bench/RESULTS.md, session 9). Smaller scans keep the cache as it is.
    func scanning<T>(bytes: Int, _ body: () throws -> T) throws -> T {
        guard bytes > cacheKiB * 1024 else { return try body() }
        try setCacheSize(Connection.scanCacheSQL)
        defer { try? setCacheSize("PRAGMA cache_size = -\(cacheKiB)") }
        return try body()
    }
    static let scanCacheKiB = 256
    private static let scanCacheSQL = "PRAGMA cache_size = -\(scanCacheKiB)"

    private func setCacheSize(_ sql: String) throws {
        let s = try prepare(sql)
        defer { s.reset() }
        _ = try s.step()
    }

    /// Runs one or more statements that return no rows.
    public func exec(_ sql: String) throws {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &errmsg)
        if rc != SQLITE_OK {
            let message = errmsg.map { String(cString: $0) } ?? "error"
            sqlite3_free(errmsg)
            throw SQLiteError.last(db, sqlite3_extended_errcode(db), message)
        }
    }

    public func queryInt(_ sql: String, _ args: [Int64] = []) throws -> Int64? {
        let s = try prepare(sql)
        defer { s.reset() }
        for (i, a) in args.enumerated() { s.bind(Int32(i + 1), a) }
        return try s.step() ? (s.isNull(0) ? nil : s.int(0)) : nil
    }

    public func queryString(_ sql: String) throws -> String? {
        let s = try prepareUncached(sql)
        return try s.step() ? s.string(0) : nil
    }

    /// Whether the file has a table of this name (tables a version of cblite added, which a
    /// file it never opened read-write lacks).
    func hasTable(_ name: String) throws -> Bool {
        let s = try prepare("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?")
        defer { s.reset() }
        s.bind(1, name)
        return try s.step()
    }

    public var changes: Int { Int(sqlite3_changes(db)) }
    public var isInTransaction: Bool { sqlite3_get_autocommit(db) == 0 }

    /// SQLite's PRAGMA data_version: changes when another connection (of this process or
    /// another) committed since this connection's last look.
    public func dataVersion() throws -> Int64 {
        let s = try prepare(Connection.dataVersionSQL)
        defer { s.reset() }
        return try s.step() ? s.int(0) : 0
    }
    private static let dataVersionSQL = SQLText("PRAGMA data_version")

    public static var sqliteVersion: String { String(cString: sqlite3_libversion()) }
}
