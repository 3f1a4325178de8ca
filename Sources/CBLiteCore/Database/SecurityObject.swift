/// A database's `_security` object, as CouchDB keeps one: its admins and its members, each
/// by name and by role. Kept verbatim (other members included, in their order) with the
/// database (`Database.securityObject`), for every collection of it.
///
/// CouchDB's rules (couch_db.erl), which the listener enforces:
/// - a user is a database admin when one of their roles is `_admin` (a server admin) or in
///   `admins.roles`, or their name is in `admins.names`;
/// - a member when an admin, or when `members` names nobody and no role (a public
///   database), or by name or role as above; `readers` stands for `members` when there is no
///   `members` (CouchDB 1.x's name).
public struct SecurityObject: Equatable, Sendable {
    public struct Group: Equatable, Sendable {
        public var names: [String]
        public var roles: [String]
        public init(names: [String] = [], roles: [String] = []) { self.names = names; self.roles = roles }

        /// Whether `name` or one of `roles` is in the group; `_admin` always is.
        func includes(name: String?, roles userRoles: [String]) -> Bool {
            if userRoles.contains("_admin") || userRoles.contains(where: roles.contains) { return true }
            guard let name else { return false }
            return names.contains(name)
        }
    }

    /// The object as given (what `GET /{db}/_security` answers).
    public let json: JSONObject
    public let admins: Group
    public let members: Group

    /// CouchDB 3's object for a new database (`[couchdb] default_security = admin_only`):
    /// server admins only.
    public static let adminOnly = try! SecurityObject(JSONObject([
        ("members", .object(JSONObject([("roles", .array([.string("_admin")]))]))),
        ("admins", .object(JSONObject([("roles", .array([.string("_admin")]))]))),
    ]))
    /// `default_security = everyone`: `{}`, a public database.
    public static let everyone = try! SecurityObject(JSONObject())

    /// Checks the shape as CouchDB does (`validate_security_object`): `admins` and `members`
    /// objects whose `names` and `roles` are lists of strings, each optional.
    public init(_ json: JSONObject) throws {
        self.json = json
        admins = try SecurityObject.group(json["admins"])
        members = try SecurityObject.group(json["members"] ?? json["readers"])
    }

    public init(json text: String) throws {
        try self.init(JSONParser.parseObject(text, what: "security object"))
    }

    private static func group(_ value: JSONValue?) throws -> Group {
        guard let value else { return Group() }
        guard let o = value.objectValue else { throw CBLError.badRequest("admins or members must be a JSON list of strings") }
        func strings(_ key: String) throws -> [String] {
            guard let v = o[key] else { return [] }
            guard let list = v.arrayValue, list.allSatisfy({ $0.stringValue != nil }) else {
                throw CBLError.badRequest("\(key) must be a JSON list of strings")
            }
            return list.compactMap(\.stringValue)
        }
        return Group(names: try strings("names"), roles: try strings("roles"))
    }

    /// Nobody named, no role: every user (and anonymous) is a member.
    public var isPublic: Bool { members.names.isEmpty && members.roles.isEmpty }

    public func isAdmin(name: String?, roles: [String]) -> Bool { admins.includes(name: name, roles: roles) }

    public func isMember(name: String?, roles: [String]) -> Bool {
        isAdmin(name: name, roles: roles) || isPublic || members.includes(name: name, roles: roles)
    }

    public var jsonText: String { String(decoding: JSONWriter.ordered(.object(json)), as: UTF8.self) }
}
