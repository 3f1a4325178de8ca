import CBLiteCore
import CouchWire

/// CouchDB's runtime configuration (`/_node/_local/_config`): sections of string values,
/// set and deleted over HTTP, kept in `listener-config.json` beside the served databases
/// (only in memory without a directory). As in CouchDB, only values that were set are
/// listed. The ones cblite acts on:
///   uuids/algorithm, uuids/utc_id_suffix    at once (`/_uuids`, POSTed documents);
///   couchdb/max_document_size               at the next start (limits.max_document_bytes);
///   chttpd/max_http_request_size            at the next start (limits.max_body_bytes);
///   chttpd/decode_plus_to_space             at once ("false": a '+' in a path stays a '+');
///   attachments/compression_level, attachments/compressible_types
///                                           at once, for attachments attached from then on;
///   admins/NAME                             at once: a server admin (Authenticator);
///   chttpd_auth/secret, chttpd_auth/timeout at once: session cookies (Authenticator);
///   chttpd/WWW-Authenticate                 at once: the challenge sent with a 401;
///   couchdb/default_security                at once: `admin_only` or `everyone`, the
///                                           `_security` of a database that has none.
/// Any other key is kept as given. Thread-safe.
final class ServerConfig: @unchecked Sendable {
    static let fileName = "listener-config.json"
    /// Sections CouchDB refuses to change over HTTP (they name programs to run).
    static let blacklisted: Set<String> = ["query_servers", "native_query_servers"]

    private let lock = Monitor()
    private var sections: [String: [String: String]] = [:]
    private let path: String?
    /// The start configuration: what a deleted value falls back to.
    private let start: ListenerConfiguration
    private let uuids: UUIDGenerator

    /// Reads the saved values (a missing file: none; an unreadable one: none, logged) and
    /// applies the ones that act at once to `uuids`.
    init(start: ListenerConfiguration, uuids: UUIDGenerator) {
        self.start = start
        self.uuids = uuids
        path = start.directory.map { $0 + "/" + ServerConfig.fileName }
        sections = path.map(ServerConfig.load) ?? [:]
        for (key, value) in sections["uuids"] ?? [:] { apply("uuids", key, value) }
        hashPlainAdmins()
    }

    /// CouchDB's start: a password written in clear in `[admins]` (by hand, in the file) is
    /// replaced by its hash, and the file saved, before anything is served.
    private func hashPlainAdmins() {
        let plain = (sections["admins"] ?? [:]).filter { !PasswordHash.isHash($0.value) }
        guard !plain.isEmpty else { return }
        for (name, password) in plain { sections["admins"]?[name] = PasswordHash.make(password).text }
        do { try save() } catch {
            Loggers.listener.warning("\(path ?? ""): the hashed [admins] passwords were not saved (\(error))")
        }
    }

    private static func load(_ path: String) -> [String: [String: String]] {
        guard FileIO.exists(path) else { return [:] }
        do {
            let o = try JSONParser.parseObject(String(decoding: try FileIO.readAll(path), as: UTF8.self))
            return Dictionary(o.members.compactMap { name, v in
                v.objectValue.map { keys in
                    (name, Dictionary(keys.members.compactMap { k, v in v.stringValue.map { (k, $0) } }, uniquingKeysWith: { $1 }))
                }
            }, uniquingKeysWith: { $1 })
        } catch {
            Loggers.listener.warning("\(path): not read (\(error)); starting without saved settings")
            return [:]
        }
    }

    /// The start configuration's limits with the ones set over `_config` (they size the
    /// server, so they apply from the next start).
    var limits: ListenerConfiguration.Limits {
        var limits = start.limits
        if let n = value("couchdb", "max_document_size").flatMap(Int.init) { limits.maxDocumentBytes = n }
        if let n = value("chttpd", "max_http_request_size").flatMap(Int.init) { limits.maxBodyBytes = n }
        return limits
    }

    /// Told when the attachments section changes (the served databases' compression).
    var attachmentsChanged: (@Sendable (AttachmentCompression) -> Void)? {
        get { lock.locked { changeHandler } }
        set { lock.locked { changeHandler = newValue } }
    }
    private var changeHandler: (@Sendable (AttachmentCompression) -> Void)?

    /// CouchDB's `[attachments]` settings, its defaults unless set.
    var attachmentCompression: AttachmentCompression {
        AttachmentCompression(level: value("attachments", "compression_level").flatMap(Int.init) ?? AttachmentCompression.defaultLevel,
                              types: value("attachments", "compressible_types") ?? AttachmentCompression.defaultTypes,
                              compressor: GzipDeflater())
    }

    /// The `_security` of a database that has none (`[couchdb] default_security`): CouchDB
    /// 3's `admin_only` when the listener has users; without users every request is a
    /// server admin's anyway, and a new database answers `{}` as in CouchDB 1.x (the shape
    /// clients of an admin party expect).
    var defaultSecurity: SecurityObject {
        switch value("couchdb", "default_security") {
        case "admin_only": return .adminOnly
        case "everyone": return .everyone
        default: return start.users.isEmpty && !hasValues("admins") ? .everyone : .adminOnly
        }
    }

