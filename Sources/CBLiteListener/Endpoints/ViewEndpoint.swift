import CBLiteCore
import CouchWire
import NIOHTTP1

/// `/{db}/_design/{ddoc}/_view/{view}` for views registered with `Listener.serveView`:
/// CouchDB's query parameters (JSON-valued) and POST `{"keys": [...]}`, answered with
/// `{"total_rows","offset","rows"}`. The JavaScript views of stored design documents
/// are not run.
extension Router {
    func view(_ name: String, _ ddoc: String, _ viewName: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD, .POST])
        let coll = try collection(name)
        guard let view = server.views.view(database: name, designDoc: ddoc, name: viewName) else {
            throw unservedView(coll, ddoc, viewName)
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

    /// Why a view that is not registered cannot be queried: a stored design document's
    /// JavaScript view is not run (501, not an empty or made-up result); otherwise it
    /// does not exist.
    private func unservedView(_ coll: Collection, _ ddoc: String, _ viewName: String) -> CouchError {
        let stored = try? coll.get(docID: "_design/" + ddoc)
        let views = stored.flatMap { b in try? b.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) } }?["views"]
        if views?.objectValue?[viewName] != nil {
            return CouchError.notImplemented("The view \(viewName) of _design/\(ddoc) is JavaScript, which cblite does not run; register the view through the API.")
        }
        return CouchError.notFound("missing_named_view")
    }
}
