import CBLiteCore
import CBLiteReplicator
import CouchWire
import NIOHTTP1

/// `POST /_replicate`, `GET /_active_tasks` and `GET /_scheduler/jobs` in CouchDB 3's
/// shapes, over the jobs of ServerReplications.
extension Router {
    func replicate(_ req: Request, _ res: ResponseWriter) throws {
        // CouchDB reads any other method's (absent) body first.
        guard req.method == .POST else { throw CouchError.badRequest("Missing request body") }
        guard req.contentType?.type == "application/json" else {
            throw CouchError.badContentType("Content-Type must be application/json")
        }
        let request = try ReplicateShape.request(try req.jsonObjectBody(limit: 1024 * 1024))
        if request.sinceSeq != nil {
            throw CouchError.notImplemented("`since_seq` is not supported: cblite's replicator resumes from its checkpoint")
        }
        if request.cancel {
            let id = try request.replicationID ?? jobID(request)
            guard server.replications.cancel(id) else { throw CouchError.notFound("missing") }
            return res.sendJSON(200, ReplicateShape.job(id))
        }
        let job = try makeJob(request, user: req.user)
        let (running, started) = try server.replications.start(job)
        if request.continuous { return res.sendJSON(started ? 202 : 200, ReplicateShape.job(running.id)) }
        let startTime = unixTimeMicrosNow() / 1_000_000
        while !running.replicator.waitUntilStopped(timeoutMs: 500) {
            if req.cancellation.isCancelled { running.replicator.stop() }    // the client went away
        }
        server.replications.remove(running)
        let status = running.replicator.status
        if let message = status.errorMessage { throw ServerReplicationError.couchError(status.errorStatus, message, job: running) }
        res.sendJSON(200, ReplicateShape.completed(ReplicateShape.Run(
            sessionID: Listener.randomHex(16), startTime: HTTPDate.imfFixdate(startTime),
            endTime: HTTPDate.imfFixdate(unixTimeMicrosNow() / 1_000_000), revisionsChecked: status.completed,
            documentsRead: status.documentsPushed + status.documentsPulled + status.documentFailures,
            documentsWritten: status.documentsPushed + status.documentsPulled, writeFailures: status.documentFailures)))
    }

