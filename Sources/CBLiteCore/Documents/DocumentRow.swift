/// A document's row: the current revision's metadata and body, and the encoded tree.
struct DocumentRow {
    var docID: String
    var sequence: Int64
    var flags: DocFlags
    var revID: RevID
    var body: [UInt8]?
    var revtree: [UInt8]?

    var deleted: Bool { flags.contains(.deleted) }

    /// Reads DocumentStore's full-row columns: 0 docid, 1 sequence, 2 flags, 3 revid,
    /// 4 body, 5 revtree.
    init(_ s: Statement) throws {
        docID = s.string(0) ?? ""
        guard let rev = RevID(s.string(3) ?? "") else { throw CBLError.internalError("corrupt revision ID for \(docID)") }
        sequence = s.int(1)
        flags = DocFlags(rawValue: s.int(2))
        revID = rev
        body = s.bytes(4)
        revtree = s.bytes(5)
    }

    init(docID: String, sequence: Int64, flags: DocFlags, revID: RevID, body: [UInt8]?, revtree: [UInt8]?) {
        self.docID = docID
        self.sequence = sequence
        self.flags = flags
        self.revID = revID
        self.body = body
        self.revtree = revtree
    }

    func tree() throws -> (RevTree, Int) {
        try RevTree.decode(revtree, current: revID, currentDeleted: deleted, currentBody: body)
    }

    func json(extras: [(String, JSONValue)] = []) -> [UInt8] {
        DocumentJSON.render(docID: docID, rev: revID.string, deleted: deleted, body: body, extras: extras)
    }
}
