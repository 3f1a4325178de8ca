import CBLiteCore
import CouchWire
import NIOHTTP1

/// `/_session`, CouchDB's cookie login: POST (form or JSON `name`/`password`) sets the
/// `AuthSession` cookie (SessionCookie), GET tells who the request is, DELETE logs out.
/// POST and DELETE with `?next=PATH` answer 302 to it (on this server), as CouchDB.
extension Router {
    /// The handlers `/_session` reports: cookie, then Basic ("default").
    static let authenticationHandlers: [JSONValue] = [.string("cookie"), .string("default")]

    func session(_ req: Request, _ res: ResponseWriter) throws {
        let auth = server.authenticator
        switch req.method {
        case .GET, .HEAD:
            var info = JSONObject([("authentication_handlers", .array(Router.authenticationHandlers))])
            if let by = req.authenticatedBy { info["authenticated"] = .string(by) }
            res.sendJSON(200, .object(JSONObject([("ok", .bool(true)), ("userCtx", req.userCtx.json()), ("info", .object(info))])))
        case .POST:
            let (name, password) = try loginFields(req)
            guard let user = auth.check(name: name, password: password), let session = auth.makeSession(user: name) else {
                return res.sendError(.unauthorized(), headers: [("Set-Cookie", auth.sessionCookieHeader(nil))])
            }
            let body = JSONValue.object(JSONObject([("ok", .bool(true)), ("name", .string(name)),
                                                   ("roles", .array(user.roles.map { .string($0) }))]))
            sendSessionAnswer(req, res, body, cookie: auth.sessionCookieHeader(session))
        case .DELETE:
            sendSessionAnswer(req, res, .object(JSONObject([("ok", .bool(true))])), cookie: auth.sessionCookieHeader(nil))
        default:
            throw CouchError.methodNotAllowed("GET,HEAD,POST,DELETE")
        }
    }

    /// 200 with the cookie, or 302 to `?next=` (a path on this server: never elsewhere).
    private func sendSessionAnswer(_ req: Request, _ res: ResponseWriter, _ body: JSONValue, cookie: String) {
        guard let next = req.query["next"] else { return res.sendJSON(200, body, headers: [("Set-Cookie", cookie)]) }
        let scheme = server.ownAddress.tls ? "https" : "http"
        let host = req.header("Host") ?? "\(server.configuration.host):\(server.ownAddress.port)"
        let location = "\(scheme)://\(host)" + (next.hasPrefix("/") ? next : "/" + next)
        res.sendJSON(302, body, headers: [("Location", location), ("Set-Cookie", cookie)])
    }

    /// The name and password of a login body, with CouchDB's errors (couch_httpd_auth):
    /// 415 for a body neither form nor JSON, 400 without a name or with two different ones
    /// (`name` and `username`). A missing password is an empty one (then a failed login).
    private func loginFields(_ req: Request) throws -> (name: String, password: String) {
        let fields: [String: String]
        switch req.contentType?.type {
        case "application/x-www-form-urlencoded":
            guard let f = Credentials.formFields(try req.body.readAll(limit: 64 * 1024)) else {
                throw CouchError.badRequest("malformed form body")
            }
            fields = Dictionary(f.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        case "application/json":
            guard let o = try req.jsonBody(limit: 64 * 1024).objectValue else {
                throw CouchError.badRequest("Request body must be a JSON object")
            }
            fields = Dictionary(o.members.compactMap { m in m.value.stringValue.map { (m.key, $0) } },
                                uniquingKeysWith: { first, _ in first })
        default:
            throw CouchError.badContentType("Content-Type must be 'application/x-www-form-urlencoded' or 'application/json'")
        }
        let name: String
        switch (fields["name"], fields["username"]) {
        case (nil, nil): throw CouchError.badRequest("request body must contain a username")
        case (let n?, nil), (nil, let n?): name = n
        case (let a?, let b?):
            guard a == b else { throw CouchError.badRequest("request body contains different usernames") }
            name = a
        }
        return (name, fields["password"] ?? "")
    }
}
