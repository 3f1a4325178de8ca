import CSQLCipher

private let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A prepared statement, cached by its connection and reset after each use.
public final class Statement {
    let handle: OpaquePointer
    unowned let connection: Connection

    init(_ handle: OpaquePointer, _ connection: Connection) {
        self.handle = handle
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    @discardableResult
    public func bind(_ index: Int32, _ value: Int64?) -> Statement {
        if let value { sqlite3_bind_int64(handle, index, value) } else { sqlite3_bind_null(handle, index) }
        return self
    }

    @discardableResult
    public func bind(_ index: Int32, _ value: String?) -> Statement {
        if let value {
            var v = value
            v.withUTF8 { buf in
                _ = sqlite3_bind_text(handle, index, UnsafeRawPointer(buf.baseAddress!).assumingMemoryBound(to: CChar.self) , Int32(buf.count), SQLITE_TRANSIENT)
            }
        } else {
            sqlite3_bind_null(handle, index)
        }
        return self
    }

    /// Binds bytes as TEXT (JSON bodies are stored as text so SQLite's JSON functions work).
    @discardableResult
    public func bindText(_ index: Int32, _ bytes: [UInt8]?) -> Statement {
        guard let bytes else { sqlite3_bind_null(handle, index); return self }
        bytes.withUnsafeBufferPointer { buf in
            _ = sqlite3_bind_text(handle, index, UnsafeRawPointer(buf.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self), Int32(buf.count), SQLITE_TRANSIENT)
        }
        return self
    }

    @discardableResult
    public func bindBlob(_ index: Int32, _ bytes: [UInt8]?) -> Statement {
        guard let bytes else { sqlite3_bind_null(handle, index); return self }
        bytes.withUnsafeBufferPointer { buf in
            _ = sqlite3_bind_blob(handle, index, UnsafeRawPointer(buf.baseAddress) ?? UnsafeRawPointer(bitPattern: 1), Int32(buf.count), SQLITE_TRANSIENT)
        }
        return self
    }

    /// Binds UTF-8 text that SQLite uses in place (SQLITE_STATIC): no copy, no allocation
    /// (~250 instructions a value; callgrind). The bytes must stay valid until the statement
    /// is reset, so the caller binds and runs inside the scope that lends them.
    @discardableResult @inline(__always)
    func bindBorrowedText(_ index: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Statement {
        // An empty buffer may have no address, and a NULL pointer would bind SQL NULL.
        let p = UnsafeRawPointer(bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self)
        _ = sqlite3_bind_text(handle, index, p, Int32(bytes.count), nil)
        return self
    }

    /// Binds a blob that SQLite uses in place (SQLITE_STATIC), as bindBorrowedText.
    @discardableResult @inline(__always)
    func bindBorrowedBlob(_ index: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Statement {
        // An empty buffer may have no address, and a NULL pointer would bind SQL NULL.
        let p = UnsafeRawPointer(bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!)
        _ = sqlite3_bind_blob(handle, index, p, Int32(bytes.count), nil)
        return self
    }

    /// Binds rows for the cblite_index_rows table-valued function; they must stay valid
    /// until the statement is reset.
    @discardableResult
    func bindIndexRows(_ index: Int32, _ rows: UnsafePointer<cblite_index_rows>) -> Statement {
        _ = cblite_bind_index_rows(handle, index, rows)
        return self
    }

    /// Steps once: true when a row is available.
    public func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let message = String(cString: sqlite3_errmsg(connection.db))
            let code = sqlite3_extended_errcode(connection.db)
            sqlite3_reset(handle)
            throw SQLiteError.last(connection.db, code, message)
        }
    }

    /// Runs a statement that returns no rows, then resets it.
    public func run() throws {
        defer { reset() }
        _ = try step()
    }

    /// Runs `body` with `text` bound at `index` without SQLite copying it, then resets the
    /// statement, so the binding never outlives the string's bytes. For lookups by a
    /// string key: the copy cost a read ~150 instructions (callgrind).
    public func withBoundText<T>(_ index: Int32, _ text: String, _ body: (Statement) throws -> T) rethrows -> T {
        var t = text
        return try t.withUTF8 { u in
            defer { reset() }
            return try body(bindBorrowedText(index, u))
        }
    }

    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Resets the statement to run again with its bindings kept.
    func rewind() { sqlite3_reset(handle) }

    // Columns are read where SQLite holds the current row (cblite_result_row.h): the
    // public calls' checks cost ~40-80 instructions a column.

    public func int(_ col: Int32) -> Int64 { cblite_column_int64(handle, col) }
    public func isNull(_ col: Int32) -> Bool { sqlite3_column_type(handle, col) == SQLITE_NULL }

    /// The column's bytes (text or blob; a number as its text) without copying them, nil
    /// for NULL: valid until the statement steps again or is reset.
    @inline(__always)
    public func borrowedBytes(_ col: Int32) -> UnsafeBufferPointer<UInt8>? {
        var n: Int32 = 0
        let p = cblite_column_bytes(handle, col, &n)
        return n < 0 ? nil : UnsafeBufferPointer(start: p, count: p == nil ? 0 : Int(n))
    }

    public func string(_ col: Int32) -> String? {
        borrowedBytes(col).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The column's bytes (text or blob); nil for NULL.
    public func bytes(_ col: Int32) -> [UInt8]? {
        borrowedBytes(col).map { [UInt8]($0) }
    }

    /// The bytes of a column that is never empty (a NULL or empty value gives nil), without
    /// copying them (unlike sqlite3_column_text, no copy to NUL-terminate text read from a
    /// page). Valid until the statement steps again or is reset.
    public func borrowedNonEmpty(_ col: Int32) -> UnsafeBufferPointer<UInt8>? {
        guard let b = borrowedBytes(col), !b.isEmpty else { return nil }
        return b
    }

    /// Calls `body` with the column's bytes without copying them (valid during the call;
    /// empty for NULL).
    public func withBytes<T>(_ col: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        try body(borrowedBytes(col) ?? UnsafeBufferPointer(start: nil, count: 0))
    }
}
