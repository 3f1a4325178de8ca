/// A document's row: the current revision's metadata and body, and the encoded tree.
struct DocumentRow {
    var docID: String
    var sequence: Int64
    var flags: DocFlags
    var revID: RevID
    var body: [UInt8]?
    var revtree: [UInt8]?

    var deleted: Bool { flags.contains(.deleted) }

    static func load(_ conn: Connection, table: String, docID: String) throws -> DocumentRow? {
        let s = try conn.prepare("SELECT sequence, flags, revid, body, revtree FROM \(table) WHERE docid=?")
        defer { s.reset() }
        s.bind(1, docID)
        guard try s.step() else { return nil }
        guard let rev = RevID(s.string(2) ?? "") else { throw CBLError.internalError("corrupt revision ID for \(docID)") }
        return DocumentRow(docID: docID, sequence: s.int(0), flags: DocFlags(rawValue: s.int(1)), revID: rev,
                           body: s.bytes(3), revtree: s.bytes(4))
    }

    func tree() throws -> (RevTree, Int) {
        try RevTree.decode(revtree, current: revID, currentDeleted: deleted, currentBody: body)
    }

    func json(extras: [(String, JSONValue)] = []) -> [UInt8] {
        DocumentJSON.render(docID: docID, rev: revID.string, deleted: deleted, body: body, extras: extras)
    }
}
