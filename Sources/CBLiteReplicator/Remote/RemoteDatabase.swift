import CBLiteCore
import CouchWire
import NIOHTTP1

/// How the replicator proves who it is to a peer.
public enum RemoteAuthentication: Sendable, Equatable {
    case none
    /// `Authorization: Basic` on every request.
    case basic(user: String, password: String)
    /// `POST /_session` once, then the `AuthSession` cookie (logged in again when it expires).
    case session(user: String, password: String)
    /// `Authorization: Bearer`.
    case bearer(String)
}

/// A peer's database as the replicator talks to it: CouchDB's REST API over one
/// keep-alive connection, with authentication, the peer's errors as ReplicationErrors,
/// and the request shapes CouchDB's own replicator uses.
final class RemoteDatabase {
    let url: RemoteURL
    private let client: HTTPClient
    private let auth: RemoteAuthentication
    private let extraHeaders: [(String, String)]
    let timeoutMs: Int
    private var sessionCookie: String?

    static let userAgent = "cblite-replicator/\(CBLiteVersion.string)"

    init(url: RemoteURL, client: HTTPClient, auth: RemoteAuthentication, extraHeaders: [(String, String)], timeoutMs: Int) {
        self.url = url
        self.client = client
        self.auth = auth
        self.extraHeaders = extraHeaders
        self.timeoutMs = timeoutMs
    }

    // MARK: requests

    /// Sends a request with the replicator's headers; an expired session is renewed once.
    func send(_ method: HTTPMethod, _ target: String, body: HTTPRequest.Body = .none, contentType: String? = nil,
              accept: String = "application/json", timeoutMs: Int? = nil) throws -> HTTPResponse {
        if case .session = auth, sessionCookie == nil { try logIn() }
        var retried = false
        while true {
            var headers: [(String, String)] = [("User-Agent", RemoteDatabase.userAgent), ("Accept", accept)]
            switch auth {
            case .none: break
            case .basic(let u, let p): headers.append(("Authorization", "Basic " + Base64.encode(Array("\(u):\(p)".utf8))))
            case .bearer(let t): headers.append(("Authorization", "Bearer \(t)"))
            case .session: if let c = sessionCookie { headers.append(("Cookie", "AuthSession=\(c)")) }
            }
            if let contentType { headers.append(("Content-Type", contentType)) }
            headers += extraHeaders
            let response = try client.send(HTTPRequest(method: method, target: target, headers: headers, body: body,
                                                       timeoutMs: timeoutMs ?? self.timeoutMs))
            var resendable = true
            if case .stream = body { resendable = false }   // a streamed body cannot be replayed
            if response.status == 401, case .session = auth, !retried, resendable {
                _ = try? response.readAll(limit: 1 << 16)
                retried = true
                sessionCookie = nil
                try logIn()
                continue
            }
            return response
        }
    }

    /// Sends a request and reads a JSON answer; statuses outside 2xx (and not in
    /// `accepting`) become ReplicationErrors with the peer's reason.
    func json(_ method: HTTPMethod, _ target: String, body: [UInt8]? = nil, accepting: Set<Int> = [],
              timeoutMs: Int? = nil) throws -> (status: Int, body: [UInt8]) {
        let response = try send(method, target, body: body.map { .bytes($0) } ?? .none,
                                contentType: body == nil ? nil : "application/json", timeoutMs: timeoutMs)
        let bytes = try response.readAll()
        if (200..<300).contains(response.status) || accepting.contains(response.status) { return (response.status, bytes) }
        throw RemoteDatabase.error(status: response.status, body: bytes, what: "\(method) \(target)")
    }

    static func error(status: Int, body: [UInt8], what: String) -> ReplicationError {
        if let (e, r) = ReplicationMessages.errorBody(body) {
            return ReplicationError(httpStatus: status, message: "\(what): \(e)\(r.isEmpty ? "" : ": \(r)")")
        }
        return ReplicationError(httpStatus: status, message: "\(what): HTTP \(status)")
    }

    // MARK: the calls

    /// `POST /_session` with the form body CouchDB's replicator sends; keeps the cookie.
    private func logIn() throws {
        guard case .session(let user, let password) = auth else { return }
        let form = "name=\(PercentDecoding.encode(user))&password=\(PercentDecoding.encode(password))"
        let response = try client.send(HTTPRequest(
            method: .POST, target: "\(url.serverPath)/_session",
            headers: [("User-Agent", RemoteDatabase.userAgent), ("Accept", "application/json"),
                      ("Content-Type", "application/x-www-form-urlencoded")] + extraHeaders,
            body: .bytes(Array(form.utf8)), timeoutMs: timeoutMs))
        let body = try response.readAll(limit: 1 << 20)
        guard response.status == 200 else {
            throw RemoteDatabase.error(status: response.status, body: body, what: "logging in to \(url.redacted) as \"\(user)\"")
        }
        for v in response.headers["Set-Cookie"] {
            let first = v.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            if first.hasPrefix("AuthSession="), first.count > "AuthSession=".count { sessionCookie = String(first.dropFirst("AuthSession=".count)) }
        }
        guard sessionCookie != nil else { throw ReplicationError.protocolViolation("/_session answered 200 without an AuthSession cookie") }
    }

