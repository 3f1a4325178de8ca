/// One emitted row: the key in its index form (CollatableKey) and as compact JSON text,
/// the value as compact JSON text (nil when none was emitted), and the text of a text
/// key (nil for other keys; a text key's row has the key null, as Couchbase Lite 1.x's).
public struct EmittedRow: Equatable {
    public let key: [UInt8]
    public let keyJSON: [UInt8]
    public let value: [UInt8]?
    public var text: String? = nil
}
