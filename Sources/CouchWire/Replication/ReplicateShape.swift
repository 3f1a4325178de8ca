import CBLiteBase

/// CouchDB's `POST /_replicate`: the request a client sends and the answers it expects
/// (CouchDB 3.5's shapes and reasons; see Tests/Fixtures/couchdb-3.5/rest-replicator.jsonl).
public enum ReplicateShape {
    /// One side of a replication as the request names it.
    public enum Endpoint: Equatable, Sendable {
        /// A database of the server answering the request, by name.
        case local(String)
        /// A database URL (credentials possibly inside it), with the request's `auth.basic`
        /// credentials and `headers` for it.
        case remote(url: String, user: String?, password: String?, headers: [Header])
    }

    public struct Header: Equatable, Sendable {
        public let name: String
        public let value: String
    }

    public struct Request: Sendable {
        public var source: Endpoint?
        public var target: Endpoint?
        public var createTarget = false
        public var continuous = false
        public var cancel = false
        public var docIDs: [String]?
        /// A Mango selector (validated by the replicator's configuration).
        public var selector: JSONValue?
        public var filter: String?
        public var queryParams = JSONObject()
        public var sinceSeq: JSONValue?
        /// The job a cancellation names (`replication_id`), instead of source and target.
        public var replicationID: String?
    }

    /// Reads a request body; 400 with CouchDB's reasons for what it refuses.
    public static func request(_ body: JSONObject) throws -> Request {
        var r = Request()
        r.source = try body["source"].map { try endpoint($0, "source") }
        r.target = try body["target"].map { try endpoint($0, "target") }
        r.createTarget = try flag(body, "create_target")
        r.continuous = try flag(body, "continuous")
        r.cancel = try flag(body, "cancel")
        if let ids = body["doc_ids"] {
            guard let list = ids.arrayValue else { throw CouchError.badRequest("parameter `doc_ids` must be an array") }
            r.docIDs = try list.map {
                guard let s = $0.stringValue else { throw CouchError.badRequest("`doc_ids` must be an array of strings") }
                return s
            }
        }
        if let f = body["filter"] {
            guard let name = f.stringValue, name.split(separator: "/", omittingEmptySubsequences: false).count == 2,
                  !name.hasPrefix("/"), !name.hasSuffix("/") else {
                throw CouchError.badRequest("Invalid filter. Must match `ddocname/filtername`.")
            }
            r.filter = name
        }
        if let q = body["query_params"] {
            guard let o = q.objectValue else { throw CouchError.badRequest("parameter `query_params` must be an object") }
            r.queryParams = o
        }
        let selections = [body["doc_ids"] != nil, body["filter"] != nil, body["selector"] != nil].filter { $0 }.count
        if selections > 1 { throw CouchError.badRequest("`doc_ids`,`filter`,`selector` are mutually exclusive") }
        if let s = body["selector"] {
            guard s.objectValue != nil else { throw CouchError.badRequest("`selector` must be a JSON object") }
            r.selector = s
        }
        r.sinceSeq = body["since_seq"]
        if let id = body["replication_id"] {
            guard let s = id.stringValue else { throw CouchError.badRequest("parameter `replication_id` must be a string") }
            r.replicationID = s
        }
        if r.replicationID == nil && (r.source == nil || r.target == nil) {
            throw CouchError.badRequest("`source` and `target` are required")
        }
        return r
    }

    private static func flag(_ body: JSONObject, _ name: String) throws -> Bool {
        guard let v = body[name] else { return false }
        guard let b = v.boolValue else { throw CouchError.badRequest("parameter `\(name)` must be a boolean") }
        return b
    }

    /// A name, a URL, or `{"url", "auth": {"basic": {"username","password"}}, "headers": {}}`.
    private static func endpoint(_ value: JSONValue, _ side: String) throws -> Endpoint {
        if let s = value.stringValue { return classify(s, user: nil, password: nil, headers: []) }
        guard let o = value.objectValue, let url = o["url"]?.stringValue else {
            throw CouchError.badRequest("`\(side)` must be a database name, a URL, or an object with a `url`")
        }
        var user: String?, password: String?
        if let auth = o["auth"] {
            guard let basic = auth.objectValue?["basic"]?.objectValue,
                  let u = basic["username"]?.stringValue, let p = basic["password"]?.stringValue else {
                throw CouchError.badRequest("`\(side).auth` must be {\"basic\": {\"username\", \"password\"}}")
            }
            (user, password) = (u, p)
        }
        var headers: [Header] = []
        if let h = o["headers"] {
            guard let members = h.objectValue?.members else { throw CouchError.badRequest("`\(side).headers` must be an object") }
            for (name, v) in members {
                guard let text = v.stringValue else { throw CouchError.badRequest("`\(side).headers.\(name)` must be a string") }
                headers.append(Header(name: name, value: text))
            }
        }
        return classify(url, user: user, password: password, headers: headers)
    }

    private static func classify(_ text: String, user: String?, password: String?, headers: [Header]) -> Endpoint {
        let lower = text.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") {
            return .remote(url: text, user: user, password: password, headers: headers)
        }
        return .local(text)
    }

    // MARK: answers

    /// What a replication did, in the counts CouchDB reports.
    public struct Counts: Sendable {
        public var revisionsChecked: Int64
        public var documentsRead: Int64
        public var documentsWritten: Int64
        public var writeFailures: Int64

        public init(revisionsChecked: Int64, documentsRead: Int64, documentsWritten: Int64, writeFailures: Int64) {
            self.revisionsChecked = revisionsChecked
            self.documentsRead = documentsRead
            self.documentsWritten = documentsWritten
            self.writeFailures = writeFailures
        }

        /// As `_active_tasks`, `_scheduler` and `_replication_stats` name them.
        public var members: [(key: String, value: JSONValue)] {
            [("revisions_checked", .int(revisionsChecked)), ("missing_revisions_found", .int(documentsRead)),
             ("docs_read", .int(documentsRead)), ("docs_written", .int(documentsWritten)),
             ("doc_write_failures", .int(writeFailures))]
        }
    }

    /// One run's line of `history`.
    public struct Run: Sendable {
        public var sessionID: String
        public var startTime: String
        public var endTime: String
        public var counts: Counts

        public init(sessionID: String, startTime: String, endTime: String, counts: Counts) {
            self.sessionID = sessionID
            self.startTime = startTime
            self.endTime = endTime
            self.counts = counts
        }
    }

    /// A finished one-shot replication: `{"ok":true,["no_changes":true,]"session_id",
    /// "history":[…]}`.
    public static func completed(_ run: Run) -> JSONValue {
        var o = JSONObject([("ok", .bool(true))])
        let c = run.counts
        if c.documentsRead == 0 { o["no_changes"] = .bool(true) }      // CouchDB: nothing to copy (however much was checked)
        o["session_id"] = .string(run.sessionID)
        o["replication_id_version"] = .int(4)
        o["history"] = .array([.object(JSONObject([
            ("session_id", .string(run.sessionID)),
            ("start_time", .string(run.startTime)),
            ("end_time", .string(run.endTime)),
            ("missing_checked", .int(c.revisionsChecked)),
            ("missing_found", .int(c.documentsRead)),
            ("docs_read", .int(c.documentsRead)),
            ("docs_written", .int(c.documentsWritten)),
            ("doc_write_failures", .int(c.writeFailures)),
        ]))])
        return .object(o)
    }

    /// A continuous replication started, found running, or cancelled: `{"ok":true,"_local_id"}`.
    public static func job(_ id: String) -> JSONValue {
        .object(JSONObject([("ok", .bool(true)), ("_local_id", .string(id))]))
    }
}