    /// A value that acts at once takes effect (nil: deleted, back to the start configuration's).
    private func apply(_ section: String, _ key: String, _ value: String?) {
        switch (section, key) {
        case ("attachments", "compression_level"), ("attachments", "compressible_types"):
            attachmentsChanged?(attachmentCompression)
        case ("uuids", "algorithm"): uuids.configure(algorithm: value.flatMap(UUIDGenerator.Algorithm.init) ?? start.uuidAlgorithm)
        case ("uuids", "utc_id_suffix"): uuids.configure(utcIDSuffix: value ?? start.utcIDSuffix)
        default: break
        }
    }

    func value(_ section: String, _ key: String) -> String? { lock.locked { sections[section]?[key] } }

    func all() -> JSONValue {
        lock.locked {
            .object(JSONObject(sections.keys.sorted().map { ($0, ServerConfig.json(sections[$0]!)) }))
        }
    }

    func hasValues(_ section: String) -> Bool { lock.locked { sections[section]?.isEmpty == false } }

    func section(_ name: String) -> JSONValue { lock.locked { ServerConfig.json(sections[name] ?? [:]) } }

    /// Sets a value; returns the previous one ("" when there was none), as CouchDB answers.
    func set(_ section: String, _ key: String, _ value: String) throws -> String {
        guard !ServerConfig.blacklisted.contains(section) else {
            throw CouchError.forbidden("Config section blacklisted for modification over HTTP API.")
        }
        try ServerConfig.validate(section, key, value)
        // Passwords are kept hashed, never as given (CouchDB's `[admins]`); hashed before
        // the lock is taken (PBKDF2 takes a while).
        let value = section == "admins" && !PasswordHash.isHash(value) ? PasswordHash.make(value).text : value
        let previous: String = try lock.locked {
            let old = sections[section]?[key]
            sections[section, default: [:]][key] = value
            do { try save() } catch {
                if let old { sections[section]?[key] = old } else { sections[section]?[key] = nil }
                throw error
            }
            return old ?? ""
        }
        apply(section, key, value)
        return previous
    }

    /// Deletes a value; returns it. 404 `unknown_config_value` when it was not set.
    func delete(_ section: String, _ key: String) throws -> String {
        guard !ServerConfig.blacklisted.contains(section) else {
            throw CouchError.forbidden("Config section blacklisted for modification over HTTP API.")
        }
        let previous: String = try lock.locked {
            guard let old = sections[section]?[key] else { throw CouchError.notFound("unknown_config_value") }
            sections[section]?[key] = nil
            if sections[section]?.isEmpty == true { sections[section] = nil }
            do { try save() } catch {
                sections[section, default: [:]][key] = old
                throw error
            }
            return old
        }
        apply(section, key, nil)
        return previous
    }

    /// The values cblite acts on must make sense before they are kept.
    private static func validate(_ section: String, _ key: String, _ value: String) throws {
        switch (section, key) {
        case ("uuids", "algorithm"):
            guard UUIDGenerator.Algorithm(rawValue: value) != nil else {
                throw CouchError.badRequest("uuids/algorithm must be one of "
                                            + UUIDGenerator.Algorithm.allCases.map(\.rawValue).joined(separator: ", "))
            }
        case ("attachments", "compression_level"):
            guard let n = Int(value), (0...9).contains(n) else { throw CouchError.badRequest("attachments/compression_level must be 0 to 9") }
        case ("couchdb", "max_document_size"), ("chttpd", "max_http_request_size"), ("chttpd_auth", "timeout"):
            guard let n = Int(value), n > 0 else { throw CouchError.badRequest("\(section)/\(key) must be a positive integer") }
        case ("couchdb", "default_security"):
            guard value == "admin_only" || value == "everyone" else {
                throw CouchError.badRequest("couchdb/default_security must be admin_only or everyone")
            }
        case ("admins", _):
            guard !key.isEmpty, !key.contains(":") else { throw CouchError.badRequest("an admin's name must be non-empty and without ':'") }
            guard !value.isEmpty else { throw CouchError.badRequest("an admin's password must not be empty") }
        default:
            break
        }
    }

    private static func json(_ keys: [String: String]) -> JSONValue {
        .object(JSONObject(keys.keys.sorted().map { ($0, .string(keys[$0]!)) }))
    }

    /// Written whole to a temporary file, then renamed over the old one (never half written).
    private func save() throws {
        guard let path else { return }
        let text = JSONWriter.canonical(.object(JSONObject(sections.keys.sorted().map { ($0, ServerConfig.json(sections[$0]!)) })))
        do {
            try FileIO.writeAtomically(path, text, mode: 0o600)
        } catch {
            throw CouchError(status: 500, error: "unknown_error", reason: "cannot save the configuration in \(path): \(error)")
        }
    }
}

extension ServerConfig {
    /// `[chttpd] decode_plus_to_space`: whether a '+' in a request path is a space, as in
    /// CouchDB 3.5 by default (read per request: it acts at once).
    var decodesPlusToSpace: Bool { value("chttpd", "decode_plus_to_space") != "false" }
}
