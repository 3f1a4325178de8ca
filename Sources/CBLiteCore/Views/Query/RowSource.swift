/// Produces a result's rows, lending them a run at a time: fills rows[0..<n] for some n
/// from 1 to `max` and returns n, or returns 0 at the end (fewer than `max` is not the
/// end). A lent row stays valid until the next `recycle()`, however many rows are lent
/// after it, so that a page of rows can be handed out at once; a caller that reads one
/// row at a time recycles before each. An error is thrown only by a call that lends no
/// row: a source that meets one after lending some returns those first.
protocol RowSource: AnyObject {
    func next(into rows: UnsafeMutablePointer<QueryRowRef>, max: Int) throws -> Int
    /// The caller holds none of the rows lent so far: their memory may be reused.
    func recycle()
}

extension RowSource {
    /// Lends one row: fills `row` and returns true, or returns false at the end.
    func next(into row: inout QueryRowRef) throws -> Bool {
        try withUnsafeMutablePointer(to: &row) { try next(into: $0, max: 1) } > 0
    }
}

/// Produces rows as Swift values (aggregates, all-docs rows, live-query snapshots).
protocol ValueRowProducer: AnyObject {
    func next() throws -> QueryRow?
}

/// Lends the rows of a value producer from an arena.
final class ValueRows: RowSource {
    private let producer: ValueRowProducer
    private let arena = RowArena(capacity: 1024)
    init(_ producer: ValueRowProducer) { self.producer = producer }
    /// One row a call: an error of the producer's next row is then that call's.
    func next(into rows: UnsafeMutablePointer<QueryRowRef>, max: Int) throws -> Int {
        guard let r = try producer.next() else { return 0 }
        rows.pointee = arena.lend(r)
        return 1
    }
    func recycle() { arena.reset() }
}

/// Rows already in memory (live query results).
final class ArrayRowSource: ValueRowProducer {
    private var rows: [QueryRow]
    private var i = 0
    init(_ rows: [QueryRow]) { self.rows = rows }
    func next() throws -> QueryRow? {
        guard i < rows.count else { return nil }
        defer { i += 1 }
        return rows[i]
    }
}
