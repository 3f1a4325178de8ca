import CSQLCipher

/// A document body as given by the caller, split into metadata and content.
struct DocumentBody {
    var docID: String?
    var rev: RevID?
    var deleted = false
    var hasAttachments = false
    /// `_attachments` as given (nil: no such key), resolved by the save path (Blobs/).
    var attachments: [AttachmentInput]? = nil
    /// Canonical JSON of the content (sorted keys, no "_id"/"_rev"/"_deleted").
    var canonical: [UInt8]

    static let metadataKeys: Set<String> = ["_id", "_rev", "_deleted", "_attachments"]

    /// Parses and canonicalizes a body in one pass (JSONCanonicalizer).
    static func parse(bytes: UnsafeBufferPointer<UInt8>) throws -> DocumentBody {
        var body = DocumentBody(canonical: [], deleted: false)
        let canonical = try JSONCanonicalizer.canonicalizeObject(bytes) { key, value in
            try body.takeMetadata(key, value)
        }
        body.canonical = canonical
        return body
    }

    static func parse(_ text: String) throws -> DocumentBody {
        var copy = text
        return try copy.withUTF8 { try parse(bytes: $0) }
    }

    /// Handles one top-level "_" property; returns whether it stays in the stored body.
    private mutating func takeMetadata(_ key: String, _ value: JSONValue) throws -> Bool {
        switch key {
        case "_id":
            guard let s = value.stringValue else { throw CBLError.badRequest("\"_id\" must be a string") }
            docID = s
            return false
        case "_rev":
            guard let s = value.stringValue, let r = RevID(s) else { throw CBLError.badRequest("\"_rev\" is not a valid revision ID") }
            rev = r
            return false
        case "_deleted":
            guard let b = value.boolValue else { throw CBLError.badRequest("\"_deleted\" must be a boolean") }
            deleted = b
            return false
        case "_attachments":
            let a = try Attachments.parseInput(value)      // validated; stubs written back on save
            attachments = a
            hasAttachments = !a.isEmpty
            return false
        case "_replication_state", "_replication_state_time", "_replication_state_reason", "_replication_id",
             "_replication_stats":
            return true     // a replication's state in its `_replicator` document: stored as content, as CouchDB keeps it
        default:
            throw CBLError.badRequest("property \"\(key)\" is reserved: top-level names starting with '_' are metadata")
        }
    }

    init(canonical: [UInt8], deleted: Bool) {
        self.canonical = canonical
        self.deleted = deleted
    }

    /// 1–1024 bytes of UTF-8, no control characters, not starting with '_' except a design
    /// document's "_design/NAME" (CouchDB's reserved IDs: design documents are ordinary
    /// documents for storage and replication; "_local/" ones live apart, LocalDocuments).
    static func validateDocID(_ id: String, what: String = "document ID") throws {
        // Over the contiguous bytes: the generic contains(where:) on the UTF-8 view cost
        // ~450 instructions a read (callgrind).
        var copy = id
        let problem: String? = copy.withUTF8 { u in
            guard !u.isEmpty else { return "is empty" }
            guard u.count <= 1024 else { return "is longer than 1024 bytes" }
            if u[0] == UInt8(ascii: "_") {
                guard isDesignDocID(u) else { return "must not start with '_' (except \"_design/NAME\")" }
                guard u.count > designPrefix.utf8CodeUnitCount else { return "\"_design/\" needs a name" }
            }
            for c in u where c < 0x20 || c == 0x7F { return "must not contain control characters" }
            return nil
        }
        if let problem { throw CBLError.badRequest("\(what) \(problem)") }
    }

    private static let designPrefix: StaticString = "_design/"

    /// Whether the ID starts with "_design/" (bytes compared: CouchDB's prefix is exact).
    static func isDesignDocID(_ u: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = designPrefix.utf8CodeUnitCount
        guard u.count >= n else { return false }
        for i in 0..<n where u[i] != designPrefix.utf8Start[i] { return false }
        return true
    }
}

/// Renders stored documents as JSON with their metadata.
enum DocumentJSON {
    /// {"_id":..,"_rev":..,["_deleted":true,] <extras>, <body members>}
    static func render(docID: String, rev: String, deleted: Bool, body: [UInt8]?,
                       extras: [(String, JSONValue)] = []) -> [UInt8] {
        var r = rev
        return r.withUTF8 { revBytes in
            guard let body else { return render(docID: docID, rev: revBytes, deleted: deleted, body: nil, extras: extras) }
            return body.withUnsafeBufferPointer { render(docID: docID, rev: revBytes, deleted: deleted, body: $0, extras: extras) }
        }
    }

