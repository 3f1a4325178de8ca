import CBLiteCore
import CBLiteReplicator
import CouchWire

/// Turns a `_replicate` request (or a `_replicator` document) into a job: which side is
/// a served database, which a peer, in which direction cblite's replicator runs, and as
/// whom. One owner for both ways of asking.
struct ReplicationPlanner {
    let server: ServerContext

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

    /// A side as `_active_tasks` and `_scheduler` show it: a served database's name, or the
    /// peer's URL without credentials; nil for a URL that is not one.
    func display(_ e: ReplicateShape.Endpoint) -> String? { (try? side(e)).map(display) }

    private func display(_ side: Side) -> String {
        switch side {
        case .local(let name): return name
        case .remote(let url, _, _, _): return url.redacted
        }
    }

    /// CouchDB's job ID form: a digest of what is replicated, then "+continuous" and
    /// "+create_target" for those options.
    func jobID(_ r: ReplicateShape.Request) throws -> String {
        guard let source = r.source, let target = r.target else { throw CouchError.badRequest("`source` and `target` are required") }
        let parts: [JSONValue] = [
            .string(server.serverUUID), .string(display(try side(source))), .string(display(try side(target))),
            r.filter.map { .string($0) } ?? .null, .object(r.queryParams),
            r.docIDs.map { .array($0.sorted().map { .string($0) }) } ?? .null,
        ]
        let digest = Hex.encode(MD5.hash(JSONWriter.canonical(.array(parts))))
        return digest + (r.continuous ? "+continuous" : "") + (r.createTarget ? "+create_target" : "")
    }

    /// A job for `r`, not started; `docID` names the `_replicator` document it runs for,
    /// `onStatus` hears its replicator.
    func job(_ r: ReplicateShape.Request, user: String?, docID: String? = nil,
             onStatus: Replicator.StatusCallback? = nil) throws -> ServerReplications.Job {
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
            if r.createTarget && !server.databases.exists(t) { try server.databases.create(t) }
            (localName, remote, direction, credentials, headers) = (t, url, .pull, (u, p), h)
        case (.local(let s), .local(let t)):
            // Two served databases: push from the source to this listener's own URL, as
            // the user who asked (a token the listener grants for the job's life).
            let own = server.ownAddress
            remote = try RemoteURL("\(own.tls ? "https" : "http")://127.0.0.1:\(own.port)/\(PercentDecoding.encode(t))")
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
        config.selector = r.selector
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
        let (collection, hold) = try server.databases.collectionAndHold(localName)
        let replicator: Replicator
        do { replicator = try Replicator(collection: collection, configuration: config, onStatus: onStatus) } catch {
            if let token { server.authenticator.revoke(token) }
            throw error
        }
        return ServerReplications.Job(id: try jobID(r), replicator: replicator, source: display(source), target: display(target),
                                      user: user, continuous: r.continuous, hold: hold, token: token, docID: docID)
    }
}
