/// Produces a result's rows, lending each: fills `row` and returns true, or returns false
/// at the end. A lent row stays valid until the next `recycle()`, however many rows are
/// lent after it, so that a page of rows can be handed out at once; a caller that reads
/// one row at a time recycles before each.
protocol RowSource: AnyObject {
    func next(into row: inout QueryRowRef) throws -> Bool
    /// The caller holds none of the rows lent so far: their memory may be reused.
    func recycle()
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
    func next(into row: inout QueryRowRef) throws -> Bool {
        guard let r = try producer.next() else { return false }
        row = arena.lend(r)
        return true
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
