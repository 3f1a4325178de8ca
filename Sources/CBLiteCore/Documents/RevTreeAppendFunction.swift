import CSQLCipher

/// `cblite_revtree_append(revtree, current_revid, current_body, new_revid, max_depth)`:
/// RevTree.appendOnCurrent as a SQL function, registered on every connection. It lets an
/// update on the current revision be one UPDATE that extends the tree from the row SQLite
/// is rewriting anyway (DocumentStore.appendOnCurrent), instead of a SELECT of the row, a
/// decode, an encode and then the UPDATE. Its failures (a damaged tree, a revision that
/// exists) are SQLITE_CONSTRAINT_FUNCTION: the statement changes nothing and the caller
/// takes the general save path, which reports them.
enum RevTreeAppendFunction {
    static let name = "cblite_revtree_append"
    /// SQLITE_CONSTRAINT_FUNCTION (a macro expression Swift does not import).
    static let failureCode: Int32 = SQLITE_CONSTRAINT | (4 << 8)

    static func register(_ db: OpaquePointer) -> Int32 {
        sqlite3_create_function_v2(db, name, 5, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, nil,
                                   { ctx, _, argv in RevTreeAppendFunction.call(ctx!, argv!) }, nil, nil, nil)
    }

    private static func call(_ ctx: OpaquePointer, _ argv: UnsafeMutablePointer<OpaquePointer?>) {
        guard let current = borrowed(argv[1]), let newRev = borrowed(argv[3]) else {
            fail(ctx, "revision IDs are required")
            return
        }
        let tree = borrowed(argv[0]), body = borrowed(argv[2])
        let capacity = RevTree.appendCapacity(encodedCount: tree?.count ?? 0, currentCount: current.count,
                                              currentBodyCount: body?.count ?? 0, newRevCount: newRev.count)
        // The result is written straight into memory SQLite takes over (no copy).
        guard let memory = sqlite3_malloc64(UInt64(capacity)) else {
            sqlite3_result_error_nomem(ctx)
            return
        }
        let out = UnsafeMutableBufferPointer(start: memory.assumingMemoryBound(to: UInt8.self), count: capacity)
        do {
            if let n = try RevTree.appendOnCurrent(encoded: tree, current: current, currentBody: body, newRev: newRev,
                                                   maxDepth: Int(sqlite3_value_int64(argv[4])), into: out) {
                sqlite3_result_blob64(ctx, memory, UInt64(n), sqlite3_free)
            } else {
                sqlite3_free(memory)
                sqlite3_result_null(ctx)
            }
        } catch {
            sqlite3_free(memory)
            fail(ctx, CBLError.wrapping(error).message)
        }
    }

    private static func fail(_ ctx: OpaquePointer, _ message: String) {
        sqlite3_result_error(ctx, "\(name): \(message)", -1)
        sqlite3_result_error_code(ctx, failureCode)
    }

    /// A TEXT or BLOB argument's bytes, valid during the call; nil for NULL.
    private static func borrowed(_ value: OpaquePointer?) -> UnsafeBufferPointer<UInt8>? {
        guard sqlite3_value_type(value) != SQLITE_NULL else { return nil }
        let p = sqlite3_value_blob(value)
        let n = Int(sqlite3_value_bytes(value))
        return UnsafeBufferPointer(start: p?.assumingMemoryBound(to: UInt8.self), count: p == nil ? 0 : n)
    }
}
