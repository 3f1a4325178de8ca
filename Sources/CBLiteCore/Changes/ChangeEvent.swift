/// One change to a document, as delivered to change observers.
public struct ChangeEvent: Sendable, Equatable {
    public let collectionID: Int64
    public let docID: String
    public let revID: String          // current revision after the change; "" when purged
    public let sequence: Int64
    public let deleted: Bool
    public let external: Bool         // inserted with its history (replication path)
}
