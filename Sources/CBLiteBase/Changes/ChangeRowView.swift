/// One row of the changes feed while it is scanned: `docID` and `revID` point into the
/// row and are valid only during the visit (the engine's `Collection.visitChanges`), so
/// the wire format writes it without copying (CouchWire's `ChangesWriter`).
public struct ChangeRowView {
    public let sequence: Int64
    public let docID: UnsafeBufferPointer<UInt8>
    /// The current revision.
    public let revID: UnsafeBufferPointer<UInt8>
    /// With `allRevs`: every leaf, the current one first; nil otherwise.
    public let leaves: [String]?
    public let deleted: Bool
    /// The document (with `_id`, `_rev`, `_deleted`) when `includeDocs`.
    public let doc: [UInt8]?

    package init(sequence: Int64, docID: UnsafeBufferPointer<UInt8>, revID: UnsafeBufferPointer<UInt8>,
                 leaves: [String]?, deleted: Bool, doc: [UInt8]?) {
        self.sequence = sequence
        self.docID = docID
        self.revID = revID
        self.leaves = leaves
        self.deleted = deleted
        self.doc = doc
    }
}

