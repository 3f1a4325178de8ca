import ArgumentParser
import CBLiteCore
import Glibc

/// The options every database command shares: which database (a name with --dir, or the
/// path of its .cblite2 bundle), how to open it (key, read-only, busy timeout), which
/// collection, and whether to print JSON.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .long, help: "Directory holding the database (default: $CBLITE_DIR or ~/.local/share/cblite).")
    var dir: String?

    @Option(name: .long, help: "Collection as SCOPE.NAME, or NAME in the default scope (default: the default collection).")
    var collection: String?

    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false

    @Flag(name: .long, help: "The database is encrypted with a password: read from $CBLITE_DB_PASSWORD, else asked on the terminal (never echoed).")
    var password = false

    // Not --key: `query` takes CouchDB's --key (a view key).
    @Flag(name: .customLong("raw-key"), help: "The database is encrypted with a raw 256-bit key: 64 hex digits from $CBLITE_DB_KEY, else asked on the terminal.")
    var rawKey = false

    @Flag(name: .customLong("read-only"), help: "Open read-only: nothing on disk changes (works on read-only files and directories).")
    var readOnly = false

    @Option(name: .customLong("busy-timeout"), help: "Milliseconds to wait for a lock held by another process (default 10000).")
    var busyTimeout: Int?

    @Argument(help: "Database name, or the path of its bundle (path/to/NAME.cblite2).")
    var database: String

    /// (name, directory) from the argument: a path ending in .cblite2 names its bundle.
    func location() throws -> (name: String, dir: String?) {
        var arg = database
        while arg.count > 1 && arg.hasSuffix("/") { arg.removeLast() }
        guard arg.hasSuffix(".cblite2") else { return (database, dir) }
        if dir != nil { throw ToolError.usage("give either a bundle path or --dir, not both") }
        let slash = arg.lastIndex(of: "/")
        let base = slash.map { String(arg[arg.index(after: $0)...]) } ?? arg
        let parent = slash.map { $0 == arg.startIndex ? "/" : String(arg[..<$0]) } ?? "."
        guard let name = DatabaseName.name(fromBundle: base) else {
            throw ToolError.usage("\(base) is not the bundle of a database (NAME.cblite2, a valid database name)")
        }
        return (name, parent)
    }

    func openOptions(create: Bool) throws -> OpenOptions {
        var o = OpenOptions()
        o.create = create && !readOnly
        o.readOnly = readOnly
        if let busyTimeout {
            guard (0...3_600_000).contains(busyTimeout) else { throw ToolError.usage("--busy-timeout takes 0 to 3600000 ms") }
            o.busyTimeoutMs = busyTimeout
        }
        o.encryptionKey = try Secrets.databaseKey(password: password, raw: rawKey)
        return o
    }

    func open(create: Bool = false) throws -> Database {
        let (name, dir) = try location()
        do {
            return try Database.open(name: name, directory: dir, options: try openOptions(create: create))
        } catch let e as CBLError where !readOnly && [8, 14].contains(e.detail & 0xFF) {
            // SQLITE_READONLY / SQLITE_CANTOPEN: often a read-only file or directory.
            throw CBLError(e.status, e.message + " (if the database or its directory is read-only, add --read-only)", detail: e.detail)
        }
    }

    /// (scope, name) of --collection, nil for the default collection.
    var collectionSpec: (scope: String?, name: String)? {
        guard let spec = collection else { return nil }
        let parts = spec.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        return parts.count == 2 ? (parts[0], parts[1]) : (nil, parts[0])
    }

    func collection(in db: Database, create: Bool = false) throws -> Collection {
        guard let (scope, name) = collectionSpec else { return try db.defaultCollection() }
        if create { return try db.createCollection(scope: scope, name: name) }
        guard let c = try db.collection(scope: scope, name: name) else {
            throw CBLError(.notFound, "collection \(collection!) does not exist (cblite lscoll lists them)")
        }
        return c
    }

    func withCollection<T>(create: Bool = false, _ body: (Database, Collection) throws -> T) throws -> T {
        let db = try open(create: create)
        defer { try? db.close() }
        return try body(db, try collection(in: db, create: create))
    }

    func withDatabase<T>(create: Bool = false, _ body: (Database) throws -> T) throws -> T {
        let db = try open(create: create)
        defer { try? db.close() }
        return try body(db)
    }
}

/// Errors of the tool itself, with their exit codes.
enum ToolError: Error {
    /// Bad command line: exit 64 (EX_USAGE), as ArgumentParser's own.
    case usage(String)
}

/// Encryption keys from the environment or the terminal; never printed.
enum Secrets {
    static func env(_ name: String) -> String? {
        guard let v = getenv(name) else { return nil }
        let s = String(cString: v)
        return s.isEmpty ? nil : s
    }

    /// Reads a line from the terminal with echo off (nil: no terminal).
    static func prompt(_ text: String) -> String? {
        guard isatty(0) != 0, let p = getpass(text) else { return nil }
        return String(cString: p)
    }

    /// A user's password for a server: $CBLITE_PASSWORD, else asked on the terminal (`serve
    /// --user`, and `push`/`pull`/`sync --user` when neither the URL nor the environment gives one).
    static func userPassword(_ user: String) -> String? {
        env("CBLITE_PASSWORD") ?? prompt("Password for \(user): ")
    }

    static func databaseKey(password: Bool, raw: Bool, envPrefix: String = "CBLITE_DB", what: String = "") throws -> EncryptionKey? {
        if password && raw { throw ToolError.usage("give --password or --raw-key, not both") }
        if password {
            guard let p = env(envPrefix + "_PASSWORD") ?? prompt("Database\(what) password: ") else {
                throw ToolError.usage("no password: set \(envPrefix)_PASSWORD (or run on a terminal)")
            }
            return try EncryptionKey(json: .object(JSONObject([("password", .string(p))])))
        }
        if raw {
            guard let k = env(envPrefix + "_KEY") ?? prompt("Database\(what) key (64 hex digits): ") else {
                throw ToolError.usage("no key: set \(envPrefix)_KEY (or run on a terminal)")
            }
            return try EncryptionKey(json: .object(JSONObject([("raw_hex", .string(k))])))
        }
        return nil
    }
}
