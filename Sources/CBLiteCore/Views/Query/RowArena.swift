import CSQLCipher
import Glibc

/// Where a result keeps the texts of the rows it lends: one growing buffer, reused page
/// after page, each text stored with a 0 byte after it — no allocation per row.
/// A stored text stays where it is until `reset`: growing copies the buffer into a larger
/// one and keeps the old one until then, so a page of rows lent one after the other all
/// stay valid while later rows are stored (spans, being offsets, follow the copy).
final class RowArena {
    /// A stored text: its offset and length; length -1 for none (NULL).
    struct Span {
        var offset: Int32
        var length: Int32
        static let none = Span(offset: 0, length: -1)
        init(offset: Int32, length: Int32) { self.offset = offset; self.length = length }
        init(_ c: cblite_span) { offset = c.offset; length = c.length }
    }

    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var used = 0
    /// Buffers grown out of, whose texts may still be lent: freed by the next reset.
    private var outgrown: [UnsafeMutablePointer<UInt8>] = []

    init(capacity: Int = 4096) {
        self.capacity = capacity
        base = malloc(capacity)!.assumingMemoryBound(to: UInt8.self)
    }

    deinit {
        free(base)
        for b in outgrown { free(b) }
    }

    /// Makes room for new texts; every buffer handed out before is invalid from here on.
    @inline(__always)   // on every row read one by one
    func reset() {
        used = 0
        if !outgrown.isEmpty { freeOutgrown() }
    }

    private func freeOutgrown() {
        for b in outgrown { free(b) }
        outgrown.removeAll(keepingCapacity: true)
    }

    func store(_ p: UnsafeRawPointer?, count n: Int) -> Span {
        if used + n + 1 > capacity { grow(toHold: n) }
        if n > 0, let p { memcpy(base + used, p, n) }
        base[used + n] = 0
        defer { used += n + 1 }
        return Span(offset: Int32(used), length: Int32(n))
    }

    /// Stores a text of `n` bytes that `fill` writes in place (no copy through an array).
    func store(count n: Int, _ fill: (UnsafeMutablePointer<UInt8>) -> Void) -> Span {
        if used + n + 1 > capacity { grow(toHold: n) }
        fill(base + used)
        base[used + n] = 0
        defer { used += n + 1 }
        return Span(offset: Int32(used), length: Int32(n))
    }

    func store(_ bytes: UnsafeBufferPointer<UInt8>?) -> Span {
        guard let bytes else { return .none }
        return store(bytes.baseAddress, count: bytes.count)
    }

    func store(_ bytes: [UInt8]?) -> Span {
        guard let bytes else { return .none }
        return bytes.withUnsafeBufferPointer { store($0) }
    }

    func store(_ s: String?) -> Span {
        guard var s else { return .none }
        return s.withUTF8 { store($0) }
    }

    /// The bytes stored since the last reset.
    var usedBytes: Int { used }

    /// Where the texts are now: spans' bytes are at base + offset until the arena grows or
    /// is reset (a loop lending many rows reads it once, not through `buffer` per text).
    var baseAddress: UnsafePointer<UInt8> { UnsafePointer(base) }

    /// The span of bytes lent from the arena when its base was `base` (offsets outlive a
    /// growth; nil for none).
    @inline(__always)
    static func span(_ bytes: UnsafeBufferPointer<UInt8>?, base: UnsafePointer<UInt8>) -> Span {
        guard let b = bytes?.baseAddress else { return bytes == nil ? .none : Span(offset: 0, length: 0) }
        return Span(offset: Int32(UnsafePointer(b) - base), length: Int32(bytes!.count))
    }

    /// The bytes of a span (nil for none). Valid until the arena grows or is reset.
    func buffer(_ s: Span) -> UnsafeBufferPointer<UInt8>? {
        s.length < 0 ? nil : UnsafeBufferPointer(start: base + Int(s.offset), count: Int(s.length))
    }

    /// Copies the next rows of an index scan ("SELECT docid, row[, key][, the joined
    /// document's docid, flags, revid, body]": `document`, its join) into the arena and decodes them into `rows`
    /// (room for maxRows), in C (cblite_copy_scan_rows: a page costs a few calls instead of
    /// several per row), stopping once the arena holds `byteBudget` bytes more than at the
    /// call (after one row at least). Returns the rows copied, and whether the statement is
    /// done.
    func copyScanRows(from s: Statement, withKey: Bool, document: DocumentStore.LiveJoin?, maxRows: Int,
                      byteBudget: Int = Int(Int32.max), into rows: UnsafeMutablePointer<cblite_scan_row>) throws
        -> (count: Int, done: Bool) {
        var total = 0, pending: Int32 = 0
        let stopAt = Int64(used) + Int64(byteBudget)
        while total < maxRows {
            var usedBytes = Int64(used), pendingOut: Int32 = 0, rc: Int32 = 0
            let copied = cblite_copy_scan_rows(s.handle, withKey ? 1 : 0, document == nil ? 0 : 1, document?.deletedFlags ?? 0,
                                               Int32(maxRows - total), pending, stopAt,
                                               base, Int64(capacity),
                                               &usedBytes, rows + total, &pendingOut, &rc)
            used = Int(usedBytes)
            total += Int(copied)
            if rc == SQLITE_DONE { return (total, true) }
            guard rc == SQLITE_ROW else {
                let message = String(cString: sqlite3_errmsg(s.connection.db))
                sqlite3_reset(s.handle)
                throw SQLiteError.last(s.connection.db, rc, message)
            }
            guard pendingOut != 0 else {
                if total < maxRows && used >= stopAt { break }          // the budget is spent
                continue
            }
            pending = 1                          // the current row did not fit: grow, then copy it
            grow(toHold: capacity)
        }
        return (total, false)
    }

    /// Room for `n` more bytes at once: a page known to be large does not grow the buffer
    /// by doubling, copying what it holds each time (a find's page of 1,111 documents:
    /// 448 KB copied, ~235,000 instructions).
    func reserve(_ n: Int) {
        if used + n + 1 > capacity { grow(toHold: n) }
    }

    private func grow(toHold n: Int) {
        var c = capacity * 2
        while used + n + 1 > c { c *= 2 }
        guard let grown = malloc(c) else { fatalError("out of memory for a query page of \(c) bytes") }
        memcpy(grown, base, used)
        outgrown.append(base)                    // not realloc: lent texts must not move
        base = grown.assumingMemoryBound(to: UInt8.self)
        capacity = c
    }

    /// Whether two spans hold the same bytes.
    func equal(_ a: Span, _ b: Span) -> Bool {
        a.length == b.length && (a.length <= 0 || memcmp(base + Int(a.offset), base + Int(b.offset), Int(a.length)) == 0)
    }

    /// Lends a value row, stored here beside the rows lent before it (until a reset).
    func lend(_ r: QueryRow) -> QueryRowRef {
        let k = store(r.key), v = store(r.value), d = store(r.docID), s = store(r.sourceDocID)
        let doc = store(r.doc), e = store(r.error)
        return QueryRowRef(key: buffer(k)!, value: buffer(v), docID: buffer(d), sourceDocID: buffer(s),
                           doc: buffer(doc), error: buffer(e), sequence: r.sequence, collatableKey: nil)
    }
}
