import CBLiteCore
import CouchWire
import NIOHTTP1

/// `_all_docs` (GET, and POST with `{"keys": [...]}`) and `_design_docs`: the engine's
/// all-documents query (the one the C ABI and the tool use), streamed as it is read.
extension Router {
    /// CouchDB's `_all_docs` parameters the engine's query options take; other parameters
    /// are ignored, as CouchDB does.
    private static let allDocsParameters: Set<String> = [
        "key", "keys", "startkey", "start_key", "endkey", "end_key", "inclusive_end",
        "descending", "limit", "skip", "include_docs",
    ]

    func allDocs(_ name: String, _ req: Request, _ res: ResponseWriter, designOnly: Bool = false) throws {
        try requireMethod(req, [.GET, .HEAD, .POST])
        let coll = try collection(name)
        let q = req.query
        var options = JSONObject()
        for k in q.optionNames where Router.allDocsParameters.contains(k) {
            guard let value = try q.json(k) else { continue }
            options[k] = value
        }
        // For _all_docs a document-ID bound is the key itself (CouchDB's aliases; bare text).
        for (alias, key) in [("startkey_docid", "startkey"), ("start_key_doc_id", "startkey"),
                             ("endkey_docid", "endkey"), ("end_key_doc_id", "endkey")] {
            if let id = q[alias], options[key] == nil && options[key == "startkey" ? "start_key" : "end_key"] == nil {
                options[key] = .string(id)
            }
        }
        if req.method == .POST {
            try requireJSONContent(req)
            let body = try req.jsonObjectBody(limit: limits.maxBodyBytes)
            if let keys = body["keys"] {
                guard keys.arrayValue != nil else { throw CouchError.badRequest("`keys` member must be an array.") }
                options["keys"] = keys
            }
        }
        if designOnly {
            let descending = options["descending"]?.boolValue == true
            if options["startkey"] == nil && options["start_key"] == nil { options["startkey"] = .string(descending ? "_design0" : "_design/") }
            if options["endkey"] == nil && options["end_key"] == nil { options["endkey"] = .string(descending ? "_design/" : "_design0") }
        }
        let result = try coll.allDocsQuery(QueryOptions(object: options))
        let docOptions = try includedDocumentOptions(req)
        res.begin(status: 200)
        // A keys query has no place in the index to count from: CouchDB's offset is null.
        try result.writeJSON(updateSeq: try q.bool("update_seq", default: false), offset: options["keys"] == nil,
                             document: { try self.couchDocument(coll, Array($0), docOptions) }) {
            try res.write($0)
        }
        try res.write([10])
    }
}
