import CBLiteCore
import CouchWire

/// CouchDB's authentication database `_users`: one document `org.couchdb.user:NAME` per
/// user (`name`, `type: "user"`, `roles`), whose `password` is replaced when written by
/// CouchDB 3.5's PBKDF2 fields (`password_scheme`, `pbkdf2_prf`, `iterations`,
/// `derived_key`, `salt`: couch_users_db's `save_doc`), never stored in clear. Its users
/// log in (Basic, `_session`) with the roles of their documents, after the configured
/// users and `[admins]` (Authenticator.account); a changed or deleted document takes
/// effect at once (the lookups' cache is emptied by the database's changes).
///
/// CouchDB 3.5's rules, with its defaults (`[couchdb] users_db_security_editable` false,
/// `[chttpd_auth] public_fields` empty, `users_db_public` false):
/// - anyone may sign up (create a document without roles); a user reads, updates and
///   deletes only their own document (another's is a 404), server admins any;
/// - only server admins set roles, and no one a role starting with '_' (but `_metrics`);
/// - the document's shape (the `_design/_auth` validate function), checked by a native
///   validator on every write, replication included;
/// - `_all_docs`, `_changes`, design documents and everything else of the database are
///   the server admins', and its `_security` is not editable.
/// Made in the served directory on first use, as `_replicator` is.
final class UsersDatabase: @unchecked Sendable {
    static let name = DatabaseName.usersDatabase
    static let idPrefix = "org.couchdb.user:"

    private unowned let server: ServerContext
    private let monitor = Monitor()
    private var collection: Collection?
    private var hold: ServedDatabase?
    private var observer: ChangeObserverToken?
    /// Accounts looked up (nil: no such user), until the next change of the database;
    /// `generation` keeps a lookup that raced a change from being cached.
    private var cache: [String: Authenticator.Account?] = [:]
    private var generation = 0
    /// The listener stops: nothing opens it again (a late request's hold would outlive it).
    private var stopped = false

    init(server: ServerContext) { self.server = server }

    /// Opens (making it when `create` and missing) and watches the database; idempotent.
    /// 404 when it does not exist and cannot be made.
    @discardableResult
    func open(create: Bool = true) throws -> Collection? {
        if let c = monitor.locked({ hold?.database.isClosed == false ? collection : nil }) { return c }
        if monitor.locked({ stopped }) { throw CouchError.databaseNotFound }
        forgetClosed()
        if !server.databases.exists(Self.name) {
            guard create else { return nil }
            guard server.databases.directory != nil, !server.readOnly else { throw CouchError.databaseNotFound }
            do { try server.databases.create(Self.name) } catch let e as CouchError where e.status == 412 {}
        }
        let (c, held) = try server.databases.collectionAndHold(Self.name)
        if !server.readOnly { try c.setValidator(name: Self.name) { new, old in UsersDatabase.check(new, old) } }
        let token = try c.addChangeObserver { [weak self] _ in self?.invalidate() }
        let extra: (ChangeObserverToken, ServedDatabase)? = monitor.locked {
            guard collection == nil, !stopped else { return (token, held) }   // opened by another thread meanwhile, or stopped
            collection = c
            hold = held
            observer = token
            cache = [:]
            generation += 1
            return nil
        }
        if let (t, h) = extra { t.remove(); h.release() }
        guard let opened = monitor.locked({ collection }) else { throw CouchError.databaseNotFound }
        return opened
    }

    /// The database was deleted (or closed) under it: let go, so `open` starts over.
    private func forgetClosed() {
        let token: ChangeObserverToken? = monitor.locked {
            guard let held = hold, held.database.isClosed else { return nil }
            held.release()
            hold = nil
            collection = nil
            cache = [:]
            generation += 1
            defer { observer = nil }
            return observer
        }
        token?.remove()
    }

    func stop() {
        let token: ChangeObserverToken? = monitor.locked {
            stopped = true
            defer { observer = nil; hold?.release(); hold = nil; collection = nil }
            return observer
        }
        token?.remove()
    }

    private func invalidate() { monitor.locked { cache = [:]; generation += 1 } }

    // MARK: logins

    /// The user `name` of this database: the hash and roles of their document; nil when
    /// there is none (or no database: it is not made for a lookup).
    func account(_ name: String) -> Authenticator.Account? {
        let (cached, gen) = monitor.locked { (cache[name], generation) }
        if let cached { return cached }
        let found = lookup(name)
        monitor.locked { if generation == gen { cache[name] = found } }
        return found
    }

