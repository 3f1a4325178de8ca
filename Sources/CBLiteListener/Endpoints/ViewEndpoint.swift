import CBLiteCore
import CouchWire
import NIOHTTP1

/// `/{db}/_design/{ddoc}/_view/{view}` for views registered with `Listener.serveView`:
/// CouchDB's query parameters (JSON-valued) and POST `{"keys": [...]}`, answered with
/// `{"total_rows","offset","rows"}`. Design documents holding JavaScript are not run.
extension Router {
    func view(_ name: String, _ ddoc: String, _ viewName: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD, .POST])
        _ = try collection(name)
        guard let view = server.views.view(database: name, designDoc: ddoc, name: viewName) else {
            throw CouchError.notFound("missing_named_view")
        }
        var options = JSONObject()
        for (k, v) in req.query.items {
            // CouchDB's view parameters are JSON; a few (stale=ok, update=after) are bare words.
            options[k] = (try? JSONParser.parse(v)) ?? .string(v)
        }
        if req.method == .POST {
            for (k, v) in try req.jsonObjectBody(limit: limits.maxBodyBytes).members { options[k] = v }
        }
        let result = try view.query(QueryOptions(object: options))
        res.sendJSON(200, raw: try result.json())
    }

    /// Design documents with functions would need JavaScript: refused clearly.
    static func refuseJavaScript(_ docID: String, _ body: [UInt8]) throws {
        guard docID.hasPrefix("_design/"),
              let o = try? body.withUnsafeBufferPointer({ try JSONParser.parseObject(bytes: $0) }) else { return }
        for key in ["views", "filters", "shows", "lists", "updates", "validate_doc_update", "rewrites"] {
            if let v = o[key], !(v.objectValue?.isEmpty ?? false), !v.isNull {
                throw CouchError.notImplemented("Design documents with JavaScript (\(key)) are not supported: cblite runs no JavaScript. Register views through the API.")
            }
        }
    }
}
