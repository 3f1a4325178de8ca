/// One change to a document, as delivered to change observers.
package struct ChangeEvent: Sendable, Equatable {
    package let collectionID: Int64
    package let docID: String
    package let revID: String          // current revision after the change; "" when purged
    package let sequence: Int64
    package let deleted: Bool
    package let external: Bool         // inserted with its history (replication path)
}
