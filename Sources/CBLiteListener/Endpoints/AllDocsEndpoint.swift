import CBLiteCore
import CouchWire
import NIOHTTP1

/// `_all_docs` (GET, and POST with `{"keys": [...]}` and other parameters) and
/// `_design_docs`: the engine's all-documents query (the one the C ABI and the tool use),
/// streamed as it is read; `…/queries` runs several in one request.
extension Router {
    /// CouchDB's `_all_docs` parameters the engine's query options take; other parameters
    /// are ignored, as CouchDB does.
    private static let allDocsParameters: Set<String> = [
        "key", "keys", "startkey", "start_key", "endkey", "end_key", "inclusive_end",
        "descending", "limit", "skip", "include_docs", "conflicts",
    ]

    func allDocs(_ name: String, _ req: Request, _ res: ResponseWriter, designOnly: Bool = false) throws {
        try requireMethod(req, [.GET, .HEAD, .POST])
        let coll = try collection(name)
        var options = try Router.allDocsOptions(req.query)
        if req.method == .POST {
            try requireJSONContent(req)
            try Router.mergeAllDocsBody(try req.jsonObjectBody(limit: limits.maxBodyBytes), into: &options)
        }
        let query = try allDocsQuery(coll, options, designOnly: designOnly)      // errors before the head
        let updateSeq = try req.query.bool("update_seq", default: false)
        let document = try allDocsDocument(coll, req)
        res.begin(status: 200)
        try query.result.writeJSON(updateSeq: updateSeq, offset: !query.byKeys, couchShape: true, document: document) { try res.write($0) }
        try res.write([10])
    }

    /// `POST …/_all_docs/queries` (and `_design_docs/queries`): `{"queries": [{params}, ...]}`
    /// -> `{"results": [answer, ...]}`, each query with the request's parameters under its own.
    func allDocsQueries(_ name: String, _ req: Request, _ res: ResponseWriter, designOnly: Bool = false) throws {
        try requireMethod(req, [.POST])
        try requireJSONContent(req)
        let coll = try collection(name)
        let base = try Router.allDocsOptions(req.query)
        let all = try req.queriesBody(limit: limits.maxBodyBytes).map { o in
            var options = base
            try Router.mergeAllDocsBody(o, into: &options)
            return (query: try allDocsQuery(coll, options, designOnly: designOnly), updateSeq: options["update_seq"]?.boolValue == true)
        }
        let document = try allDocsDocument(coll, req)
        res.begin(status: 200)
        try res.write(Array("{\"results\":[\n".utf8))
        for (i, q) in all.enumerated() {
            if i > 0 { try res.write(Array(",\n".utf8)) }
            try q.query.result.writeJSON(updateSeq: q.updateSeq, offset: !q.query.byKeys, couchShape: true, document: document) { try res.write($0) }
        }
        try res.write(Array("\n]}\n".utf8))
    }

    /// Documents as CouchDB's peers read them (the one renderer `include_docs` rows share).
    private func allDocsDocument(_ coll: Collection, _ req: Request) throws -> (UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        let docOptions = try includedDocumentOptions(req)
        return { try self.couchDocument(coll, Array($0), docOptions) }
    }

    /// The query string's parameters as engine options (values JSON, as CouchDB's).
    private static func allDocsOptions(_ q: QueryParameters) throws -> JSONObject {
        var options = JSONObject()
        for k in q.optionNames where allDocsParameters.contains(k) {
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
        return options
    }

    /// A request body's (or one query's) parameters over the query string's: `keys` must
    /// be an array; `update_seq` is kept for the answer.
    private static func mergeAllDocsBody(_ body: JSONObject, into options: inout JSONObject) throws {
        if let keys = body["keys"], keys.arrayValue == nil { throw CouchError.badRequest("`keys` body member must be an array.") }
        for (k, v) in body.members where allDocsParameters.contains(k) || k == "update_seq" { options[k] = v }
    }

    /// Runs the query (its errors come here, before any answer); `byKeys`: a keys query,
    /// which has no place in the index to count from (CouchDB's offset is null).
    private func allDocsQuery(_ coll: Collection, _ options: JSONObject, designOnly: Bool) throws -> (result: QueryEnumerator, byKeys: Bool) {
        var options = options
        options["update_seq"] = nil
        if designOnly {
            let descending = options["descending"]?.boolValue == true
            if options["startkey"] == nil && options["start_key"] == nil { options["startkey"] = .string(descending ? "_design0" : "_design/") }
            if options["endkey"] == nil && options["end_key"] == nil { options["endkey"] = .string(descending ? "_design/" : "_design0") }
        }
        return (try coll.allDocsQuery(QueryOptions(object: options)), options["keys"] != nil)
    }
}