    /// `GET /db/`: the database's info; 404 when it does not exist.
    func info() throws -> JSONObject {
        let (_, body) = try json(.GET, url.databasePath + "/")
        return try ReplicationMessages.object(body, "database info")
    }

    /// `PUT /db`: creates the database; an existing one (412) is fine.
    func create() throws {
        _ = try json(.PUT, url.databasePath, accepting: [412])
    }

    /// A `_local` document (a checkpoint), nil when there is none.
    func getLocal(_ id: String) throws -> JSONObject? {
        let (status, body) = try json(.GET, url.documentPath("_local/" + id), accepting: [404])
        return status == 404 ? nil : try ReplicationMessages.object(body, "_local document")
    }

    /// Writes a `_local` document; returns its new revision.
    func putLocal(_ id: String, _ doc: JSONObject) throws -> String? {
        let (_, body) = try json(.PUT, url.documentPath("_local/" + id), body: JSONWriter.ordered(.object(doc)))
        return try ReplicationMessages.object(body, "_local PUT")["rev"]?.stringValue
    }

    /// `_changes` with style=all_docs: a normal feed, or a longpoll one that waits up to
    /// `longpollMs` for a change. `filter` holds the filter's query parameters
    /// (`filter=name&…`) or, for doc IDs, a POST body.
    func changes(since: JSONValue?, limit: Int, longpollMs: Int?, filter: ChangesFilter) throws -> (rows: [ReplicationMessages.ChangeRow], lastSeq: JSONValue?, pending: Int64?) {
        var query = "style=all_docs&limit=\(limit)"
        // Heartbeat newlines keep proxies from closing a quiet longpoll, and let the peer
        // find out within seconds that a stopped replicator hung up.
        if let longpollMs { query += "&feed=longpoll&timeout=\(longpollMs)&heartbeat=\(min(5000, max(1000, longpollMs / 2)))" } else { query += "&feed=normal" }
        if let since { query += "&since=" + PercentDecoding.encode(since.sequenceText) }
        var body: [UInt8]? = nil
        switch filter {
        case .none: break
        case .named(let name, let params):
            query += "&filter=" + PercentDecoding.encode(name)
            for (k, v) in params.members { query += "&\(PercentDecoding.encode(k))=\(PercentDecoding.encode(v.stringValue ?? JSONWriter.canonicalString(v)))" }
        case .docIDs(let ids):
            query += "&filter=_doc_ids"
            body = JSONWriter.ordered(.object(JSONObject([("doc_ids", .array(ids.map { .string($0) }))])))
        case .selector(let s):
            query += "&filter=_selector"
            body = JSONWriter.ordered(.object(JSONObject([("selector", s)])))
        }
        let wait = longpollMs.map { $0 + timeoutMs } ?? timeoutMs
        let (_, bytes) = try json(body == nil ? .GET : .POST, url.databasePath + "/_changes?" + query, body: body, timeoutMs: wait)
        do { return try ReplicationMessages.changes(bytes) } catch let e as CouchError { throw ReplicationError.protocolViolation(e.reason) }
    }

    enum ChangesFilter {
        case none
        case named(String, JSONObject)
        case docIDs([String])
        case selector(JSONValue)
    }

    func revsDiff(_ docs: [(id: String, revs: [String])]) throws -> [String: (missing: [String], possibleAncestors: [String])] {
        let (_, bytes) = try json(.POST, url.databasePath + "/_revs_diff", body: RevsDiffShape.requestBody(docs))
        do { return try RevsDiffShape.parseAnswer(bytes) } catch let e as CouchError { throw ReplicationError.protocolViolation(e.reason) }
    }

    /// `_bulk_get` (attachments as stubs); nil when the peer does not have the endpoint.
    func bulkGet(_ docs: [(id: String, rev: String, attsSince: [String])]) throws -> [UInt8]? {
        let response = try send(.POST, url.databasePath + "/_bulk_get?revs=true&latest=true&attachments=false",
                                body: .bytes(BulkGetShape.requestBody(docs)), contentType: "application/json")
        let bytes = try response.readAll()
        // CouchDB 1.x and others without it answer 404/405 (or 400 "bad_request" from a db named _bulk_get).
        if [400, 404, 405, 501].contains(response.status) { return nil }
        guard (200..<300).contains(response.status) else { throw RemoteDatabase.error(status: response.status, body: bytes, what: "_bulk_get") }
        return bytes
    }

    /// `_bulk_docs` with new_edits=false; returns the per-document failures.
    func bulkDocs(_ docs: [[UInt8]]) throws -> [(id: String, rev: String?, error: String, reason: String)] {
        let response = try send(.POST, url.databasePath + "/_bulk_docs", body: .bytes(BulkDocsShape.requestBody(docs)),
                                contentType: "application/json")
        let bytes = try response.readAll()
        guard (200..<300).contains(response.status) else { throw RemoteDatabase.error(status: response.status, body: bytes, what: "_bulk_docs") }
        do { return try BulkDocsShape.parseFailures(bytes) } catch let e as CouchError { throw ReplicationError.protocolViolation(e.reason) }
    }
}

extension JSONValue {
    /// A sequence as it goes back into a query string: strings verbatim, others as JSON.
    var sequenceText: String { stringValue ?? JSONWriter.canonicalString(self) }
}
