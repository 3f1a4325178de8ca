import CBLiteCore

/// What to replicate, with whom, and how: one JSON shape for C, Python and the CLI
/// (documented in include/cblite.h at cbl_replicator_start).
public struct ReplicatorConfiguration: Sendable {
    public enum Direction: String, Sendable { case push, pull, both }

    public var remote: RemoteURL
    public var direction: Direction = .both
    public var continuous = false
    public var createTarget = false
    /// Push: a filter registered on the local database (`Database.setFilter`) and its parameters.
    public var filter: String?
    public var filterParams = JSONObject()
    /// Pull: a filter on the peer (CouchDB's "ddoc/name") and its parameters.
    public var pullFilter: String?
    public var pullFilterParams = JSONObject()
    /// Only these documents, both ways.
    public var docIDs: [String]?
    /// Only documents a Mango selector matches: push evaluates it here, pull sends it to
    /// the peer (`_changes?filter=_selector`, as CouchDB's replicator does).
    public var selector: JSONValue?
    /// Pull from Sync Gateway: only these channels (its `sync_gateway/bychannel` filter).
    public var channels: [String]?
    public var headers: [(String, String)] = []
    public var authentication: RemoteAuthentication = .none
    /// Replaces the peer's URL in the replication's identity (a peer whose address changes
    /// keeps its checkpoints).
    public var remoteUUID: String?
    /// How long a continuous pull's longpoll waits for a change before asking again.
    public var heartbeatMs = 30_000
    public var batchSize = 500
    /// One-shot: how many times a transient failure is retried before the replication stops
    /// with it. Continuous replications retry for as long as they run.
    public var maxRetries = 9
    public var retryInitialMs = 500
    public var retryMaxMs = 300_000
    /// How long the peer may take to answer a request.
    public var timeoutMs = 60_000
    public var tls = TLSOptions()
    /// Deliver an event for every document replicated (errors are always delivered).
    public var documentEvents = false

    public init(remote: RemoteURL) { self.remote = remote }

    public init(json: String) throws {
        let o = try JSONParser.parseObject(json, what: "replicator configuration")
        guard let url = o["url"]?.stringValue else { throw CBLError.badRequest("replicator configuration needs \"url\" (the peer's database)") }
        remote = try RemoteURL(url)
        if let u = remote.user { authentication = .basic(user: u, password: remote.password ?? "") }
        func string(_ k: String, _ v: JSONValue) throws -> String {
            guard let s = try v.stringOption(k) else { throw CBLError.badRequest("option \"\(k)\" must be a string") }
            return s
        }
        func int(_ k: String, _ v: JSONValue, _ range: ClosedRange<Int64>) throws -> Int { Int(try v.intOption(k, in: range)) }
        func object(_ k: String, _ v: JSONValue) throws -> JSONObject {
            guard let x = v.objectValue else { throw CBLError.badRequest("\"\(k)\" must be an object") }
            return x
        }
        for (k, v) in o.members {
            switch k {
            case "url": continue
            case "direction":
                guard let d = Direction(rawValue: try string(k, v)) else { throw CBLError.badRequest("\"direction\" must be \"push\", \"pull\" or \"both\"") }
                direction = d
            case "continuous": continuous = try v.boolOption(k)
            case "create_target": createTarget = try v.boolOption(k)
            case "filter": filter = try string(k, v)
            case "filter_params": filterParams = try object(k, v)
            case "pull_filter": pullFilter = try string(k, v)
            case "pull_filter_params": pullFilterParams = try object(k, v)
            case "doc_ids": docIDs = try v.stringArrayOption(k)
            case "selector":
                do { _ = try Selector(v) } catch let e as MangoError { throw e.cblError }
                selector = v
            case "channels": channels = try v.stringArrayOption(k)
            case "headers":
                for (n, hv) in try object(k, v).members {
                    let value = try string("headers.\(n)", hv)
                    guard HeaderText.isToken(n), HeaderText.isValue(value) else { throw CBLError.badRequest("header \"\(n)\" is not a valid HTTP header") }
                    headers.append((n, value))
                }
            case "auth": authentication = try ReplicatorConfiguration.authentication(try object(k, v))
            case "remote_uuid": remoteUUID = try string(k, v)
            case "heartbeat_ms": heartbeatMs = try int(k, v, 1000...600_000)
            case "batch_size": batchSize = try int(k, v, 1...10_000)
            case "max_retries": maxRetries = try int(k, v, 0...1_000_000)
            case "retry_initial_ms": retryInitialMs = try int(k, v, 1...3_600_000)
            case "retry_max_ms": retryMaxMs = try int(k, v, 1...86_400_000)
            case "timeout_ms": timeoutMs = try int(k, v, 100...3_600_000)
            case "document_events": documentEvents = try v.boolOption(k)
            case "tls":
                for (tk, tv) in try object(k, v).members {
                    switch tk {
                    case "pinned_sha256":
                        let hex = try string("tls.pinned_sha256", tv).lowercased().filter { $0 != ":" }
                        guard hex.count == 64, let bytes = Hex.decode(hex) else {
                            throw CBLError.badRequest("\"tls.pinned_sha256\" must be 64 hex digits (the certificate's SHA-256)")
                        }
                        tls.pinnedSHA256 = bytes
                    case "ca_file": tls.caFile = try string("tls.ca_file", tv)
                    default: throw CBLError.badRequest("unknown option \"tls.\(tk)\"")
                    }
                }
            default:
                throw CBLError.badRequest("unknown replicator option \"\(k)\"")
            }
        }
        if (tls.pinnedSHA256 != nil || tls.caFile != nil) && !remote.tls {
            throw CBLError.badRequest("\"tls\" options need an https:// URL")
        }
        if channels != nil && pullFilter != nil { throw CBLError.badRequest("\"channels\" and \"pull_filter\" cannot be combined") }
    }

    static func authentication(_ o: JSONObject) throws -> RemoteAuthentication {
        let type = o["type"]?.stringValue ?? "basic"
        func field(_ k: String) throws -> String {
            guard let s = o[k]?.stringValue else { throw CBLError.badRequest("\"auth\" of type \"\(type)\" needs \"\(k)\"") }
            return s
        }
        for (k, _) in o.members where !["type", "username", "password", "token"].contains(k) {
            throw CBLError.badRequest("unknown option \"auth.\(k)\"")
        }
        switch type {
        case "basic": return .basic(user: try field("username"), password: try field("password"))
        case "session": return .session(user: try field("username"), password: try field("password"))
        case "bearer": return .bearer(try field("token"))
        case "none": return .none
        default: throw CBLError.badRequest("\"auth.type\" must be \"basic\", \"session\", \"bearer\" or \"none\"")
        }
    }
}

/// RFC 9110's rules for header names and values (no CR/LF smuggling through a config).
enum HeaderText {
    static func isToken(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || Array("!#$%&'*+-.^_`|~".utf8).contains(c)
        }
    }

    static func isValue(_ s: String) -> Bool { s.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) } }
}