    /// The same from bytes borrowed from the row's columns: a read copies the body once,
    /// into the result, instead of first into an array of its own.
    static func render(docID: String, rev: UnsafeBufferPointer<UInt8>, deleted: Bool, body: UnsafeBufferPointer<UInt8>?,
                       extras: [(String, JSONValue)] = []) -> [UInt8] {
        render(as: [UInt8].self, docID: docID, rev: rev, deleted: deleted, body: body, extras: extras)
    }

    /// The same into `Out` (a C caller's malloc'ed string, or an array).
    static func render<Out: TextOutput>(as: Out.Type, docID: String, rev: UnsafeBufferPointer<UInt8>, deleted: Bool,
                                        body: UnsafeBufferPointer<UInt8>?, extras: [(String, JSONValue)] = []) -> Out {
        var id = docID
        return id.withUTF8 { id in
            if extras.isEmpty, let plain: Out = renderPlain(docID: id, rev: rev, deleted: deleted, body: body) { return plain }
            var w = JSONWriter(capacity: (body?.count ?? 2) + id.count + rev.count + 48)
            write(into: &w, docID: id, rev: rev, deleted: deleted, body: body, extras: extras)
            return .copying(w.bytes)
        }
    }

    /// The common case, written straight into storage of its final size: no extras, and an
    /// ID and revision with nothing to escape (what `write` gives for them; its growing
    /// array and the copy out of it cost a read ~900 instructions, callgrind).
    private static func renderPlain<Out: TextOutput>(docID: UnsafeBufferPointer<UInt8>, rev: UnsafeBufferPointer<UInt8>,
                                                     deleted: Bool, body: UnsafeBufferPointer<UInt8>?) -> Out? {
        guard let count = plainLength(docID: docID, rev: rev, deleted: deleted, body: body) else { return nil }
        return Out.make(count: count) { writePlain(at: $0, docID: docID, rev: rev, deleted: deleted, body: body) }
    }

    /// The length of the plain rendering (no extras), nil when the ID or revision needs
    /// escaping (then `write` renders it). The layout's one owner is C's
    /// cblite_document_json.h, which a find's page copy renders with too.
    @inline(__always)
    static func plainLength(docID: UnsafeBufferPointer<UInt8>, rev: UnsafeBufferPointer<UInt8>, deleted: Bool,
                            body: UnsafeBufferPointer<UInt8>?) -> Int? {
        let n = cblite_plain_document_length(docID.baseAddress, Int64(docID.count), rev.baseAddress, Int64(rev.count),
                                             deleted ? 1 : 0, Int64(body?.count ?? -1))
        return n < 0 ? nil : Int(n)
    }

    /// Writes the plain rendering at `start` (`plainLength` bytes; the caller checked it):
    /// the view indexer renders a chunk of documents into one buffer.
    @inline(__always)
    static func writePlain(at start: UnsafeMutablePointer<UInt8>, docID: UnsafeBufferPointer<UInt8>,
                           rev: UnsafeBufferPointer<UInt8>, deleted: Bool, body: UnsafeBufferPointer<UInt8>?) {
        let end = cblite_write_plain_document(start, docID.baseAddress, Int64(docID.count), rev.baseAddress, Int64(rev.count),
                                              deleted ? 1 : 0, body?.baseAddress, Int64(body?.count ?? -1))
        assert(end! - start == plainLength(docID: docID, rev: rev, deleted: deleted, body: body), "rendered length differs from the computed one")
    }

    /// Appends the rendering to `w` (the view indexer renders a chunk of documents into
    /// one buffer, straight from the columns).
    static func write(into w: inout JSONWriter, docID: UnsafeBufferPointer<UInt8>, rev: UnsafeBufferPointer<UInt8>,
                      deleted: Bool, body: UnsafeBufferPointer<UInt8>?, extras: [(String, JSONValue)] = []) {
        w.append("{\"_id\":")
        w.writeString(utf8: docID)
        w.append(",\"_rev\":")
        w.writeString(utf8: rev)
        if deleted { w.append(",\"_deleted\":true") }
        for (k, v) in extras {
            w.appendByte(UInt8(ascii: ","))
            w.writeString(k)
            w.appendByte(UInt8(ascii: ":"))
            w.write(v)
        }
        if let body, body.count > 2 {
            w.appendByte(UInt8(ascii: ","))
            w.appendRaw(UnsafeBufferPointer(rebasing: body[1...]))          // members and the closing brace
        } else {
            w.appendByte(UInt8(ascii: "}"))
        }
    }
}
