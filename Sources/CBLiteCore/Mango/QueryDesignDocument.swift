/// The `language: "query"` design documents that hold the declarative indexes as CouchDB
/// writes them: Mango's json indexes in `views`, text indexes in `indexes`, nouveau
/// indexes in `nouveau`. One place reads, adds to and removes from them; each kind checks
/// its own definition and answers its own errors.
enum QueryIndexNaming {
    /// The `ddoc` and `name` of an `_index` request (non-empty strings, else CouchDB's
    /// invalid_index_name); either left out is the digest of `definition`, as CouchDB
    /// names unnamed indexes (its digest is of an Erlang term, so the names differ).
    static func names(_ request: JSONObject, definition: JSONValue) throws -> (ddoc: String, name: String) {
        func string(_ k: String) throws -> String? {
            guard let v = request[k] else { return nil }
            guard case .string(let s) = v, !s.isEmpty else {
                throw MangoError(400, "invalid_index_name", "Invalid index name: \(ErlangTerm.format(v))")
            }
            return s
        }
        let ddoc = try string("ddoc"), name = try string("name")
        if let ddoc, let name { return (ddoc, name) }
        let digest = Hex.encode(SHA1.hash(JSONWriter.canonical(definition)))
        return (ddoc ?? digest, name ?? digest)
    }

    /// CouchDB's listing order of indexes: by design document ID, then name (byte order).
    static func listedBefore(_ a: (ddoc: String, name: String), _ b: (ddoc: String, name: String)) -> Bool {
        a.ddoc == b.ddoc ? a.name.utf8.lexicographicallyPrecedes(b.name.utf8) : a.ddoc.utf8.lexicographicallyPrecedes(b.ddoc.utf8)
    }
}

extension Collection {
    /// The stored design document `ddocID`, parsed; nil when there is none.
    func parsedDesignDocument(_ ddocID: String) -> JSONObject? {
        guard let existing = try? get(docID: ddocID) else { return nil }
        return try? existing.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
    }

    /// Sets entry `name` of the design document's `member` object to `definition`:
    /// `existing` is the stored document (parsedDesignDocument; nil: a new one is made).
    func putQueryIndexEntry(_ existing: JSONObject?, ddocID: String, member: String, name: String,
                            definition: JSONValue) throws {
        var doc = existing ?? JSONObject([("language", .string("query"))])
        let parent = existing?["_rev"]?.stringValue
        doc["_id"] = nil
        doc["_rev"] = nil
        var entries = doc[member]?.objectValue ?? JSONObject()
        entries[name] = definition
        doc[member] = .object(entries)
        _ = try put(docID: ddocID, json: String(decoding: JSONWriter.ordered(.object(doc)), as: UTF8.self), parent: parent)
    }

    /// Removes entry `name` of the design document's `member` object; the document goes
    /// when nothing but its language is left. `existing`: the stored document.
    func removeQueryIndexEntry(_ existing: JSONObject, ddocID: String, member: String, name: String) throws {
        var doc = existing
        let rev = doc["_rev"]?.stringValue
        doc["_id"] = nil
        doc["_rev"] = nil
        var entries = doc[member]?.objectValue ?? JSONObject()
        entries[name] = nil
        doc[member] = entries.isEmpty ? nil : .object(entries)
        if doc.members.allSatisfy({ $0.key == "language" }) {
            _ = try delete(docID: ddocID, parent: rev)
        } else {
            _ = try put(docID: ddocID, json: String(decoding: JSONWriter.ordered(.object(doc)), as: UTF8.self), parent: rev)
        }
    }
}
