/// One row of the changes feed while it is scanned: `docID` and `revID` point into the
/// row and are valid only during the visit (the engine's `Collection.visitChanges`), so
/// the wire format writes it without copying (CouchWire's `ChangesWriter`).
package struct ChangeRowView {
    package let sequence: Int64
    package let docID: UnsafeBufferPointer<UInt8>
    /// The current revision.
    package let revID: UnsafeBufferPointer<UInt8>
    /// With `allRevs`: every leaf, the current one first; nil otherwise.
    package let leaves: [String]?
    package let deleted: Bool
    /// The document (with `_id`, `_rev`, `_deleted`) when `includeDocs`.
    package let doc: [UInt8]?

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

