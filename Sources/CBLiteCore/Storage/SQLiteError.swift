import CSQLCipher

/// Maps SQLite result codes to engine statuses.
enum SQLiteError {
    static func make(_ code: Int32, _ message: String) -> CBLError {
        let primary = code & 0xFF
        switch primary {
        case SQLITE_BUSY, SQLITE_LOCKED:
            return CBLError(.busy, "database is locked: \(message)", detail: code)
        case SQLITE_NOTADB:
            return CBLError(.unauthorized, "file is encrypted or is not a database", detail: code)
        case SQLITE_CONSTRAINT:
            return CBLError(.conflict, message, detail: code)
        case SQLITE_CANTOPEN:
            return CBLError(.internalError, "cannot open database file: \(message)", detail: code)
        case SQLITE_CORRUPT:
            return CBLError(.internalError, "database is corrupt: \(message)", detail: code)
        case SQLITE_FULL:
            return CBLError(.internalError, "disk full: \(message)", detail: code)
        case SQLITE_READONLY:
            return CBLError(.forbidden, "database is read-only: \(message)", detail: code)
        default:
            return CBLError(.internalError, "SQLite error \(code): \(message)", detail: code)
        }
    }
}
