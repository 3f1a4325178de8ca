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
            let id = try request.replicationID ?? ReplicationPlanner(server: server).jobID(request)
            guard server.replications.cancel(id) else { throw CouchError.notFound("missing") }
            return res.sendJSON(200, ReplicateShape.job(id))
        }
        let job = try ReplicationPlanner(server: server).job(request, user: req.user)
        let (running, started) = try server.replications.start(job)
        if request.continuous { return res.sendJSON(started ? 202 : 200, ReplicateShape.job(running.id)) }
        while !running.replicator.waitUntilStopped(timeoutMs: 500) {
            if req.cancellation.isCancelled { running.replicator.stop() }    // the client went away
        }
        server.replications.remove(running)
        let status = running.replicator.status
        if let message = status.errorMessage { throw ServerReplicationTask.failure(status.errorStatus, message) }
        res.sendJSON(200, ReplicateShape.completed(ReplicateShape.Run(
            sessionID: Listener.randomHex(16), startTime: HTTPDate.imfFixdate(running.startedOn),
            endTime: HTTPDate.imfFixdate(unixTimeMicrosNow() / 1_000_000), counts: ServerReplicationTask.counts(status))))
    }

    /// `_active_tasks`: one entry per running replication.
    func activeTasks(_ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD])
        res.sendJSON(200, .array(server.replications.all().map { job in
            var o = ServerReplicationTask.info(job)
            o["type"] = .string("replication")
            o["process_status"] = .string(job.replicator.status.activity == .busy ? "running" : "waiting")
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

    /// `_scheduler/jobs[/ID]` and `_scheduler/docs[/_replicator[/ID]]`.
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
        case "docs" where s.count == 2 || (s.count == 3 && s[2] == ReplicatorDatabase.name):
            let docs = try server.replicatorDatabase.schedulerDocs()
            res.sendJSON(200, .object(JSONObject([("total_rows", .int(Int64(docs.count))), ("offset", .int(0)),
                                                  ("docs", .array(docs.map { .object($0) }))])))
        case "docs" where s.count == 4 && s[2] == ReplicatorDatabase.name:
            guard let doc = try server.replicatorDatabase.schedulerDoc(s[3]) else { throw CouchError.notFound("missing") }
            res.sendJSON(200, .object(doc))
        case "docs":
            throw CouchError.badRequest("Invalid path")
        default:
            throw CouchError.notFound("missing")
        }
    }
}

/// How a job looks in `_active_tasks` and `_scheduler/jobs`.
enum ServerReplicationTask {
    /// The replicator's status as CouchDB counts: a revision handled is one checked; a
    /// document pushed, pulled or failed is one read, and written unless it failed.
    static func counts(_ s: ReplicatorStatus) -> ReplicateShape.Counts {
        ReplicateShape.Counts(revisionsChecked: s.completed, documentsRead: s.documentsPushed + s.documentsPulled + s.documentFailures,
                              documentsWritten: s.documentsPushed + s.documentsPulled, writeFailures: s.documentFailures)
    }

    /// The counters CouchDB reports for a running job.
    static func info(_ job: ServerReplications.Job) -> JSONObject {
        let s = job.replicator.status
        var o = JSONObject(counts(s).members)
        o["changes_pending"] = s.total >= s.completed ? .int(s.total - s.completed) : .null
        if let message = s.errorMessage { o["error"] = .string(message) }
        return o
    }

    /// A one-shot replication that failed, as CouchDB answers it.
    static func failure(_ status: Int, _ message: String) -> CouchError {
        switch status {
        case 401, 403:
            return CouchError(status: 401, error: "unauthorized", reason: "unauthorized to access or create database: \(message)")
        case 404:
            return CouchError(status: 500, error: "db_not_found", reason: "could not open \(message)")
        default:
            return CouchError(status: 500, error: "error", reason: message)
        }
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
