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
