/// Collects the rows a map function emits, into the batch being indexed. Keys and values
/// are stored as compact JSON text (object members in their emitted order); a value may
/// be absent (nil), which is stored as nothing.
public final class Emitter {
    let batch: MappedBatch
    /// For a binding's use: one emitter serves all map calls of one index update, so a
    /// binding can keep its per-emitter state here, and release it in `onRelease`.
    public var context: AnyObject?
    public var onRelease: (() -> Void)?

    init(batch: MappedBatch) { self.batch = batch }

    deinit { onRelease?() }

    public func emit(_ key: JSONValue, _ value: JSONValue?) {
        batch.addRow(key: key, keyJSON: nil, value: value.map { Collation.compactJSON($0) })
    }

    /// Emits the key `[n]` with no value (n: `MappedBatch.plainInteger`'s), as
    /// `emit(.array([.int(n)]), nil)` does, without making the array.
    func emit(integerInArray n: Int64) {
        batch.addRow(integerKey: n, inArray: true, value: nil)
    }

    /// Emits JSON texts (validated and made compact; 400 when invalid).
    public func emit(keyJSON: UnsafeBufferPointer<UInt8>, valueJSON: UnsafeBufferPointer<UInt8>?) throws {
        let value = try valueJSON.map { try Collation.compactJSON(json: $0) }
        if let n = MappedBatch.plainInteger(keyJSON) {       // the common case, without a parse
            batch.addRow(integerKey: n, value: value)
        } else {
            batch.addRow(key: try JSONParser.parse(bytes: keyJSON), keyJSON: nil, value: value)
        }
    }

    /// Emits a text key (Couchbase Lite 1.x's `emit(CBLTextKey(text), value)`): the row's
    /// key is null, and its text is indexed for the view's full-text queries
    /// (QueryOptions.fullTextQuery), with the view's analyzer (View.textAnalyzer).
    public func emit(text: String, _ value: JSONValue?) {
        batch.addRow(text: text, value: value.map { Collation.compactJSON($0) })
    }

    /// Emits a text key with a value's JSON text (validated and made compact; 400 when invalid).
    public func emit(text: String, valueJSON: UnsafeBufferPointer<UInt8>?) throws {
        batch.addRow(text: text, value: try valueJSON.map { try Collation.compactJSON(json: $0) })
    }

    public func emit(keyJSON: String, valueJSON: String?) throws {
        var k = keyJSON
        try k.withUTF8 { kb in
            if var v = valueJSON {
                try v.withUTF8 { vb in try emit(keyJSON: kb, valueJSON: vb) }
            } else {
                try emit(keyJSON: kb, valueJSON: nil)
            }
        }
    }
}
