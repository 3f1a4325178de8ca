import CBLiteCore
import CouchWire

/// A peer's database URL, split: `http(s)://[user:password@]host[:port]/path/to/db`.
/// The path is kept as written (already percent-encoded); credentials are taken out so
/// they never reach logs, status or the checkpoint's identity.
public struct RemoteURL: Sendable, Equatable {
    public let tls: Bool
    public let host: String
    public let port: Int
    /// The database's path without a trailing slash, e.g. "/db" or "/prefix/db".
    public let databasePath: String
    public let user: String?
    public let password: String?

    public init(_ text: String) throws {
        func bad(_ why: String) -> CBLError { CBLError.badRequest("invalid remote URL: \(why)") }
        var rest = Substring(text)
        if rest.lowercased().hasPrefix("https://") { tls = true; rest = rest.dropFirst(8) }
        else if rest.lowercased().hasPrefix("http://") { tls = false; rest = rest.dropFirst(7) }
        else { throw bad("it must start with http:// or https://") }
        guard !rest.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { throw bad("it contains spaces or control characters") }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<slash]
        var path = rest[slash...]
        if let q = path.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            guard path[q...].count <= 1 else { throw bad("a database URL has no query or fragment") }
            path = path[..<q]
        }
        if let at = authority.lastIndex(of: "@") {
            let info = authority[..<at]
            authority = authority[authority.index(after: at)...]
            let colon = info.firstIndex(of: ":") ?? info.endIndex
            guard let u = PercentDecoding.decode(info[..<colon].utf8, plusAsSpace: false) else { throw bad("bad user name encoding") }
            user = u
            if colon < info.endIndex {
                guard let p = PercentDecoding.decode(info[info.index(after: colon)...].utf8, plusAsSpace: false) else { throw bad("bad password encoding") }
                password = p
            } else { password = nil }
        } else { user = nil; password = nil }
        // Host: a name, an IPv4 address, or an IPv6 address in brackets; then an optional port.
        var hostPart = authority
        var portText: Substring? = nil
        if hostPart.hasPrefix("[") {
            guard let close = hostPart.firstIndex(of: "]") else { throw bad("unclosed [ in the host") }
            let after = hostPart[hostPart.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { throw bad("junk after the IPv6 address") }
            hostPart = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
        } else if let colon = hostPart.lastIndex(of: ":") {
            portText = hostPart[hostPart.index(after: colon)...]
            hostPart = hostPart[..<colon]
        }
        guard !hostPart.isEmpty else { throw bad("no host") }
        host = String(hostPart)
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else { throw bad("port must be 1 to 65535") }
            port = p
        } else {
            port = tls ? 443 : 80
        }
        while path.hasSuffix("/") { path = path.dropLast() }
        guard !path.isEmpty else { throw bad("it names no database (add /dbname)") }
        databasePath = String(path)
    }

    /// The URL without credentials (for status, logs and the replication's identity).
    public var redacted: String {
        let h = host.contains(":") ? "[\(host)]" : host
        let defaultPort = tls ? 443 : 80
        return "\(tls ? "https" : "http")://\(h)\(port == defaultPort ? "" : ":\(port)")\(databasePath)"
    }

    /// The `Host` header's value.
    public var hostHeader: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return port == (tls ? 443 : 80) ? h : "\(h):\(port)"
    }

    /// The path of a document (or `_local/…`, `_changes`, …) in this database; `id` is
    /// percent-encoded except for the slash after `_design` and `_local`, as CouchDB expects.
    public func documentPath(_ id: String) -> String {
        for prefix in ["_local/", "_design/"] where id.hasPrefix(prefix) {
            return "\(databasePath)/\(prefix)\(PercentDecoding.encode(String(id.dropFirst(prefix.count))))"
        }
        return "\(databasePath)/\(PercentDecoding.encode(id))"
    }

    /// The server's root path, for `/_session` (the database path's parent).
    public var serverPath: String {
        guard let slash = databasePath.lastIndex(of: "/") else { return "" }
        return String(databasePath[..<slash])
    }
}
