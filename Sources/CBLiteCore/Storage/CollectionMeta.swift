/// A collection's counters as kept in the `collections` table.
struct CollectionMeta: Equatable {
    var lastSeq: Int64
    var docCount: Int64

    private static let loadSQL = SQLText("SELECT last_seq, doc_count FROM collections WHERE id=?")

    static func load(_ id: Int64, _ conn: Connection) throws -> CollectionMeta {
        let s = try conn.prepare(loadSQL)
        defer { s.reset() }
        s.bind(1, id)
        guard try s.step() else { throw CBLError.notFound("collection no longer exists") }
        return CollectionMeta(lastSeq: s.int(0), docCount: s.int(1))
    }
}
