/// One row of a query result, as Swift values. Keys and values are JSON text. Map rows
/// carry the document ID (redirected by a value {"_id": ...}), the ID of the document
/// that emitted the row, and its sequence; reduced and grouped rows carry only key and
/// value.
public struct QueryRow: Sendable, Equatable {
    public let key: [UInt8]
    public let value: [UInt8]?
    public let docID: String?
    public let sourceDocID: String?
    public let sequence: Int64
    public var doc: [UInt8]?
    /// All-docs queries with "keys": "not_found" for an ID with no document.
    public var error: String? = nil

    public var keyJSON: String { String(decoding: key, as: UTF8.self) }
    public var valueJSON: String? { value.map { String(decoding: $0, as: UTF8.self) } }

    /// A copy of a borrowed row.
    public init(_ r: QueryRowRef) {
        key = Array(r.key)
        value = r.value.map { Array($0) }
        docID = r.docID.map { String(decoding: $0, as: UTF8.self) }
        sourceDocID = r.sourceDocID.map { String(decoding: $0, as: UTF8.self) }
        sequence = r.sequence
        doc = r.doc.map { Array($0) }
        error = r.error.map { String(decoding: $0, as: UTF8.self) }
    }

    public init(key: [UInt8], value: [UInt8]?, docID: String?, sourceDocID: String?, sequence: Int64,
                doc: [UInt8]?, error: String? = nil) {
        self.key = key
        self.value = value
        self.docID = docID
        self.sourceDocID = sourceDocID
        self.sequence = sequence
        self.doc = doc
        self.error = error
    }
}
