import CBLiteCore
import CouchWire
import NIOHTTP1

/// `/`, `/_up`, `/_all_dbs`, `/_uuids` and the server-level names that
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
        if name == "_node" { return try node(req, res) }
        if name == "_config" { return try config(req.path.segments.dropFirst(), req, res) }
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
            try uuids(req, res)
        case "_membership":
            // A single node, named as CouchDB names one: cluster and all nodes alike.
            try requireMethod(req, [.GET, .HEAD])
            let node: JSONValue = .array([.string(nodeName)])
            res.sendJSON(200, .object(JSONObject([("all_nodes", node), ("cluster_nodes", node)])))
        case "_session":
            try session(req, res)
        case "_active_tasks":
            try activeTasks(req, res)
        case "_replicate":
            try replicate(req, res)
        case "_dbs_info":
            try dbsInfo(req, res)
        case "_cluster_setup", "_users", "_reshard":
            throw CouchError.notImplemented("\(name) is not part of cblite's listener")
        default:
            throw CouchError(status: 400, error: "illegal_database_name",
                             reason: "Name: '\(name)'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter.")
        }
    }

    /// `_dbs_info`: POST `{"keys": [names]}` (at most 100, as CouchDB), or GET for every
    /// database; each `{"key", "info"}` or `{"key", "error": "not_found"}`.
    private func dbsInfo(_ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD, .POST])
        var names = databases.allNames()
        if req.method == .POST {
            try requireJSONContent(req)
            guard let keys = try req.jsonObjectBody(limit: 1024 * 1024)["keys"]?.arrayValue,
                  keys.allSatisfy({ $0.stringValue != nil }) else {
                throw CouchError.badRequest("`keys` member must exist.")
            }
            guard keys.count <= 100 else { throw CouchError.badRequest("`keys` member must be at most 100 names") }
            names = keys.compactMap(\.stringValue)
        }
        res.sendJSON(200, .array(try names.map { name in
            guard let coll = try? collection(name) else {
                return .object(JSONObject([("key", .string(name)), ("error", .string("not_found"))]))
            }
            return .object(JSONObject([("key", .string(name)), ("info", .object(try databaseInfo(name, coll)))]))
        }))
    }

    /// This single node's name, as CouchDB names nodes.
    var nodeName: String { "cblite@\(server.configuration.host)" }

    /// `/_node/{_local|name}[/_config[/section[/key]]]`.
    private func node(_ req: Request, _ res: ResponseWriter) throws {
        let s = req.path.segments
        guard s.count >= 2 else { throw CouchError.notFound("missing") }
        guard s[1] == "_local" || s[1] == nodeName else {
            throw CouchError(status: 412, error: "nodedown", reason: "\(s[1]) is down")
        }
        if s.count == 2 {
            try requireMethod(req, [.GET, .HEAD])
            return res.sendJSON(200, .object(JSONObject([("name", .string(nodeName))])))
        }
        switch s[2] {
        case "_config":
            try config(s[3...], req, res)
        case "_stats":
            try requireMethod(req, [.GET, .HEAD])
            let tree = server.statistics.json(openDatabases: databases.openCount)
            res.sendJSON(200, ServerStatistics.select(tree, s[3...]))
        case "_versions" where s.count == 3:
            try requireMethod(req, [.GET, .HEAD])
            res.sendJSON(200, Self.versions)
        default:
            throw CouchError.notImplemented("/_node/\(s[1])/\(s[2]) is not part of cblite's listener")
        }
    }

    /// `/_node/_local/_versions`: the engines inside, in CouchDB's shape (no Erlang here).
    /// Versions as CouchDB prints them: ICU's four version bytes without trailing zeros.
    static let versions: JSONValue = {
        func trimmed(_ v: String) -> String {
            var parts = v.split(separator: ".")
            while parts.count > 1, parts.last == "0" { parts.removeLast() }
            return parts.joined(separator: ".")
        }
        return .object(JSONObject([
            ("javascript_engine", .object(JSONObject([("name", .string(EngineVersions.javascriptEngine)),
                                                      ("version", .string(EngineVersions.javascriptVersion))]))),
            ("collation_driver", .object(JSONObject([
                ("name", .string("libicu")),
                ("library_version", .string(EngineVersions.icuLibraryVersion)),
                ("collator_version", .string(trimmed(EngineVersions.collatorVersion))),
                ("collation_algorithm_version", .string(trimmed(EngineVersions.collationAlgorithmVersion))),
            ]))),
        ]))
    }()

    /// `…/_config[/section[/key]]`, `/_node/{node}/_config` or CouchDB 1.x's `/_config`
    /// (which older clients, the PyPI `CouchDB` one among them, still use).
    func config(_ s: ArraySlice<String>, _ req: Request, _ res: ResponseWriter) throws {
        let s = Array(s)
        switch s.count {
        case 0:
            try requireMethod(req, [.GET, .HEAD])
            res.sendJSON(200, server.config.all())
        case 1:
            try requireMethod(req, [.GET, .HEAD])
            res.sendJSON(200, server.config.section(s[0]))
        case 2:
            let (section, key) = (s[0], s[1])
            switch req.method {
            case .GET, .HEAD:
                guard let v = server.config.value(section, key) else { throw CouchError.notFound("unknown_config_value") }
                res.sendJSON(200, .string(v))
            case .PUT:
                guard !ServerConfig.blacklisted.contains(section) else {
                    throw CouchError.forbidden("Config section blacklisted for modification over HTTP API.")
                }
                let value: JSONValue
                do { value = try req.jsonBody(limit: 64 * 1024) } catch { throw CouchError.badRequest("invalid UTF-8 JSON") }
                guard let text = value.stringValue else { throw CouchError.badRequest("a JSON string expected") }
                res.sendJSON(200, .string(try server.config.set(section, key, text)))
            case .DELETE:
                res.sendJSON(200, .string(try server.config.delete(section, key)))
            default:
                throw CouchError(status: 405, error: "method_not_allowed", reason: "Only GET,PUT,DELETE allowed")
            }
        default:
            throw CouchError.notFound("missing")
        }
    }

    /// `/_uuids?count=N` (1 to 1000) by the configured algorithm, never cached (CouchDB's
    /// headers: each answer is new).
    private func uuids(_ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD])
        var count = 1
        if let text = req.query["count"] {
            guard let n = Int(text), n > 0 else { throw CouchError.badRequest("count must be a positive integer") }
            guard n <= 1000 else { throw CouchError.badRequest("count parameter too large") }
            count = n
        }
        var w = JSONWriter(canonical: false)
        w.write(.object(JSONObject([("uuids", .array((0..<count).map { _ in .string(server.uuids.next()) }))])))
        let body = w.bytes
        res.sendJSON(200, raw: body, headers: [
            ("Cache-Control", "no-cache"), ("Expires", "Mon, 01 Jan 1990 00:00:00 GMT"), ("Pragma", "no-cache"),
            ("ETag", "\"" + Hex.encode(MD5.hash(body)) + "\""),
        ])
    }
}
