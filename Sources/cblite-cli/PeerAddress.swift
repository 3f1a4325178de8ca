import CBLiteCore
import CBLiteDiscovery
import Glibc

/// Finding a peer by its advertised name: `cblite push/pull/sync DB peer:NAME[/DB]` and
/// `cblite peers` browse DNS-SD (CBLiteDiscovery) for the listeners on the network.
enum PeerAddress {
    static let prefix = "peer:"

    /// `peer:NAME/DB` → (NAME, DB); `peer:NAME` → (NAME, nil). The database is after the
    /// last '/', so a name with '/' needs the database given.
    static func parse(_ text: String) -> (name: String, database: String?)? {
        guard text.hasPrefix(prefix) else { return nil }
        let rest = text.dropFirst(prefix.count)
        guard let slash = rest.lastIndex(of: "/") else { return (String(rest), nil) }
        return (String(rest[..<slash]), String(rest[rest.index(after: slash)...]))
    }

    /// Browses until the peer named `name` is resolved, for at most `timeoutMs`.
    /// Throws 404 when it is not found in time, 503 without Avahi.
    static func find(name: String, type: String, timeoutMs: Int) throws -> Peer {
        let found = Found()
        let browser = try PeerBrowser(type: type) { event in
            guard case .appeared(let p) = event, p.name == name else { return }
            found.monitor.locked { found.peer = p; found.monitor.broadcast() }
        }
        defer { browser.stop() }
        let deadline = MonotonicTime.now().adding(milliseconds: timeoutMs)
        return try found.monitor.locked {
            while found.peer == nil, found.monitor.wait(until: deadline) {}
            guard let found = found.peer else {
                throw CBLError(.notFound, "no peer named \"\(name)\" (\(type)) found on the network within \(timeoutMs / 1000) s (see `cblite peers`)")
            }
            return found
        }
    }

    /// The peer `find` waits for, set by the browser's thread.
    private final class Found: @unchecked Sendable {
        let monitor = Monitor()
        var peer: Peer?                 // guarded by monitor
    }

    /// Browses for `timeoutMs` and returns the peers seen then.
    static func list(type: String, timeoutMs: Int) throws -> [Peer] {
        let browser = try PeerBrowser(type: type) { _ in }
        defer { browser.stop() }
        usleep(UInt32(timeoutMs) * 1000)
        return browser.peers
    }
}