    /// `_active_tasks`: one entry per running replication.
    func activeTasks(_ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD])
        res.sendJSON(200, .array(server.replications.all().map { job in
            var o = ServerReplicationTask.info(job)
            o["type"] = .string("replication")
            o["replication_id"] = .string(job.id)
            o["source"] = .string(job.source)
            o["target"] = .string(job.target)
            o["continuous"] = .bool(job.continuous)
            o["user"] = job.user.map { .string($0) } ?? .null
            o["started_on"] = .int(job.startedOn)
            o["updated_on"] = .int(unixTimeMicrosNow() / 1_000_000)
            o["database"] = .null
            o["doc_id"] = .null
            return .object(o)
        }))
    }

    /// `_scheduler/jobs[/ID]` and `_scheduler/docs` (no `_replicator` database here: none).
    func scheduler(_ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD])
        let s = req.path.segments
        guard s.count >= 2 else { throw CouchError.notFound("missing") }
        switch s[1] {
        case "jobs" where s.count == 2:
            let jobs = server.replications.all()
            let skip = Int(try req.query.nonNegativeInt("skip") ?? 0)
            let limit = try req.query.nonNegativeInt("limit").map(Int.init) ?? Int.max
            res.sendJSON(200, .object(JSONObject([
                ("total_rows", .int(Int64(jobs.count))), ("offset", .int(Int64(skip))),
                ("jobs", .array(jobs.dropFirst(skip).prefix(limit).map { .object(ServerReplicationTask.schedulerJob($0)) })),
            ])))
        case "jobs" where s.count == 3:
            guard let job = server.replications.job(s[2]) else { throw CouchError.notFound("missing") }
            res.sendJSON(200, .object(ServerReplicationTask.schedulerJob(job)))
        case "docs" where s.count == 2:
            res.sendJSON(200, .object(JSONObject([("total_rows", .int(0)), ("offset", .int(0)), ("docs", .array([]))])))
        case "docs":
            throw CouchError.notImplemented("a `_replicator` database is not supported yet: use POST /_replicate")
        default:
            throw CouchError.notFound("missing")
        }
    }

    // MARK: planning a job

    /// A side resolved: a database this listener serves, or a peer.
    private enum Side {
        case local(String)
        case remote(RemoteURL, user: String?, password: String?, headers: [ReplicateShape.Header])
    }

    private func side(_ e: ReplicateShape.Endpoint) throws -> Side {
        switch e {
        case .local(let name): return .local(name)
        case .remote(let text, let user, let password, let headers):
            let url: RemoteURL
            do { url = try RemoteURL(text) } catch let e as CBLError { throw CouchError.badRequest(e.message) }
            if let name = ownDatabase(url) { return .local(name) }
            return .remote(url, user: user, password: password, headers: headers)
        }
    }

    /// The database a URL names when it points at this listener itself (CouchDB clients
    /// often give full URLs for the server's own databases).
    private func ownDatabase(_ url: RemoteURL) -> String? {
        let own = server.ownAddress
        let loopback = ["127.0.0.1", "localhost", "::1", server.configuration.host]
        guard url.port == own.port, url.tls == own.tls, loopback.contains(url.host.lowercased()) else { return nil }
        let path = url.databasePath.dropFirst()
        guard !path.isEmpty, !path.contains("/"), let name = PercentDecoding.decode(path.utf8, plusAsSpace: false) else { return nil }
        return name
    }

    private func display(_ side: Side) -> String {
        switch side {
        case .local(let name): return name
        case .remote(let url, _, _, _): return url.redacted
        }
    }

    /// CouchDB's job ID form: a digest of what is replicated, then "+continuous" and
    /// "+create_target" for those options.
    private func jobID(_ r: ReplicateShape.Request) throws -> String {
        guard let source = r.source, let target = r.target else { throw CouchError.badRequest("`source` and `target` are required") }
        let parts: [JSONValue] = [
            .string(server.serverUUID), .string(display(try side(source))), .string(display(try side(target))),
            r.filter.map { .string($0) } ?? .null, .object(r.queryParams),
            r.docIDs.map { .array($0.sorted().map { .string($0) }) } ?? .null,
        ]
        let digest = Hex.encode(MD5.hash(JSONWriter.canonical(.array(parts))))
        return digest + (r.continuous ? "+continuous" : "") + (r.createTarget ? "+create_target" : "")
    }

    private func makeJob(_ r: ReplicateShape.Request, user: String?) throws -> ServerReplications.Job {
        guard let sourceEndpoint = r.source, let targetEndpoint = r.target else {
            throw CouchError.badRequest("`source` and `target` are required")
        }
        let source = try side(sourceEndpoint), target = try side(targetEndpoint)
        let localName: String, remote: RemoteURL, direction: ReplicatorConfiguration.Direction
        var credentials: (user: String?, password: String?) = (nil, nil)
        var headers: [ReplicateShape.Header] = []
        var token: String?
        switch (source, target) {
        case (.local(let s), .remote(let url, let u, let p, let h)):
            (localName, remote, direction, credentials, headers) = (s, url, .push, (u, p), h)
        case (.remote(let url, let u, let p, let h), .local(let t)):
            if r.createTarget && !databases.exists(t) { try databases.create(t) }
            (localName, remote, direction, credentials, headers) = (t, url, .pull, (u, p), h)
        case (.local(let s), .local(let t)):
            // Two served databases: push from the source to this listener's own URL, as
            // the user who asked (a token the listener grants for the job's life).
            let own = server.ownAddress
            remote = try RemoteURL("\(own.tls ? "https" : "http")://127.0.0.1:\(own.port)/\(Router.pathSegment(t))")
            if let user, server.authenticator.requiresAuth { token = server.authenticator.grant(user: user) }
            (localName, direction) = (s, .push)
        case (.remote, .remote):
            throw CouchError.badRequest("cblite replicates between one of its databases and a peer: "
                                        + "`source` or `target` must name a database of this listener")
        }
        var config = ReplicatorConfiguration(remote: remote)
        config.direction = direction
        config.continuous = r.continuous
        config.createTarget = r.createTarget
        config.docIDs = r.docIDs
        // A one-shot request waits for its answer: a peer that cannot be reached fails it
        // after a few quick retries (as CouchDB's does), not after the replicator's long back-off.
        if !r.continuous { config.maxRetries = 3 }
        if let filter = r.filter {
            // A filter runs where the changes are read: here for a push, on the peer for a pull.
            if direction == .push { (config.filter, config.filterParams) = (filter, r.queryParams) }
            else { (config.pullFilter, config.pullFilterParams) = (filter, r.queryParams) }
        }
        if let u = credentials.user ?? remote.user { config.authentication = .basic(user: u, password: credentials.password ?? remote.password ?? "") }
        if let token { config.authentication = .bearer(token) }
        config.headers = headers.map { ($0.name, $0.value) }
        if case .local = target, case .local = source, let pin = server.ownAddress.certificateSHA256 {
            config.tls = TLSOptions(pinnedSHA256: Hex.decode(pin))
        }
        let (collection, hold) = try databases.collectionAndHold(localName)
        let replicator: Replicator
        do { replicator = try Replicator(collection: collection, configuration: config) } catch {
            if let token { server.authenticator.revoke(token) }
            throw error
        }
        return ServerReplications.Job(id: try jobID(r), replicator: replicator, source: display(source), target: display(target),
                                      user: user, continuous: r.continuous, hold: hold, token: token)
    }

    /// A database name as one path segment (names may hold '/', '+', '$', '(' and ')').
    static func pathSegment(_ name: String) -> String {
        var out = ""
        for b in name.utf8 {
            if (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                out += "%" + Hex.encode([b]).uppercased()
            }
        }
        return out
    }
}

