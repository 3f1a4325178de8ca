import CBLiteCore
import CouchWire
import NIOHTTP1

/// `/{db}/_local/{id}`: non-replicated documents, the replicators' checkpoints. Their
/// `_id` carries the `_local/` prefix on the wire and not in the engine.
extension Router {
    func localDocument(_ name: String, _ id: String, _ req: Request, _ res: ResponseWriter) throws {
        let coll = try collection(name)
        let wireID = "_local/" + id
        switch req.method {
        case .GET, .HEAD:
            var doc = try parseObject(try coll.getLocal(id: id))
            doc["_id"] = .string(wireID)
            // A local document's history is its one revision, as CouchDB shows it.
            if try req.query.bool("revs", default: false), let n = doc["_rev"]?.stringValue?.split(separator: "-").last {
                doc["_revisions"] = .object(JSONObject([("start", .int(0)), ("ids", .array([.string(String(n))]))]))
            }
            res.sendJSON(200, .object(Router.idFirst(doc)))
        case .PUT:
            try requireJSONContent(req)
            var body = try parseObject(try req.body.readAll(limit: limits.maxDocumentBytes))
            // The URL's ID wins over the body's, as for other documents (CouchDB's).
            body["_id"] = nil
            let rev = try writeLocal(coll, id: id, body, queryRev: req.query["rev"])
            let saved = JSONValue.object(JSONObject([("ok", .bool(true)), ("id", .string(wireID)), ("rev", .string(rev))]))
            if rev == "0-0" { return res.sendJSON(200, saved) }
            res.sendJSON(201, saved, headers: [("ETag", "\"\(rev)\""), req.location(ofDocument: wireID)])
        case .DELETE:
            try coll.deleteLocal(id: id, parent: req.query["rev"] ?? ifMatch(req))
            res.sendJSON(200, .object(JSONObject([("ok", .bool(true)), ("id", .string(wireID)), ("rev", .string("0-0"))])))
        default:
            throw CouchError.methodNotAllowed("GET,HEAD,PUT,DELETE")
        }
    }

    /// Writes local document `id` (bare: without `_local/`) as CouchDB 3 does — nothing
    /// conflicts, the new revision follows the one named (LocalRevisionRule.followsGiven) —
    /// or deletes it (`_deleted`: revision "0-0"). Returns the new revision. PUT and
    /// `_bulk_docs` both write through here.
    func writeLocal(_ coll: Collection, id: String, _ body: JSONObject, queryRev: String?) throws -> String {
        var body = body
        if let given = body["_id"]?.stringValue, given != "_local/" + id && given != id {
            throw CouchError.badRequest("Document id must match the URL")
        }
        body["_id"] = nil
        // CouchDB ignores the history its replicator sends with a checkpoint
        // (`"_revisions":{"start":0,"ids":["1"]}`).
        body["_revisions"] = nil
        if body["_deleted"]?.boolValue == true {
            try coll.deleteLocal(id: id, parent: body["_rev"]?.stringValue ?? queryRev)
            return "0-0"
        }
        body["_deleted"] = nil
        var w = JSONWriter(canonical: false)
        w.writeObject(body)
        return try coll.putLocal(id: id, json: String(decoding: w.bytes, as: UTF8.self), parent: queryRev, rule: .followsGiven)
    }

    /// `_id` and `_rev` first, as CouchDB orders them.
    static func idFirst(_ o: JSONObject) -> JSONObject {
        var out = JSONObject()
        for k in ["_id", "_rev"] { if let v = o[k] { out.members.append((k, v)) } }
        for m in o.members where m.key != "_id" && m.key != "_rev" { out.members.append(m) }
        return out
    }
}
