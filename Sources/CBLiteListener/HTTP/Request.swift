import CBLiteCore
import CouchWire
import NIOHTTP1

/// One request as an endpoint sees it, on a worker thread.
final class Request: @unchecked Sendable {
    let head: HTTPRequestHead
    let path: RequestPath
    let query: QueryParameters
    let body: RequestBody
    /// Who the request acts as (Authenticator); `user` is its name (nil: anonymous, or a
    /// listener without users).
    private(set) var userCtx: UserContext
    /// Basic credentials the worker verifies first (Authenticator.Outcome.unverified).
    private(set) var unverifiedCredentials: (name: String, password: String)?
    var user: String? { userCtx.name }
    /// "cookie" or "default" (Basic), as `/_session` reports it; nil when anonymous.
    let authenticatedBy: String?
    /// Set by the connection when the client goes away, so long feeds stop.
    let cancellation: Cancellation
    /// Whether the request came over TLS, and to which port: the URLs answered (`Location`).
    let tls: Bool
    let localPort: Int

    init(head: HTTPRequestHead, path: RequestPath, query: QueryParameters, body: RequestBody,
         userCtx: UserContext, unverified: (name: String, password: String)? = nil, authenticatedBy: String?,
         cancellation: Cancellation, tls: Bool = false, localPort: Int = 0) {
        self.head = head
        self.path = path
        self.query = query
        self.body = body
        self.userCtx = userCtx
        unverifiedCredentials = unverified
        self.authenticatedBy = authenticatedBy
        self.cancellation = cancellation
        self.tls = tls
        self.localPort = localPort
    }

    /// An absolute URL on this server naming `segments` (each percent-encoded, a '/' in one
    /// too), as CouchDB's absolute_uri builds its `Location`s: the host a proxy names
    /// (`X-Forwarded-Host`) or the client did (`Host`), else this listener's port; the
    /// scheme a proxy names (`X-Forwarded-Proto`, `X-Forwarded-Ssl: on`) or the connection's.
    func absoluteURL(_ segments: [String]) -> String {
        let host = header("X-Forwarded-Host") ?? header("Host") ?? "127.0.0.1:\(localPort)"
        let scheme = header("X-Forwarded-Proto") ?? (header("X-Forwarded-Ssl") == "on" || tls ? "https" : "http")
        return scheme + "://" + host + "/" + segments.map(PercentDecoding.encode).joined(separator: "/")
    }

    /// CouchDB's `Location` header for a document of the request's database (201s).
    func location(ofDocument id: String, attachment: String? = nil) -> (String, String) {
        ("Location", absoluteURL([path.segments.first ?? ""] + [id] + (attachment.map { [$0] } ?? [])))
    }

    /// The credentials were verified: the request acts as `user` from now on.
    func authenticated(as user: UserContext) {
        userCtx = user
        unverifiedCredentials = nil
    }

    var method: HTTPMethod { head.method }
    func header(_ name: String) -> String? { head.headers.first(name: name) }
    var contentType: MediaType? { header("Content-Type").flatMap(MediaType.init) }

    /// Whether the client accepts `type` explicitly (CouchDB only sends multipart when asked).
    func accepts(_ type: String) -> Bool {
        head.headers[canonicalForm: "Accept"].contains { MediaType(String($0))?.type == type }
    }

    /// Whether every type the client accepts is `application/json` (CouchDB then answers
    /// `open_revs` as JSON; no `Accept`, or any other type, gets its multipart form).
    var acceptsJSONOnly: Bool {
        let types = head.headers[canonicalForm: "Accept"].map { MediaType(String($0))?.type }
        return !types.isEmpty && types.allSatisfy { $0 == "application/json" }
    }

    /// The body as a JSON value (400 for malformed JSON; `limit` bounds its size). Read
    /// to JSONParser.messageDepth: bodies carry documents (`_bulk_docs`), each of which the
    /// engine holds to the document limit.
    func jsonBody(limit: Int) throws -> JSONValue {
        let bytes = try body.readAll(limit: limit)
        guard !bytes.isEmpty else { throw CouchError.badRequest("the request body must be JSON") }
        do {
            return try bytes.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0, depthLimit: JSONParser.messageDepth) }
        } catch let e as CBLError {
            throw CouchError(status: 400, error: "bad_request", reason: "invalid UTF-8 JSON: \(e.message)")
        }
    }

    func jsonObjectBody(limit: Int) throws -> JSONObject {
        guard let o = try jsonBody(limit: limit).objectValue else { throw CouchError.badRequest("Request body must be a JSON object") }
        return o
    }

    /// The parameters of each query of a `…/queries` request (`_all_docs`, `_design_docs`,
    /// `_local_docs`, views): the body's `{"queries": [{...}, ...]}`, in order, with
    /// CouchDB's reason when it is not a list of objects.
    func queriesBody(limit: Int) throws -> [JSONObject] {
        guard let queries = try jsonObjectBody(limit: limit)["queries"]?.arrayValue else {
            throw CouchError.badRequest("`queries` member must be an array.")
        }
        return try queries.map {
            guard let o = $0.objectValue else { throw CouchError.badRequest("Each query must be a JSON object") }
            return o
        }
    }
}

/// A flag a worker polls, set when the request's connection closes.
final class Cancellation: @unchecked Sendable {
    private let condition = Monitor()
    private var cancelled = false
    private var waitsForChanges = false
    /// Set by a feed that waits for changes (longpoll, continuous): `stop()` ends those at
    /// once instead of waiting for them as for work in flight.
    var isFeed: Bool {
        get { condition.locked { waitsForChanges } }
        set { condition.locked { waitsForChanges = newValue } }
    }
    var isCancelled: Bool { condition.locked { cancelled } }
    func cancel() { condition.locked { cancelled = true; condition.broadcast() } }
    /// Sleeps up to `ms`, returning early (true) when cancelled.
    func sleep(ms: Int) -> Bool {
        condition.locked {
            if !cancelled { condition.wait(timeoutMs: ms) }
            return cancelled
        }
    }
}
