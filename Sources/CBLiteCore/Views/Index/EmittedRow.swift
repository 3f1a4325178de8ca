/// One emitted row: the key in its index form (CollatableKey) and as compact JSON text,
/// and the value as compact JSON text (nil when none was emitted).
public struct EmittedRow: Equatable {
    public let key: [UInt8]
    public let keyJSON: [UInt8]
    public let value: [UInt8]?
}
