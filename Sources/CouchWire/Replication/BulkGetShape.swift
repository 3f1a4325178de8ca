import CBLiteBase

/// `_bulk_get` as a peer answers it (the listener, JSON and multipart, and the C ABI's
/// `cbl_collection_docs_bulk_get`).
public enum BulkGetShape {
    /// `{"docs": [{"id", "rev"?, "atts_since"?}, ...]}`, every entry with an `id`.
    public static func request(_ body: JSONObject) throws -> [BulkGetRequest] {
        try entries(body).map { e in
            guard let e else { throw CBLError.badRequest("each doc needs an `id`") }
            return e
        }
    }

    /// The same, an entry without an `id` string given as nil: CouchDB answers that entry
    /// with an error of its own (`missingID`) and the others as usual.
    public static func entries(_ body: JSONObject) throws -> [BulkGetRequest?] {
        guard let docs = body["docs"]?.arrayValue else { throw CBLError.badRequest("Missing JSON list of 'docs'.") }
        return try docs.map { d in
            guard let o = d.objectValue else { throw CBLError.badRequest("each doc must be a JSON object") }
            guard let id = o["id"]?.stringValue else { return nil }
            let rev = try o["rev"].map { v -> String in
                guard let s = v.stringValue else { throw CBLError.badRequest("`rev` must be a string") }
                return s
            }
            let since = try o["atts_since"].map { v -> [String] in
                guard let a = v.arrayValue, a.allSatisfy({ $0.stringValue != nil }) else {
                    throw CBLError.badRequest("atts_since must be a list of revisions")
                }
                return a.compactMap(\.stringValue)
            }
            return BulkGetRequest(id: id, rev: rev, attsSince: since)
        }
    }

    /// `{"results": [{"id", "docs": [{"ok": doc} | {"error": {"id","rev","error","reason"}}]}]}`
    /// (a missing revision is an error entry there, as CouchDB); a nil item is an entry
    /// that named no `id` (entries()).
    public static func answer(_ items: [BulkGetItem?]) -> [UInt8] {
        var w = JSONWriter(canonical: false, capacity: 4096)
        w.append("{\"results\":[")
        for (i, item) in items.enumerated() {
            if i > 0 { w.appendByte(UInt8(ascii: ",")) }
            guard let item else {
                w.append("{\"id\":null,\"docs\":[{\"error\":"); w.appendRaw(missingID); w.append("}]}")
                continue
            }
            w.append("{\"id\":")
            w.writeString(item.id)
            w.append(",\"docs\":[")
            var first = true
            for part in parts(item) {
                if !first { w.appendByte(UInt8(ascii: ",")) }
                first = false
                switch part {
                case .revision(let r): OpenRevsShape.write(r, into: &w)
                case .error(let e): w.append("{\"error\":"); w.appendRaw(e); w.appendByte(UInt8(ascii: "}"))
                }
            }
            w.append("]}")
        }
        w.append("]}")
        return w.bytes
    }

    /// One entry of an item's answer: a revision read, or an error object.
    public enum Part {
        case revision(OpenRevsResult)
        case error([UInt8])
    }

    /// An item's entries in order: the document's error, or one per revision (a missing
    /// one as a `not_found` error). The multipart answer writes the same entries as parts.
    public static func parts(_ item: BulkGetItem) -> [Part] {
        if let e = item.error { return [.error(error(id: item.id, rev: item.rev, e))] }
        return item.results.map { r in
            if case .missing(let rev) = r { return .error(error(id: item.id, rev: rev, CBLError(.notFound, "missing"))) }
            return .revision(r)
        }
    }

    /// The error of an entry without an `id`, CouchDB's words.
    public static let missingID = JSONWriter.ordered(.object(JSONObject([
        ("id", .null), ("rev", .null), ("error", .string("bad_request")), ("reason", .string("document id missed"))])))

    /// `{"id","rev","error","reason"}`; a missing document's rev is "undefined", as CouchDB writes it.
    public static func error(id: String, rev: String?, _ e: CBLError) -> [UInt8] {
        JSONWriter.ordered(.object(JSONObject([("id", .string(id)), ("rev", .string(rev ?? "undefined"))] + CouchError(e).members)))
    }
}

// MARK: the replicator's side

extension BulkGetShape {
    /// `_bulk_get` request body (CouchDB's replicator's shape).
    public static func requestBody(_ docs: [(id: String, rev: String, attsSince: [String])]) -> [UInt8] {
        let items: [JSONValue] = docs.map { d in
            var o = JSONObject([("id", .string(d.id)), ("rev", .string(d.rev))])
            if !d.attsSince.isEmpty { o["atts_since"] = .array(d.attsSince.map { .string($0) }) }
            return .object(o)
        }
        return JSONWriter.ordered(.object(JSONObject([("docs", .array(items))])))
    }

    /// `_bulk_get` JSON answer: `{"results":[{"id","docs":[{"ok":doc}|{"error":{…}}]}]}`.
    /// One document that cannot be parsed makes the whole answer fail: the caller then
    /// fetches its documents one by one, so only that one is lost.
    public static func parseAnswer(_ body: [UInt8]) throws -> [ReplicationMessages.FetchedRevision] {
        let o = try ReplicationMessages.object(body, "_bulk_get")
        guard let results = o["results"]?.arrayValue else { throw ReplicationMessages.bad("_bulk_get has no \"results\" array") }
        var out: [ReplicationMessages.FetchedRevision] = []
        for r in results {
            let id = r.objectValue?["id"]?.stringValue ?? ""
            for d in r.objectValue?["docs"]?.arrayValue ?? [] { out.append(ReplicationMessages.fetched(d, id: id)) }
        }
        return out
    }
}
