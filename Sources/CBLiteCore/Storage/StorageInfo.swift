import CSQLCipher

/// Versions of the storage engine compiled into the library.
public enum StorageInfo {
    public static func versionsJSON() -> String {
        let cipher = (try? Connection.memory().queryString("PRAGMA cipher_version")) ?? nil
        return JSONValue.object(JSONObject([
            ("sqlite", .string(Connection.sqliteVersion)),
            ("sqlcipher", .string(cipher ?? "unavailable")),
        ])).jsonString
    }
}

extension Connection {
    static func memory() throws -> Connection { try Connection(path: ":memory:", create: true, busyTimeoutMs: 0) }
}
