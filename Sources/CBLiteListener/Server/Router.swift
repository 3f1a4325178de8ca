import CBLiteCore
import CouchWire
import NIOHTTP1

/// Maps a request to its endpoint, on a worker thread, and turns any error into
/// CouchDB's `{"error","reason"}` answer. Endpoints live in Endpoints/, one file per
/// concern, as extensions of this type.
final class Router: @unchecked Sendable {
    // Unowned: the context owns its router (a strong reference both ways leaked every
    // listener, its thread pool and the databases it served; seen by LeakSanitizer).
    unowned let server: ServerContext
    private let inFlight: InFlightRequests

    init(server: ServerContext, inFlight: InFlightRequests) {
        self.server = server
        self.inFlight = inFlight
    }

    var databases: DatabaseRegistry { server.databases }
    var limits: ListenerConfiguration.Limits { server.limits }

    func handle(_ req: Request, _ res: ResponseWriter) {
        inFlight.enter()
        defer { inFlight.leave() }
        do {
            try authorize(req)
            req.body.release()
            try writingAs(req) { try route(req, res) }     // validate_doc_update's userCtx
            Loggers.listener.debug("\(req.method) \(req.head.uri)")
        } catch {
            let e = CouchError.from(error)
            // A failure of ours, not of the request: worth a line at the default level.
            if e.status >= 500 { Loggers.listener.warning("\(req.method) \(req.head.uri): \(e.status) \(e.reason)") }
            else { Loggers.listener.debug("\(req.method) \(req.head.uri): \(e.status) \(e.reason)") }
            if !res.hasStarted { res.sendError(e, headers: e.status == 401 ? server.authenticator.challenge(req.head) : []) }
        }
        if !res.hasStarted { res.sendError(CouchError(status: 500, error: "unknown_error", reason: "no response")) }
        res.end()
    }

    private func route(_ req: Request, _ res: ResponseWriter) throws {
        let s = req.path.segments
        guard let first = s.first else { return try welcome(req, res) }
        if first == ReplicatorDatabase.name { try server.replicatorDatabase.open() }   // made on first use, as CouchDB has it
        else if first == UsersDatabase.name { try server.usersDatabase.open() }
        else if first.hasPrefix("_") { return try serverEndpoint(first, req, res) }
        if s.count == 1 { return try databaseEndpoint(first, req, res) }
        let second = s[1]
        if s.count == 2 {
            switch second {
            case "_all_docs": return try allDocs(first, req, res)
            case "_changes": return try changes(first, req, res)
            case "_local_docs": return try localDocs(first, req, res)
            case "_design_docs": return try allDocs(first, req, res, designOnly: true)
            case "_revs_diff": return try revsDiff(first, req, res)
            case "_missing_revs": return try missingRevs(first, req, res)
            case "_bulk_docs": return try bulkDocs(first, req, res)
            case "_bulk_get": return try bulkGet(first, req, res)
            case "_ensure_full_commit": return try ensureFullCommit(first, req, res)
            case "_compact": return try compact(first, req, res)
            case "_purge": return try purge(first, req, res)
            case "_purged_infos": return try purgedInfos(first, req, res)
            case "_purged_infos_limit": return try purgedInfosLimit(first, req, res)
            case "_revs_limit": return try revsLimit(first, req, res)
            case "_view_cleanup": return try viewCleanup(first, req, res)
            case "_find", "_index", "_explain": return try mango(first, second, [], req, res)
            case "_temp_view":
                // CouchDB 2+ removed temporary views; its answer, word for word.
                throw CouchError(status: 410, error: "gone", reason: "Temporary views are not supported in CouchDB")
            case "_security": return try security(first, req, res)
            case "_shards", "_sync_shards", "_partition":
                throw CouchError.notImplemented("\(second) is not supported: cblite serves each database whole, from one file")
            default:
                if second.hasPrefix("_local/") { return try localDocument(first, String(second.dropFirst(7)), req, res) }
                if second.hasPrefix("_") && !second.hasPrefix("_design/") {
                    throw CouchError.badRequest("Only reserved document ids may start with underscore.")
                }
                return try document(first, second, req, res)
            }
        }
        if s.count == 3 && s[2] == "queries" {
            switch second {
            case "_all_docs": return try allDocsQueries(first, req, res)
            case "_design_docs": return try allDocsQueries(first, req, res, designOnly: true)
            case "_local_docs": return try localDocsQueries(first, req, res)
            default: break
            }
        }
        if second == "_index" { return try mango(first, second, Array(s[2...]), req, res) }
        if second == "_compact" && s.count == 3 { return try compact(first, designDoc: s[2], req, res) }
        if second.hasPrefix("_design/") && s.count == 4 && s[2] == "_view" {
            return try view(first, String(second.dropFirst(8)), s[3], req, res)
        }
        if second.hasPrefix("_design/") && s.count == 5 && s[2] == "_view" && s[4] == "queries" {
            return try viewQueries(first, String(second.dropFirst(8)), s[3], req, res)
        }
        if second.hasPrefix("_design/") && s.count == 4 && (s[2] == "_nouveau" || s[2] == "_nouveau_info") {
            return try nouveau(first, String(second.dropFirst(8)), s[2], s[3], req, res)
        }
        if second.hasPrefix("_design/") && s.count >= 3 && s[2].hasPrefix("_") {
            return try designDocumentEndpoint(first, String(second.dropFirst(8)), s[2], req, res)
        }
        if second.hasPrefix("_local/") { throw CouchError.badRequest("_local documents do not accept attachments.") }
        if second.hasPrefix("_") && !second.hasPrefix("_design/") {
            // Under a database endpoint: a path it does not serve. Else an attachment URL of
            // an illegal document ID, CouchDB's 400.
            if Router.databaseEndpointNames.contains(second) { throw CouchError.notFound("missing") }
            throw CouchError(status: 400, error: "illegal_docid", reason: "Only reserved document ids may start with underscore.")
        }
        return try attachment(first, second, s[2...].joined(separator: "/"), req, res)
    }

