/// One emitted row: the key in its index form (CollatableKey) and as compact JSON text,
/// and the value as compact JSON text (nil when none was emitted).
package struct EmittedRow: Equatable {
    package let key: [UInt8]
    package let keyJSON: [UInt8]
    package let value: [UInt8]?
}
