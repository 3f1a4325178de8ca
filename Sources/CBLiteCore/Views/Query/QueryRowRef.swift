/// A row lent by a query result: its texts point into memory the result owns and stay
/// valid until the result's next row is read (or the result is gone). Each text is
/// followed in memory by a 0 byte, so C callers can use the pointers as C strings.
public struct QueryRowRef {
    public var key: UnsafeBufferPointer<UInt8>
    public var value: UnsafeBufferPointer<UInt8>?
    public var docID: UnsafeBufferPointer<UInt8>?
    public var sourceDocID: UnsafeBufferPointer<UInt8>?
    public var doc: UnsafeBufferPointer<UInt8>?
    public var error: UnsafeBufferPointer<UInt8>?
    public var sequence: Int64
    /// The key's CollatableKey form (index scans read it when grouping needs it).
    var collatableKey: UnsafeBufferPointer<UInt8>?
    /// A scan joined to its documents (MapScan's `documents`): the row's document when it is
    /// still live at the row's sequence is lent as `doc`, rendered with its ID and revision;
    /// or, when they need escaping, as its current revision ID and body here (nil: not live).
    var joinedRevID: UnsafeBufferPointer<UInt8>? = nil
    var joinedBody: UnsafeBufferPointer<UInt8>? = nil

    /// {"id":..,"key":..,"value":..,"seq":n,"source_id":..?,"doc":..?} (reduced rows:
    /// {"key":..,"value":..}; all-docs misses: {"key":..,"error":..}). `couchShape`
    /// leaves out cblite's own "seq" and "source_id", as CouchDB's rows have neither.
    func write(_ w: inout JSONWriter, includeDocs: Bool, couchShape: Bool = false) {
        w.append("{")
        if let error {
            w.append("\"key\":")
            w.appendRaw(key)
            w.append(",\"error\":")
            w.writeString(utf8: error)
            w.append("}")
            return
        }
        if let docID {
            w.append("\"id\":")
            w.writeString(utf8: docID)
            w.append(",")
        }
        w.append("\"key\":")
        w.appendRaw(key)
        w.append(",\"value\":")
        if let value { w.appendRaw(value) } else { w.append("null") }
        if let docID {
            if !couchShape { w.append(",\"seq\":\(sequence)") }
            if !couchShape, let sourceDocID, !sourceDocID.elementsEqual(docID) {
                w.append(",\"source_id\":")
                w.writeString(utf8: sourceDocID)
            }
            if includeDocs {
                w.append(",\"doc\":")
                if let doc { w.appendRaw(doc) } else { w.append("null") }
            }
        }
        w.append("}")
    }
}

extension QueryRowRef {
    /// A row to be filled (sources fill rows in place: the struct is too large to return
    /// by value on the per-row path without copying it several times). In an extension,
    /// so that the memberwise initializer stays.
    public init() {
        self.init(key: UnsafeBufferPointer(start: nil, count: 0), value: nil, docID: nil, sourceDocID: nil,
                  doc: nil, error: nil, sequence: 0, collatableKey: nil)
    }
}
