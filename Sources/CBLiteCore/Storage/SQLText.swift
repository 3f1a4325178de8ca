/// A statement's text with a process-wide number for it: the same text always gets the
/// same number. Connection caches statements by that number too, so a hot path that
/// keeps its SQLText looks its statement up by an Int instead of hashing the whole text
/// on every call (~600 of a document read's ~13,500 instructions, callgrind).
public struct SQLText: Sendable {
    public let text: String
    let number: Int

    public init(_ text: String) {
        self.text = text
        number = SQLText.numbers.withLock { table in
            if let n = table[text] { return n }
            let n = table.count
            table[text] = n
            return n
        }
    }

    /// Grows with the distinct texts made into SQLText: the fixed statements of the
    /// document tables, per collection table.
    private static let numbers = LockedValue<[String: Int]>([:])
}
