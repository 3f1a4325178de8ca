/// One row of the changes feed, kept: what the engine's `Collection.changes` gives and the
/// wire format's `ChangesWriter.row` writes (the listener's feeds, the replicator's pushes).
public struct ChangeEntry: Sendable {
    public let sequence: Int64
    public let docID: String
    public let revs: [String]        // current first; with allRevs every leaf
    public let deleted: Bool
    public let doc: [UInt8]?         // JSON with metadata, when includeDocs

    public init(sequence: Int64, docID: String, revs: [String], deleted: Bool, doc: [UInt8]? = nil) {
        self.sequence = sequence
        self.docID = docID
        self.revs = revs
        self.deleted = deleted
        self.doc = doc
    }
}
