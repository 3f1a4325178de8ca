import CBLiteCore
import CouchWire
import NIOHTTP1

/// `/{db}/_security`: the database's SecurityObject. GET answers the stored object (else
/// the configured default, CouchDB 3's `{"members":{"roles":["_admin"]},"admins":…}` when the
/// listener has users); PUT (a database admin's, Authorization) replaces it.
extension Router {
    func security(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        let coll = try collection(name)
        switch req.method {
        case .GET, .HEAD:
            res.sendJSON(200, .object(try securityObject(name).json))
        case .PUT:
            let given = try req.jsonBody(limit: 1024 * 1024)
            guard let object = given.objectValue, let security = try? SecurityObject(object) else {
                // CouchDB 3.5's answer to a malformed object (each shard refuses it, and the
                // cluster reports that no majority wrote it); clients match on the status.
                Loggers.listener.debug("PUT /\(name)/_security: not a valid security object")
                throw CouchError(status: 500, error: "error", reason: "no_majority")
            }
            try coll.database.setSecurityObject(security)
            res.sendJSON(200, .object(JSONObject([("ok", .bool(true))])))
        default:
            throw CouchError.methodNotAllowed("PUT,GET")
        }
    }
}
