import CBLiteCore
import CouchWire
import NIOHTTP1

/// `_purge`: `{doc: [leaf revs]}` -> `{"purge_seq": null, "purged": {doc: [purged leaves]}}`
/// (201), and the purge history: `_purged_infos`, `_purged_infos_limit`.
extension Router {
    func purge(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        try requireJSONContent(req)
        let coll = try collection(name)
        let body = try req.jsonObjectBody(limit: limits.maxBodyBytes)
        // Checked whole first: CouchDB purges nothing of a request with a bad entry.
        let requests: [(String, [String])] = try body.members.map { docID, v in
            guard let a = v.arrayValue, a.allSatisfy({ $0.stringValue != nil }) else {
                throw CouchError.badRequest("Invalid list of revisions")
            }
            return (docID, a.compactMap(\.stringValue))
        }
        var purged = JSONObject()
        for (docID, revs) in requests {
            purged.members.append((docID, .array(try coll.purge(docID: docID, revs: revs).map { .string($0) })))
        }
        res.sendJSON(201, .object(JSONObject([("purge_seq", .null), ("purged", .object(purged))])))
    }

    func purgedInfos(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD])
        let infos = try collection(name).purgedInfos().map { info in
            JSONValue.object(JSONObject([("id", .string(info.docID)), ("revs", .array(info.revs.map { .string($0) }))]))
        }
        res.sendJSON(200, .object(JSONObject([("purged_infos", .array(infos))])))
    }

    func purgedInfosLimit(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        let db = try collection(name).database
        switch req.method {
        case .GET, .HEAD:
            res.sendJSON(200, .int(try db.purgedInfosLimit))
        case .PUT:
            try requireJSONContent(req)
            guard let n = try req.jsonBody(limit: 1024).intValue, n > 0 else {
                throw CouchError.badRequest("`purged_infos_limit` must be positive integer")
            }
            try db.setPurgedInfosLimit(n)
            res.sendJSON(200, .object(JSONObject([("ok", .bool(true))])))
        default:
            throw CouchError.methodNotAllowed("GET,HEAD,PUT")
        }
    }
}