    /// CouchDB's database endpoints (`/db/_name`), which are never document IDs.
    static let databaseEndpointNames: Set<String> = [
        "_all_docs", "_design_docs", "_local_docs", "_changes", "_bulk_docs", "_bulk_get", "_revs_diff",
        "_missing_revs", "_purge", "_purged_infos", "_purged_infos_limit", "_revs_limit", "_security",
        "_compact", "_view_cleanup", "_ensure_full_commit", "_find", "_index", "_explain", "_temp_view",
        "_shards", "_sync_shards", "_partition", "_design", "_local",
    ]

    /// Whether a request changes something (refused by a read-only listener). POSTs that
    /// only read (`_all_docs` with keys, `_changes`, `_revs_diff`, `_bulk_get`,
    /// `_session`, `_ensure_full_commit`) are not writes.
    static func isWrite(method: HTTPMethod, path: RequestPath) -> Bool {
        switch method {
        case .GET, .HEAD, .OPTIONS: return false
        case .POST:
            let s = path.segments
            if s.first == "_session" { return false }
            if s.count == 1 && s[0] == "_dbs_info" { return false }
            if s.count == 2, ["_all_docs", "_changes", "_revs_diff", "_missing_revs", "_bulk_get", "_ensure_full_commit", "_design_docs",
                              "_find", "_explain"].contains(s[1]) {
                return false
            }
            if (s.count == 4 || (s.count == 5 && s[4] == "queries")) && s[2] == "_view" { return false }
            if s.count == 3 && s[2] == "queries" { return false }       // _all_docs/queries and the like
            if s.count == 4 && s[2] == "_nouveau" { return false }
            return true
        case .DELETE:
            return path.segments.first != "_session"
        default: return true
        }
    }

    /// The most a request's body may carry. Attachments stream to disk, so their uploads
    /// are bounded by `maxAttachmentBytes` instead of the in-memory `maxBodyBytes`: a PUT of
    /// one attachment by it alone; a multipart/related document PUT not as a whole, its JSON
    /// part by `maxDocumentBytes` and each attachment part by `maxAttachmentBytes`
    /// (MultipartDocumentReader).
    static func bodyLimit(method: HTTPMethod, path: RequestPath, contentType: String?, limits: ListenerConfiguration.Limits) -> Int {
        let s = path.segments
        // A form's file upload (POST /db/doc): each file part bounded on its own.
        if method == .POST, s.count == 2, !s[0].hasPrefix("_"), contentType.flatMap(MediaType.init)?.type == "multipart/form-data" {
            return Int.max
        }
        guard method == .PUT, s.count >= 2, !s[0].hasPrefix("_") else { return limits.maxBodyBytes }
        if s.count == 2 {
            return contentType.flatMap(MediaType.init)?.type == "multipart/related" ? Int.max : limits.maxBodyBytes
        }
        let attachment = !s[1].hasPrefix("_") || (s[1].hasPrefix("_design/") && !s[2].hasPrefix("_"))
        return attachment ? limits.maxAttachmentBytes : limits.maxBodyBytes
    }

    // MARK: helpers shared by the endpoints

    func requireMethod(_ req: Request, _ allowed: [HTTPMethod]) throws {
        guard allowed.contains(req.method) else {
            throw CouchError.methodNotAllowed(allowed.map { "\($0)" }.joined(separator: ","))
        }
    }

    /// The collection a URL database name stands for (404 when it is not served).
    func collection(_ urlName: String) throws -> Collection { try databases.collection(urlName) }

    func requireJSONContent(_ req: Request) throws {
        if let ct = req.contentType, !ct.isJSON {
            throw CouchError.badContentType("Content-Type must be application/json")
        }
    }
}
