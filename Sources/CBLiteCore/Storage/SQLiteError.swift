import CSQLCipher
import Glibc

/// Maps SQLite result codes to engine statuses.
enum SQLiteError {
    /// `systemErrno`: sqlite3_system_errno after the failure (0 when unknown), which tells
    /// a full disk behind an I/O error (an fsync or a -shm extension failing with ENOSPC).
    static func make(_ code: Int32, _ message: String, systemErrno: Int32 = 0) -> CBLError {
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
            return CBLError(.insufficientStorage, "disk full: \(message)", detail: code)
        case SQLITE_IOERR where FileSystem.isOutOfSpace(systemErrno):
            return CBLError(.insufficientStorage, "disk full: \(message) (\(String(cString: strerror(systemErrno))))", detail: code)
        case SQLITE_IOERR:
            return CBLError(.internalError, "I/O error: \(message)\(systemErrno == 0 ? "" : " (\(String(cString: strerror(systemErrno))))")", detail: code)
        case SQLITE_READONLY:
            return CBLError(.forbidden, "database is read-only: \(message)", detail: code)
        default:
            return CBLError(.internalError, "SQLite error \(code): \(message)", detail: code)
        }
    }

    /// The error of the failure `code` just reported on `db`.
    static func last(_ db: OpaquePointer, _ code: Int32, _ message: String) -> CBLError {
        make(code, message, systemErrno: sqlite3_system_errno(db))
    }
}