    private func lookup(_ name: String) -> Authenticator.Account? {
        guard let c = try? open(create: false), let bytes = try? c.get(docID: Self.idPrefix + name),
              let doc = bytes.withUnsafeBufferPointer({ try? JSONParser.parseObject(bytes: $0) }),
              doc["type"]?.stringValue == "user", let hash = Self.passwordHash(doc) else { return nil }
        let roles = doc["roles"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return Authenticator.Account(hash: hash, roles: roles)
    }

    /// A document's stored password, in PasswordHash's text form (parsed there: one
    /// reading of the formats and their bounds).
    private static func passwordHash(_ doc: JSONObject) -> PasswordHash? {
        guard let salt = doc["salt"]?.stringValue else { return nil }
        switch doc["password_scheme"]?.stringValue ?? "simple" {
        case "pbkdf2":
            guard let key = doc["derived_key"]?.stringValue, let n = doc["iterations"]?.intValue else { return nil }
            let prf = doc["pbkdf2_prf"]?.stringValue ?? "sha"
            guard prf == "sha256" || prf == "sha" else { return nil }
            return PasswordHash("-pbkdf2:\(prf)-\(key),\(salt),\(n)")
        case "simple":
            return doc["password_sha"]?.stringValue.flatMap { PasswordHash("-hashed-\($0),\(salt)") }
        default: return nil
        }
    }

    // MARK: writes

    /// The document to store for a write by `user` (couch_users_db's `before_doc_update`,
    /// then the validate function's rules that need the user): another user's document is
    /// a 404, a clear `password` becomes its PBKDF2 fields. `current` is the stored one.
    func prepare(_ doc: JSONObject, docID: String, current: JSONObject?, user: UserContext) throws -> JSONObject {
        if docID.hasPrefix("_design/") { return doc }
        let isAdmin = user.isServerAdmin
        let docName = docID.hasPrefix(Self.idPrefix) ? String(docID.dropFirst(Self.idPrefix.count)) : nil
        if !isAdmin, let name = user.name, name != docName { throw CouchError.notFound("missing") }
        if doc["_deleted"]?.boolValue == true {
            if isAdmin || (user.name != nil && user.name == current?["name"]?.stringValue) { return doc }
            throw CouchError.forbidden("Only admins may delete other user docs.")
        }
        if !isAdmin, let reason = Self.userRule(doc, current, user) { throw CouchError.forbidden(reason) }
        var out = doc
        switch doc["password"] {
        case .null?: out["password"] = nil          // CouchDB's way of keeping no password
        case .string(let password)?:
            let iterations = server.config.value("chttpd_auth", "iterations").flatMap(Int.init) ?? PasswordHash.defaultIterations
            let hash = PasswordHash.make(password, iterations: iterations)
            out["password"] = nil
            out["password_scheme"] = .string("pbkdf2")
            out["pbkdf2_prf"] = .string("sha256")
            out["iterations"] = .int(Int64(iterations))
            out["derived_key"] = .string(Hex.encode(hash.derived))
            out["salt"] = .string(hash.salt)
        default: break
        }
        return out
    }

    /// The validate function's rules for users who are not admins: their own document
    /// only, and its roles as they were (none for a new one).
    private static func userRule(_ new: JSONObject, _ old: JSONObject?, _ user: UserContext) -> String? {
        let newRoles = (new["roles"]?.arrayValue ?? []).compactMap(\.stringValue).sorted()
        guard let old else { return newRoles.isEmpty ? nil : "Only _admin may set roles" }
        if user.name != new["name"]?.stringValue { return "You may only update your own user document." }
        let oldRoles = (old["roles"]?.arrayValue ?? []).compactMap(\.stringValue).sorted()
        return oldRoles == newRoles ? nil : "Only _admin may edit roles"
    }

    /// The validator: the shape every stored user document has (`_design/_auth`'s
    /// validate function, in its order and with its reasons), and no clear password.
    static func check(_ json: String, _ currentJSON: String?) -> String? {
        guard let doc = try? JSONParser.parseObject(json), doc["_deleted"]?.boolValue != true,
              doc["_id"]?.stringValue?.hasPrefix("_design/") != true else { return nil }
        if doc["type"]?.stringValue != "user" { return "doc.type must be user" }
        guard let name = doc["name"]?.stringValue, !name.isEmpty else { return "doc.name is required" }
        guard let rolesValue = doc["roles"], rolesValue != .null else { return "doc.roles must exist" }
        guard let roles = rolesValue.arrayValue else { return "doc.roles must be an array" }
        guard roles.allSatisfy({ $0.stringValue != nil }) else { return "doc.roles can only contain strings" }
        if doc["_id"]?.stringValue != idPrefix + name { return "Doc ID must be of the form org.couchdb.user:name" }
        if let old = currentJSON.flatMap({ try? JSONParser.parseObject($0) }), old["_deleted"]?.boolValue != true,
           old["name"]?.stringValue != name { return "Usernames can not be changed." }
        if doc["password_sha"] != nil && doc["salt"] == nil { return "Users with password_sha must have a salt." }
        if doc["password_scheme"]?.stringValue == "pbkdf2" {
            if doc["iterations"]?.intValue == nil { return "iterations must be a number." }
            if doc["derived_key"]?.stringValue == nil { return "derived_key must be a string." }
        }
        if roles.contains(where: { $0.stringValue != "_metrics" && $0.stringValue?.hasPrefix("_") == true }) {
            return "No system roles (starting with underscore) in users db."
        }
        if name.hasPrefix("_") { return "Username may not start with underscore." }
        if name.contains(":") { return "Character `:` is not allowed in usernames." }
        // Written through the listener, a password is hashed first (`prepare`): one in
        // clear comes another way (a replication, `new_edits=false`) and is not kept.
        if doc["password"] != nil { return "doc.password is never stored: write it through the listener to have it hashed" }
        return nil
    }

    // MARK: access

    /// What a user who is not a server admin may do in `_users` (Authorization): sign up
    /// (POST of the database), and GET/HEAD/PUT/DELETE of their own document's JSON (PUT
    /// of another's is a 404 from `prepare`, a read of another's a 404 here, as CouchDB's
    /// `after_doc_read` strips it to nothing).
    func authorize(_ req: Request) throws {
        let s = req.path.segments, user = req.userCtx
        if s.count == 1 && req.method == .POST { return }
        guard s.count == 2, !s[1].hasPrefix("_") else {
            if s.count >= 2 && s[1].hasPrefix("_design/") && (req.method == .GET || req.method == .HEAD) {
                throw CouchError.forbidden("Only administrators can view design docs in the users database.")
            }
            throw Router.notServerAdmin
        }
        switch req.method {
        case .GET, .HEAD:
            if user.name == nil || Self.idPrefix + user.name! != s[1] { throw CouchError.notFound("missing") }
        case .PUT, .DELETE:
            // Only JSON bodies go through `prepare`.
            if req.contentType?.type == "multipart/related" || req.query["new_edits"] == "false" { throw Router.notServerAdmin }
        default: throw Router.notServerAdmin
        }
    }

    /// `[couchdb] users_db_security_editable` (CouchDB 3's default: false).
    var securityEditable: Bool { server.config.value("couchdb", "users_db_security_editable") == "true" }
}

extension Router {
    /// A document body written to `urlName` by this request: unchanged, except in `_users`
    /// (UsersDatabase.prepare).
    func userDocumentBody(_ urlName: String, _ docID: String?, _ bytes: [UInt8], _ req: Request) throws -> [UInt8] {
        guard urlName == UsersDatabase.name else { return bytes }
        let doc = try parseObject(bytes)
        guard let id = docID ?? doc["_id"]?.stringValue else { return bytes }    // no `_id`: the validator refuses it
        let prepared = try server.usersDatabase.prepare(doc, docID: id, current: try storedUserDocument(id), user: req.userCtx)
        var w = JSONWriter(canonical: false)
        w.writeObject(prepared)
        return w.bytes
    }

    /// The same for documents of a `_bulk_docs` (a server admin's: Authorization).
    func userDocuments(_ urlName: String, _ docs: [JSONObject], _ req: Request) throws -> [JSONObject] {
        guard urlName == UsersDatabase.name else { return docs }
        return try docs.map { doc in
            guard let id = doc["_id"]?.stringValue else { return doc }
            return try server.usersDatabase.prepare(doc, docID: id, current: nil, user: req.userCtx)
        }
    }

    /// A deletion in `_users` by this request: allowed by UsersDatabase.prepare's rules.
    func checkUserDeletion(_ urlName: String, _ docID: String, _ req: Request) throws {
        guard urlName == UsersDatabase.name else { return }
        _ = try server.usersDatabase.prepare(JSONObject([("_deleted", .bool(true))]), docID: docID,
                                             current: try storedUserDocument(docID), user: req.userCtx)
    }

    private func storedUserDocument(_ docID: String) throws -> JSONObject? {
        guard let c = try server.usersDatabase.open(), let bytes = try? c.get(docID: docID) else { return nil }
        return bytes.withUnsafeBufferPointer { try? JSONParser.parseObject(bytes: $0) }
    }
}
