import CBLiteCore

/// The listener's configuration, read from one JSON object (the same text the C ABI,
/// Python and `cblite serve --config` pass). Unknown keys are refused (400) so a typo
/// never silently weakens a setting.
public struct ListenerConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 0
    /// Databases of this directory are served, opened on demand; nil: only given handles.
    public var directory: String?
    /// name -> password, in clear or as CouchDB's hash (`-pbkdf2:sha256-…`, PasswordHash;
    /// kept only hashed in memory). Server admins unless given `userRoles`. Empty (and no
    /// `[admins]` in the server configuration): no authentication, everyone a server admin,
    /// and then only loopback clients are served unless `allowRemoteWithoutAuth`.
    public var users: [String: String] = [:]
    /// name -> roles, for users who are not server admins (unless a role is `_admin`).
    /// JSON: `"users": {"name": {"password": "…", "roles": ["…"]}}`.
    public var userRoles: [String: [String]] = [:]
    public var readOnly = false
    public var allowRemoteWithoutAuth = false
    public var tls: TLSSettings?
    public var limits = Limits()
    /// Published with DNS-SD while the listener runs (AdvertiseSettings).
    public var advertise: AdvertiseSettings?
    /// How `/_uuids` and POSTed documents without an ID get IDs (CouchDB's `[uuids]`).
    var uuidAlgorithm: UUIDGenerator.Algorithm = .sequential
    var utcIDSuffix = ""

    public enum TLSSettings: Sendable, Equatable {
        case files(certificatePEM: String, privateKeyPEM: String)
        /// A self-signed identity generated once and kept in `directory` (or the given one).
        case anonymous(directory: String?)
    }

    public struct Limits: Sendable, Equatable {
        /// A request body other than an attachment's.
        public var maxBodyBytes = 64 * 1024 * 1024
        public var maxDocumentBytes = 20 * 1024 * 1024
        /// One attachment, uploaded alone or as a part of a multipart/related document:
        /// streamed to disk, so not bounded by memory. Default none, as CouchDB's
        /// `max_attachment_size = infinity`.
        public var maxAttachmentBytes = Int.max
        /// Also the number of worker threads (up to 1024): a connection runs one request
        /// at a time, so waiting feeds never starve the other connections. Default: sized
        /// to the process's file-descriptor limit (ConnectionLimit).
        public var maxConnections = ConnectionLimit.defaultMaxConnections()
        public var idleTimeoutMs = 120_000
        /// A request's head must be complete this long after its first byte, however
        /// steadily it trickles in (slowloris).
        public var headerTimeoutMs = 5_000
        /// A request body may take this long, plus a second for every
        /// `bodyMinBytesPerSecond` bytes that came (BodyRateGuard: slow-body clients).
        public var bodyTimeoutMs = 20_000
        public var bodyMinBytesPerSecond = 500
        /// More header fields than this: 431.
        public var maxHeaderCount = 100
        public init() {}
    }

    public init() {}

    public init(json: String) throws {
        let o: JSONObject
        do { o = try JSONParser.parseObject(json, what: "listener configuration") } catch let e as CBLError {
            throw CBLError(.badRequest, "listener configuration: \(e.message)")
        }
        for (k, v) in o.members {
            switch k {
            case "host": host = try Self.string(v, k)
            case "port":
                guard let p = v.intValue, (0...65535).contains(p) else { throw Self.bad("port must be 0...65535") }
                port = Int(p)
            case "directory": directory = try Self.string(v, k)
            case "users":
                guard let u = v.objectValue else { throw Self.bad("users must be an object {name: password}") }
                for (name, value) in u.members {
                    guard !name.isEmpty, !name.contains(":"), !name.utf8.contains(where: { $0 < 0x20 }) else {
                        throw Self.bad("users: each name must be non-empty, without ':' or control characters")
                    }
                    let (password, roles) = try Self.user(value)
                    users[name] = password
                    userRoles[name] = roles
                }
            case "read_only": readOnly = try Self.bool(v, k)
            case "allow_remote_without_auth": allowRemoteWithoutAuth = try Self.bool(v, k)
            case "tls": tls = try Self.tlsSettings(v)
            case "limits": limits = try Self.limits(v)
            case "advertise": advertise = v.isNull ? nil : try AdvertiseSettings(json: v)
            case "uuids":
                guard let u = v.objectValue else { throw Self.bad("uuids must be an object {\"algorithm\", \"utc_id_suffix\"}") }
                for (key, value) in u.members {
                    switch key {
                    case "algorithm":
                        guard let a = UUIDGenerator.Algorithm(rawValue: try Self.string(value, "uuids.algorithm")) else {
                            throw Self.bad("uuids.algorithm must be one of " + UUIDGenerator.Algorithm.allCases.map(\.rawValue).joined(separator: ", "))
                        }
                        uuidAlgorithm = a
                    case "utc_id_suffix": utcIDSuffix = try Self.string(value, "uuids.utc_id_suffix")
                    default: throw Self.bad("unknown key \"uuids.\(key)\"")
                    }
                }
            default: throw Self.bad("unknown key \"\(k)\"")
            }
        }
    }

    /// Replaces, in the configuration file at `path`, every user password written in clear
    /// by its hash (CouchDB's `-pbkdf2:sha256-…`), the rest of the file as it was, as CouchDB
    /// rewrites the passwords of its `[admins]` at the start (`cblite serve --config` does
    /// this first). Returns how many were hashed; the file is rewritten only then.
    public static func hashPasswords(inFile path: String) throws -> Int {
        var o = try JSONParser.parseObject(String(decoding: try FileIO.readAll(path), as: UTF8.self), what: "configuration file")
        guard var users = o["users"]?.objectValue else { return 0 }
        var hashed = 0
        for (i, member) in users.members.enumerated() {
            switch member.value {
            case .string(let p) where !PasswordHash.isHash(p):
                users.members[i].value = .string(PasswordHash.make(p).text)
                hashed += 1
            case .object(var entry):
                if let p = entry["password"]?.stringValue, !PasswordHash.isHash(p) {
                    entry["password"] = .string(PasswordHash.make(p).text)
                    users.members[i].value = .object(entry)
                    hashed += 1
                }
            default: break
            }
        }
        guard hashed > 0 else { return 0 }
        o["users"] = .object(users)
        try FileIO.writeAtomically(path, JSONWriter.ordered(.object(o)) + [10], mode: 0o600)
        return hashed
    }

    /// A user's entry: a password string (a server admin), or `{"password", "roles"}`.
    private static func user(_ v: JSONValue) throws -> (password: String, roles: [String]?) {
        let what = "users: each name maps to a password string or {\"password\": string, \"roles\": [strings]}"
        if let p = v.stringValue { return (p, nil) }
        guard let o = v.objectValue, let p = o["password"]?.stringValue,
              o.members.allSatisfy({ $0.key == "password" || $0.key == "roles" }) else { throw bad(what) }
        guard let roles = o["roles"] else { return (p, nil) }
        guard let list = roles.arrayValue, list.allSatisfy({ $0.stringValue != nil }) else { throw bad(what) }
        return (p, list.compactMap(\.stringValue))
    }

    private static func tlsSettings(_ v: JSONValue) throws -> TLSSettings? {
        if v.isNull { return nil }
        guard let o = v.objectValue else { throw bad("tls must be an object") }
        var cert: String?, key: String?, anonymous = false, dir: String?
        for (k, v) in o.members {
            switch k {
            case "cert_pem_file": cert = try string(v, "tls.cert_pem_file")
            case "key_pem_file": key = try string(v, "tls.key_pem_file")
            case "anonymous": anonymous = try bool(v, "tls.anonymous")
            case "identity_directory": dir = try string(v, "tls.identity_directory")
            default: throw bad("unknown key \"tls.\(k)\"")
            }
        }
        if anonymous {
            guard cert == nil, key == nil else { throw bad("tls: give either anonymous or cert_pem_file/key_pem_file") }
            return .anonymous(directory: dir)
        }
        guard let cert, let key else { throw bad("tls needs cert_pem_file and key_pem_file, or anonymous: true") }
        return .files(certificatePEM: cert, privateKeyPEM: key)
    }

    private static func limits(_ v: JSONValue) throws -> Limits {
        guard let o = v.objectValue else { throw bad("limits must be an object") }
        var l = Limits()
        for (k, v) in o.members {
            guard let n = v.intValue, n > 0, n <= Int64(Int32.max) * 64 else { throw bad("limits.\(k) must be a positive integer") }
            switch k {
            case "max_body_bytes": l.maxBodyBytes = Int(n)
            case "max_document_bytes": l.maxDocumentBytes = Int(n)
            case "max_connections": l.maxConnections = Int(n)
            case "idle_timeout_ms": l.idleTimeoutMs = Int(n)
            case "header_timeout_ms": l.headerTimeoutMs = Int(n)
            case "body_timeout_ms": l.bodyTimeoutMs = Int(n)
            case "body_min_bytes_per_second": l.bodyMinBytesPerSecond = Int(n)
            case "max_attachment_bytes": l.maxAttachmentBytes = Int(n)
            case "max_header_count": l.maxHeaderCount = Int(n)
            default: throw bad("unknown key \"limits.\(k)\"")
            }
        }
        return l
    }

    /// Hosts and paths: a NUL would cut the text where the system reads it (a path
    /// "dir\0x" would serve "dir"), so it is refused.
    private static func string(_ v: JSONValue, _ k: String) throws -> String {
        guard let s = v.stringValue else { throw bad("\(k) must be a string") }
        guard !s.utf8.contains(0) else { throw bad("\(k) must not contain NUL characters") }
        return s
    }

    private static func bool(_ v: JSONValue, _ k: String) throws -> Bool {
        guard let b = v.boolValue else { throw bad("\(k) must be true or false") }
        return b
    }

    private static func bad(_ m: String) -> CBLError { CBLError(.badRequest, "listener configuration: \(m)") }
}
