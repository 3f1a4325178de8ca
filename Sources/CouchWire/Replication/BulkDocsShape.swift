import CBLiteBase

/// `_bulk_docs` as a peer answers it (the listener, and the C ABI's `cbl_collection_docs_save` and
/// `cbl_collection_docs_put_existing`).
public enum BulkDocsShape {
    public struct Request {
        public var docs: [JSONObject]
        /// nil when the body does not say (CouchDB's default: true).
        public var newEdits: Bool?
        public var allOrNothing: Bool
    }

    /// `{"docs": [doc, ...], "new_edits"?: bool, "all_or_nothing"?: bool}`; with
    /// `allowArray` (the C ABI's) also a bare `[doc, ...]`.
    public static func request(_ body: JSONValue, allowArray: Bool = false) throws -> Request {
        let object = body.objectValue
        guard let docs = object?["docs"]?.arrayValue ?? (allowArray ? body.arrayValue : nil) else {
            throw CBLError.badRequest("POST body must include `docs` parameter.")
        }
        return Request(
            docs: try docs.map { d in
                guard let o = d.objectValue else { throw CBLError.badRequest("Document must be a JSON object") }
                return o
            },
            newEdits: try object?["new_edits"].map { try $0.boolOption("new_edits") },
            allOrNothing: try object?["all_or_nothing"].map { try $0.boolOption("all_or_nothing") } ?? false)
    }

    /// What CouchDB refuses for the whole request over HTTP before writing anything: an
    /// illegal document ID anywhere (`illegal_docid`), and with `new_edits: false` a
    /// document without `_rev` or `_revisions`.
    public static func checkWholeRequest(_ request: Request) throws {
        for doc in request.docs {
            if let id = doc["_id"] {
                guard let s = id.stringValue else { throw CouchError(status: 400, error: "illegal_docid", reason: "Document id must be a string") }
                if s.hasPrefix("_") && !s.hasPrefix("_design/") && !s.hasPrefix("_local/") {
                    throw CouchError(status: 400, error: "illegal_docid", reason: "Only reserved document ids may start with underscore.")
                }
            }
            if request.newEdits == false && doc["_rev"] == nil && doc["_revisions"] == nil {
                throw CouchError.badRequest("When `new_edits: false`, the document needs `_rev` or `_revisions` specified")
            }
        }
    }

    /// CouchDB 3's answer to `all_or_nothing` (417): every document refused alike.
    public static func allOrNothingAnswer(_ request: Request) -> [UInt8] {
        JSONWriter.ordered(.array(request.docs.map { doc in
            .object(JSONObject([("id", doc["_id"] ?? .null), ("rev", .string("0-")), ("error", .string("not_implemented")),
                                ("reason", .string("all_or_nothing is not supported"))]))
        }))
    }

    /// `[{"ok":true,"id","rev"} | {"id","rev"?,"error","reason"}, ...]`; with
    /// `failuresOnly` (CouchDB's answer to `new_edits: false`) only the failures.
    public static func answer(_ results: [WriteResult], failuresOnly: Bool = false) -> [UInt8] {
        JSONWriter.ordered(.array(results.compactMap { r in
            if let e = r.error {
                var o = JSONObject([("id", .string(r.docID))])
                if let rev = r.revID { o["rev"] = .string(rev) }
                o.members += CouchError(e).members
                return .object(o)
            }
            if failuresOnly { return nil }
            return .object(JSONObject([("ok", .bool(true)), ("id", .string(r.docID)), ("rev", .string(r.revID ?? ""))]))
        }))
    }
}

// MARK: the replicator's side

extension BulkDocsShape {
    /// `_bulk_docs` with `new_edits: false`, from documents already in JSON.
    public static func requestBody(_ docs: [[UInt8]]) -> [UInt8] {
        var w = JSONWriter(canonical: false, capacity: docs.reduce(64) { $0 + $1.count + 1 })
        w.append("{\"new_edits\":false,\"docs\":[")
        for (i, d) in docs.enumerated() {
            if i > 0 { w.appendByte(UInt8(ascii: ",")) }
            w.appendRaw(d)
        }
        w.append("]}")
        return w.bytes
    }

    /// `_bulk_docs` answer: the documents that failed (CouchDB lists only those when
    /// new_edits is false; entries with "ok" or a "rev" and no "error" are successes).
    public static func parseFailures(_ body: [UInt8]) throws -> [(id: String, rev: String?, error: String, reason: String)] {
        let v = try ReplicationMessages.parse(body, "_bulk_docs")
        guard let items = v.arrayValue else { throw ReplicationMessages.bad("_bulk_docs did not answer a list") }
        return items.compactMap { item in
            guard let o = item.objectValue, let error = o["error"]?.stringValue else { return nil }
            return (o["id"]?.stringValue ?? "", o["rev"]?.stringValue, error, o["reason"]?.stringValue ?? "")
        }
    }
}
