import Glibc

/// The seeds' database name rule, and where a database lives on disk.
public enum DatabaseName {
    /// CouchDB's system database describing replications (the listener's `_replicator`):
    /// the one name allowed to start with '_'.
    public static let replicatorDatabase = "_replicator"
    /// CouchDB's authentication database (the listener's `_users`), the other such name.
    public static let usersDatabase = "_users"

    /// Lowercase ASCII letters, digits and _$()+-/ only, starting with a letter, shorter
    /// than 240 bytes; or `replicatorDatabase` or `usersDatabase`.
    public static func validate(_ name: String) throws {
        if name == replicatorDatabase || name == usersDatabase { return }
        let bytes = name.utf8
        guard let first = bytes.first else { throw CBLError.badRequest("database name is empty") }
        guard bytes.count < 240 else { throw CBLError.badRequest("database name must be shorter than 240 bytes") }
        guard first >= UInt8(ascii: "a") && first <= UInt8(ascii: "z") else {
            throw CBLError.badRequest("database name must start with a lowercase letter: \"\(name)\"")
        }
        guard bytes.allSatisfy(isAllowed) else {
            throw CBLError.badRequest("database name may only contain lowercase letters, digits and _$()+-/: \"\(name)\"")
        }
    }

    /// CouchDB's database-name characters: a-z 0-9 _ $ ( ) + - /. A range test, not a Set:
    /// the listener checks the name on every request.
    private static func isAllowed(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): return true
        case UInt8(ascii: "_"), UInt8(ascii: "$"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "+"),
             UInt8(ascii: "-"), UInt8(ascii: "/"): return true
        default: return false
        }
    }

    /// The bundle folder's name: '/' becomes ':' so a name never makes a path.
    static func bundleName(_ name: String) -> String {
        replacing(UInt8(ascii: "/"), with: UInt8(ascii: ":"), in: name) + ".cblite2"
    }

    /// The database name a bundle folder's name stands for; nil when it is not one
    /// (no .cblite2 suffix, or not a valid name once ':' is turned back into '/').
    public static func name(fromBundle file: String) -> String? {
        guard file.hasSuffix(".cblite2") else { return nil }
        let base = String(file.dropLast(".cblite2".count))
        let name = replacing(UInt8(ascii: ":"), with: UInt8(ascii: "/"), in: base)
        return (try? validate(name)) != nil ? name : nil
    }

    /// Byte for byte: an ASCII byte is never part of another UTF-8 character, and mapping
    /// Characters would run grapheme breaking (and page its code and tables in) on every open.
    private static func replacing(_ a: UInt8, with b: UInt8, in s: String) -> String {
        String(decoding: s.utf8.map { $0 == a ? b : $0 }, as: UTF8.self)
    }

    static let sqliteFile = "db.sqlite3"

    /// $CBLITE_DIR, else $XDG_DATA_HOME/cblite, else $HOME/.local/share/cblite.
    public static func defaultDirectory() throws -> String {
        if let d = env("CBLITE_DIR"), !d.isEmpty { return d }
        if let x = env("XDG_DATA_HOME"), !x.isEmpty { return x + "/cblite" }
        if let h = env("HOME"), !h.isEmpty { return h + "/.local/share/cblite" }
        throw CBLError.badRequest("no directory given and neither CBLITE_DIR nor HOME is set")
    }

    private static func env(_ key: String) -> String? { getenv(key).map { String(cString: $0) } }
}
