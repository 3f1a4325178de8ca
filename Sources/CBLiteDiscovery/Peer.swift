import CBLiteCore

/// A service found by browsing, resolved: where it listens and what its TXT record says.
public struct Peer: Equatable, Sendable {
    public var name: String
    public var type: String
    public var domain: String
    /// The host's DNS-SD name (e.g. "laptop.local").
    public var host: String
    public var port: Int
    /// Every address it was resolved to, IPv4 first.
    public var addresses: [String]
    public var txt: ServiceTXT

    public init(name: String, type: String, domain: String, host: String, port: Int, addresses: [String], txt: ServiceTXT) {
        (self.name, self.type, self.domain, self.host, self.port, self.addresses, self.txt) = (name, type, domain, host, port, addresses, txt)
    }

    /// The base URL to reach it: its first address (IPv4 first), https when its TXT says
    /// TLS. A link-local IPv6 address would need its interface, so IPv4 is preferred.
    public var url: String? {
        guard let a = addresses.first else { return nil }
        return "\(txt.tls ? "https" : "http")://\(a.contains(":") ? "[\(a)]" : a):\(port)/"
    }

    /// The peer as the JSON object of cbl_browser events, `cblite peers --json` and Python.
    public var json: JSONObject {
        var o = JSONObject([("name", .string(name)), ("type", .string(type)), ("domain", .string(domain)),
                            ("host", .string(host)), ("port", .int(Int64(port))),
                            ("addresses", .array(addresses.map { .string($0) }))])
        if let url { o["url"] = .string(url) }
        o["databases"] = .array(txt.databases.map { .string($0) })
        o["tls"] = .bool(txt.tls)
        if let fp = txt.sha256 { o["sha256"] = .string(fp) }
        o["txt"] = .object(JSONObject(txt.items.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) }))
        return o
    }
}

/// What a browser reports.
public enum PeerEvent: Equatable, Sendable {
    /// A peer was found and resolved.
    case appeared(Peer)
    /// A peer already reported was resolved again with other addresses, port or TXT.
    case updated(Peer)
    /// The peer withdrew its advertisement (or went away everywhere it was seen).
    case disappeared(name: String, type: String, domain: String)
    /// Browsing failed (the daemon went away); no event follows.
    case failed(String)

    /// `{"event": "appeared"|"updated", "peer": {...}}`, `{"event": "disappeared", "peer":
    /// {"name", "type", "domain"}}`, `{"event": "failed", "message": ...}`.
    public var json: JSONObject {
        switch self {
        case .appeared(let p): return JSONObject([("event", .string("appeared")), ("peer", .object(p.json))])
        case .updated(let p): return JSONObject([("event", .string("updated")), ("peer", .object(p.json))])
        case .disappeared(let name, let type, let domain):
            return JSONObject([("event", .string("disappeared")),
                               ("peer", .object(JSONObject([("name", .string(name)), ("type", .string(type)), ("domain", .string(domain))])))])
        case .failed(let message): return JSONObject([("event", .string("failed")), ("message", .string(message))])
        }
    }
}
