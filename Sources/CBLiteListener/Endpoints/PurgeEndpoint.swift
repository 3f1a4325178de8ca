import CBLiteCore
import CouchWire
import NIOHTTP1

/// `_purge`: `{doc: [leaf revs]}` -> `{"purge_seq": null, "purged": {doc: [revs]}}` (201).
extension Router {
    func purge(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        try requireJSONContent(req)
        let coll = try collection(name)
        let body = try req.jsonObjectBody(limit: limits.maxBodyBytes)
        var purged = JSONObject()
        for (docID, v) in body.members {
            guard let a = v.arrayValue, a.allSatisfy({ $0.stringValue != nil }) else {
                throw CouchError.badRequest("each document must map to a list of revision IDs")
            }
            let revs = try coll.purge(docID: docID, revs: a.compactMap(\.stringValue))
            purged.members.append((docID, .array(revs.map { .string($0) })))
        }
        res.sendJSON(201, .object(JSONObject([("purge_seq", .null), ("purged", .object(purged))])))
    }
}