/// How a job looks in `_active_tasks` and `_scheduler/jobs`.
enum ServerReplicationTask {
    /// The counters CouchDB reports, from the replicator's status.
    static func info(_ job: ServerReplications.Job) -> JSONObject {
        let s = job.replicator.status
        var o = JSONObject([
            ("revisions_checked", .int(s.completed)),
            ("missing_revisions_found", .int(s.documentsPushed + s.documentsPulled + s.documentFailures)),
            ("docs_read", .int(s.documentsPushed + s.documentsPulled + s.documentFailures)),
            ("docs_written", .int(s.documentsPushed + s.documentsPulled)),
            ("doc_write_failures", .int(s.documentFailures)),
            ("changes_pending", s.total >= s.completed ? .int(s.total - s.completed) : .null),
        ])
        o["process_status"] = .string(s.activity == .busy ? "running" : "waiting")
        if let message = s.errorMessage { o["error"] = .string(message) }
        return o
    }

    static func schedulerJob(_ job: ServerReplications.Job) -> JSONObject {
        let started = HTTPDate.iso8601(job.startedOn)
        let s = job.replicator.status
        let state = s.errorMessage != nil ? "crashing" : (s.activity == .stopped ? "completed" : "running")
        return JSONObject([
            ("database", .null), ("id", .string(job.id)), ("source", .string(job.source)), ("target", .string(job.target)),
            ("user", job.user.map { .string($0) } ?? .null), ("doc_id", .null), ("info", .object(info(job))),
            ("history", .array([
                .object(JSONObject([("timestamp", .string(started)), ("type", .string("started"))])),
                .object(JSONObject([("timestamp", .string(started)), ("type", .string("added"))])),
            ])),
            ("state", .string(state)), ("start_time", .string(started)),
        ])
    }
}

/// A one-shot replication that failed, as CouchDB answers it.
enum ServerReplicationError {
    static func couchError(_ status: Int, _ message: String, job: ServerReplications.Job) -> CouchError {
        switch status {
        case 401, 403:
            return CouchError(status: 401, error: "unauthorized", reason: "unauthorized to access or create database: \(message)")
        case 404:
            return CouchError(status: 500, error: "db_not_found", reason: "could not open \(message)")
        default:
            return CouchError(status: 500, error: "error", reason: message)
        }
    }
}
