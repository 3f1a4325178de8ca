import CBLiteCore

/// Who a request acts as: CouchDB's `userCtx`. `name` nil is anonymous; the role `_admin`
/// makes a server admin. Every request carries one (`Request.userCtx`), decided by the
/// Authenticator before its body is read; the Authorization rules and `_security` checks
/// (SecurityObject) read it, and so can a `validate_doc_update` (`json(db:)`).
struct UserContext: Sendable, Equatable {
    static let adminRole = "_admin"

    let name: String?
    let roles: [String]

    static let anonymous = UserContext(name: nil, roles: [])
    /// A listener without users serves everyone as a server admin (CouchDB 1.x's "admin
    /// party"): `{"name": null, "roles": ["_admin"]}`.
    static let adminParty = UserContext(name: nil, roles: [adminRole])

    var isServerAdmin: Bool { roles.contains(UserContext.adminRole) }

    func isAdmin(of security: SecurityObject) -> Bool { security.isAdmin(name: name, roles: roles) }
    func isMember(of security: SecurityObject) -> Bool { security.isMember(name: name, roles: roles) }

    /// `{"name", "roles"}` (`/_session`'s userCtx), with `"db"` first when given (the userCtx
    /// a `validate_doc_update` function receives).
    func json(db: String? = nil) -> JSONValue {
        var o = JSONObject()
        if let db { o["db"] = .string(db) }
        o["name"] = name.map { .string($0) } ?? .null
        o["roles"] = .array(roles.map { .string($0) })
        return .object(o)
    }
}
