import Glibc

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

    /// {"id":..,"key":..,"value":..,"seq":n,"source_id":..?,"doc":..?} (reduced rows:
    /// {"key":..,"value":..}; all-docs misses: {"key":..,"error":..}).
    func write(_ w: inout JSONWriter, includeDocs: Bool) {
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
            w.append(",\"seq\":\(sequence)")
            if let sourceDocID, !sourceDocID.elementsEqual(docID) {
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

/// Where a result keeps the texts of the rows it lends: one growing buffer, reused page
/// after page, each text stored with a 0 byte after it — no allocation per row.
final class RowArena {
    /// A stored text: its offset and length; length -1 for none (NULL).
    struct Span {
        var offset: Int32
        var length: Int32
        static let none = Span(offset: 0, length: -1)
    }

    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var used = 0

    init(capacity: Int = 4096) {
        self.capacity = capacity
        base = malloc(capacity)!.assumingMemoryBound(to: UInt8.self)
    }

    deinit { free(base) }

    func reset() { used = 0 }

    func store(_ p: UnsafeRawPointer?, count n: Int) -> Span {
        if used + n + 1 > capacity {
            var c = capacity * 2
            while used + n + 1 > c { c *= 2 }
            guard let grown = realloc(base, c) else { fatalError("out of memory for a query page of \(c) bytes") }
            base = grown.assumingMemoryBound(to: UInt8.self)
            capacity = c
        }
        if n > 0, let p { memcpy(base + used, p, n) }
        base[used + n] = 0
        defer { used += n + 1 }
        return Span(offset: Int32(used), length: Int32(n))
    }

    func store(_ bytes: UnsafeBufferPointer<UInt8>?) -> Span {
        guard let bytes else { return .none }
        return store(bytes.baseAddress, count: bytes.count)
    }

    func store(_ bytes: [UInt8]?) -> Span {
        guard let bytes else { return .none }
        return bytes.withUnsafeBufferPointer { store($0) }
    }

    func store(_ s: String?) -> Span {
        guard var s else { return .none }
        return s.withUTF8 { store($0) }
    }

    /// The bytes of a span (nil for none). Valid until the arena grows or is reset.
    func buffer(_ s: Span) -> UnsafeBufferPointer<UInt8>? {
        s.length < 0 ? nil : UnsafeBufferPointer(start: base + Int(s.offset), count: Int(s.length))
    }

    /// Lends a value row (stored here after a reset).
    func lend(_ r: QueryRow) -> QueryRowRef {
        reset()
        let k = store(r.key), v = store(r.value), d = store(r.docID), s = store(r.sourceDocID)
        let doc = store(r.doc), e = store(r.error)
        return QueryRowRef(key: buffer(k)!, value: buffer(v), docID: buffer(d), sourceDocID: buffer(s),
                           doc: buffer(doc), error: buffer(e), sequence: r.sequence, collatableKey: nil)
    }
}
