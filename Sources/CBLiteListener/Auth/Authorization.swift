import CBLiteCore
import CouchWire
import NIOHTTP1

/// Basic credentials the event loop left unverified are verified here first (a PBKDF2).
/// Then what a user may do, by CouchDB 3's rules (chttpd_auth_request.erl and couch_db.erl),
/// checked before a request's endpoint runs (Router.handle) and, for design documents
/// inside a body, by the endpoints that write them (`mayWriteDesignDocuments`):
/// - server admins (role `_admin`) may do everything;
/// - server endpoints are for server admins, except `/`, `_up`, `_uuids` and `_session`
///   (`_replicate` too, where CouchDB lets any user start one: the listener would make
///   requests to any URL a user names);
/// - creating or deleting a database, `_purge` and `_purged_infos_limit` need a server admin;
/// - `_compact`, `_view_cleanup`, writing `_security` or `_revs_limit`, and writing design
///   documents need a database admin;
/// - anything else in a database needs a member (SecurityObject), and a missing database
///   is a 404 before any of this, as CouchDB's `get_security` answers.
/// Refusals: 401 for anonymous requests, 403 for named users, with CouchDB's reasons.
extension Router {
    private static let openServerEndpoints: Set<String> = ["_up", "_uuids", "_session"]

    func authorize(_ req: Request) throws {
        if let c = req.unverifiedCredentials {
            guard let user = server.authenticator.check(name: c.name, password: c.password) else { throw CouchError.unauthorized() }
            req.authenticated(as: user)
        }
        let user = req.userCtx
        let s = req.path.segments
        if s.first == UsersDatabase.name && s.count == 2 && s[1] == "_security" && req.method != .GET && req.method != .HEAD
            && !server.usersDatabase.securityEditable {
            throw CouchError.forbidden("You can't edit the security object of the user database.")
        }
        if user.isServerAdmin { return }
        guard let first = s.first else { return }
        if first == UsersDatabase.name {
            try server.usersDatabase.open()
            return try server.usersDatabase.authorize(req)
        }
        let isReplicator = first == ReplicatorDatabase.name
        if first.hasPrefix("_") && !isReplicator {
            guard s.count == 1 && Router.openServerEndpoints.contains(first) else { throw Router.notServerAdmin }
            return
        }
        if s.count == 1 && (req.method == .PUT || req.method == .DELETE) { throw Router.notServerAdmin }
        if isReplicator { try server.replicatorDatabase.open() }
        let security = try securityObject(first)
        let second = s.count >= 2 ? s[1] : ""
        let writes = req.method != .GET && req.method != .HEAD
        if ["_purge", "_purged_infos_limit", "_sync_shards"].contains(second)
            || (isReplicator && (second == "_all_docs" || second == "_changes")) { throw Router.notServerAdmin }
        if ["_compact", "_view_cleanup"].contains(second) || (writes && (second == "_security" || second == "_revs_limit"))
            || Router.writesDesignDocument(req) { return try requireDatabaseAdmin(user, security) }
        guard user.isMember(of: security) else {
            throw Router.refusal(user, user.name == nil ? "You are not authorized to access this db."
                                                       : "You are not allowed to access this db.")
        }
    }

    /// The `_security` of the database a URL name is in (its stored object, else the
    /// configured default); 404 when there is no such database.
    func securityObject(_ urlName: String) throws -> SecurityObject {
        try collection(urlName).database.securityObject ?? server.config.defaultSecurity
    }

    /// Whether the request's user may write design documents into `urlName` (a database
    /// admin). The endpoints that take documents from a body (`POST /{db}`, `_bulk_docs`)
    /// ask it for each design document; a JavaScript `validate_doc_update` would run next.
    func mayWriteDesignDocuments(_ req: Request, _ urlName: String) throws -> Bool {
        if req.userCtx.isServerAdmin { return true }
        return req.userCtx.isAdmin(of: try securityObject(urlName))
    }

    /// Saves `docs` with `save`, except the design documents the user may not write: those
    /// get CouchDB's refusal in their places (one document's error, not the request's).
    func savingAllowedDocuments(_ req: Request, _ urlName: String, _ docs: [JSONObject],
                                _ save: ([JSONObject]) throws -> [WriteResult]) throws -> [WriteResult] {
        let isDesign = docs.map { $0["_id"]?.stringValue?.hasPrefix("_design/") == true }
        guard isDesign.contains(true), try !mayWriteDesignDocuments(req, urlName) else { return try save(docs) }
        let refusal = Router.designDocumentRefusal(req.userCtx)
        let error = CBLError(refusal.status == 401 ? .unauthorized : .forbidden, refusal.reason)
        var saved = try save(zip(docs, isDesign).filter { !$0.1 }.map(\.0)).makeIterator()
        return zip(docs, isDesign).map { doc, design in
            design ? WriteResult(docID: doc["_id"]?.stringValue ?? "", revID: nil, error: error) : saved.next()!
        }
    }

    /// CouchDB's refusal of a design document to a user who is not a database admin.
    static func designDocumentRefusal(_ user: UserContext) -> CouchError {
        refusal(user, "You are not a db or server admin.")
    }

    private func requireDatabaseAdmin(_ user: UserContext, _ security: SecurityObject) throws {
        guard user.isAdmin(of: security) else { throw Router.designDocumentRefusal(user) }
    }

    static let notServerAdmin = CouchError.unauthorized("You are not a server admin.")

    /// 401 for an anonymous user (who may still log in), 403 for a named one.
    static func refusal(_ user: UserContext, _ reason: String) -> CouchError {
        user.name == nil ? .unauthorized(reason) : .forbidden(reason)
    }

    /// A write whose URL names a design document: PUT or DELETE of it or of its attachment,
    /// or a COPY whose `Destination` is one (its `_show`/`_update`/… functions are not).
    static func writesDesignDocument(_ req: Request) -> Bool {
        let s = req.path.segments
        guard s.count >= 2 else { return false }
        if req.method == .init(rawValue: "COPY") {
            let destination = req.header("Destination") ?? ""
            return destination.hasPrefix("_design/") || destination.hasPrefix("_design%2F") || destination.hasPrefix("_design%2f")
        }
        guard req.method == .PUT || req.method == .DELETE, s[1].hasPrefix("_design/") else { return false }
        return s.count == 2 || !s[2].hasPrefix("_")
    }
}
