import CBLiteCore
import CouchWire
import NIOHTTP1

/// `/`, `/_up`, `/_all_dbs`, `/_uuids`, `/_session` and the server-level names that
/// cblite does not implement.
extension Router {
    func welcome(_ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD])
        res.sendJSON(200, .object(JSONObject([
            ("couchdb", .string("Welcome")),
            ("version", .string("3.5.0")),
            ("uuid", .string(server.serverUUID)),
            ("features", .array([])),
            ("vendor", .object(JSONObject([("name", .string("cblite")), ("version", .string(CBLiteVersion.string))]))),
        ])))
    }

    func serverEndpoint(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        if name == "_scheduler" { return try scheduler(req, res) }
        guard req.path.segments.count == 1 else { throw CouchError.notFound("missing") }
        switch name {
        case "_up":
            try requireMethod(req, [.GET, .HEAD])
            res.sendJSON(200, .object(JSONObject([("status", .string("ok"))])))
        case "_all_dbs":
            try requireMethod(req, [.GET, .HEAD])
            var names = databases.allNames()
            if try req.query.bool("descending", default: false) { names.reverse() }
            let skip = Int(try req.query.nonNegativeInt("skip") ?? 0)
            let limit = try req.query.nonNegativeInt("limit").map(Int.init) ?? Int.max
            let page = names.dropFirst(skip).prefix(limit)
            res.sendJSON(200, .array(page.map { .string($0) }))
        case "_uuids":
            try requireMethod(req, [.GET, .HEAD])
            let count = try req.query.nonNegativeInt("count") ?? 1
            guard count <= 1000 else { throw CouchError.forbidden("count parameter too large") }
            res.sendJSON(200, .object(JSONObject([("uuids", .array((0..<count).map { _ in .string(Listener.randomHex(16)) }))])))
        case "_session":
            try session(req, res)
        case "_active_tasks":
            try activeTasks(req, res)
        case "_replicate":
            try replicate(req, res)
        case "_config", "_node", "_cluster_setup", "_membership", "_users", "_dbs_info", "_reshard":
            throw CouchError.notImplemented("\(name) is not part of cblite's listener")
        default:
            throw CouchError(status: 400, error: "illegal_database_name",
                             reason: "Name: '\(name)'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter.")
        }
    }

    /// CouchDB's cookie login: POST (form or JSON) sets `AuthSession`, GET tells who is
    /// logged in, DELETE logs out.
    private func session(_ req: Request, _ res: ResponseWriter) throws {
        let auth = server.authenticator
        switch req.method {
        case .GET, .HEAD:
            let roles: [JSONValue] = req.user != nil || !auth.requiresAuth ? [.string("_admin")] : []
            var info = JSONObject([("authentication_handlers", .array([.string("cookie"), .string("default")]))])
            if let by = req.authenticatedBy { info["authenticated"] = .string(by) }
            res.sendJSON(200, .object(JSONObject([
                ("ok", .bool(true)),
                ("userCtx", .object(JSONObject([("name", req.user.map { .string($0) } ?? .null), ("roles", .array(roles))]))),
                ("info", .object(info)),
            ])))
        case .POST:
            let body = try req.body.readAll(limit: 64 * 1024)
            var name: String?, password: String?
            let type = req.contentType?.type ?? "application/json"
            if type == "application/x-www-form-urlencoded" {
                guard let fields = Credentials.formFields(body) else { throw CouchError.badRequest("malformed form body") }
                name = fields.last { $0.name == "name" || $0.name == "username" }?.value
                password = fields.last { $0.name == "password" }?.value
            } else if type == "application/json" {
                let o: JSONObject
                do { o = try body.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) } } catch {
                    throw CouchError.badRequest("Request body must be a JSON object")
                }
                name = o["name"]?.stringValue ?? o["username"]?.stringValue
                password = o["password"]?.stringValue
            } else {
                throw CouchError.badContentType("Content-Type must be application/x-www-form-urlencoded or application/json")
            }
            guard let name, let password else { throw CouchError.badRequest("name and password are required") }
            guard auth.check(name: name, password: password) else {
                res.sendError(.unauthorized(), headers: [("Set-Cookie", auth.sessionCookieHeader(nil))])
                return
            }
            res.sendJSON(200, .object(JSONObject([("ok", .bool(true)), ("name", .string(name)), ("roles", .array([.string("_admin")]))])),
                         headers: [("Set-Cookie", auth.sessionCookieHeader(auth.makeSession(user: name)))])
        case .DELETE:
            res.sendJSON(200, .object(JSONObject([("ok", .bool(true))])), headers: [("Set-Cookie", auth.sessionCookieHeader(nil))])
        default:
            throw CouchError.methodNotAllowed("GET,HEAD,POST,DELETE")
        }
    }
}
