import CAvahiShim
import CBLiteCore

/// Browses for DNS-SD services of a type (through Avahi) until `stop()`, reporting peers as
/// they appear, change and go. Avahi reports a service once per interface and protocol it
/// is seen on; the browser folds those into one peer per name, which disappears when the
/// last of them goes. Events come one at a time on Avahi's thread; a callback may call
/// `stop()` (no event follows).
public final class PeerBrowser: @unchecked Sendable {
    public let type: String
    private let onEvent: @Sendable (PeerEvent) -> Void
    private let sightings = Sightings()
    private var service: AvahiService?
    private let lock = Monitor()

    /// Throws 400 for an invalid type, 503 when Avahi (its library or daemon) is not there.
    public init(type: String = ServiceType.couchDB, onEvent: @escaping @Sendable (PeerEvent) -> Void) throws {
        try ServiceType.validate(type)
        self.type = type
        self.onEvent = onEvent
        let s = try AvahiService.browse(type: type) { [weak self] event in self?.handle(event) }
        lock.locked { service = s }
    }

    /// The peers seen now.
    public var peers: [Peer] { sightings.peers }

    /// Stops browsing; returns when no callback runs any more (unless called from one). Idempotent.
    public func stop() {
        let s: AvahiService? = lock.locked { defer { service = nil }; return service }
        s?.stop()
    }

    deinit { stop() }

    private func handle(_ e: AvahiService.Event) {
        let event: PeerEvent?
        switch e.kind {
        case CAVAHI_FOUND: event = sightings.found(e)
        case CAVAHI_REMOVED: event = sightings.removed(e)
        case CAVAHI_FAILED: event = .failed(e.message)
        default: event = nil
        }
        if let event { onEvent(event) }
    }
}

/// The peers seen, each with the places (interface, protocol) it was resolved on.
private final class Sightings: @unchecked Sendable {
    private struct Key: Hashable { let name, type, domain: String }
    private struct Place: Hashable { let interface: Int; let ipv6: Bool }
    private struct Seen { var places: [Place: AvahiService.Event] }
    private let state = LockedValue([Key: Seen]())

    var peers: [Peer] {
        state.withLock { s in s.keys.sorted { $0.name < $1.name }.compactMap { Self.peer(s[$0]!) } }
    }

    func found(_ e: AvahiService.Event) -> PeerEvent? {
        let key = Key(name: e.name, type: e.type, domain: e.domain)
        return state.withLock { s in
            let before = s[key].flatMap(Self.peer)
            s[key, default: Seen(places: [:])].places[Place(interface: e.interface, ipv6: e.ipv6)] = e
            guard let after = Self.peer(s[key]!) else { return nil }
            if before == nil { return .appeared(after) }
            return before == after ? nil : .updated(after)
        }
    }

    func removed(_ e: AvahiService.Event) -> PeerEvent? {
        let key = Key(name: e.name, type: e.type, domain: e.domain)
        return state.withLock { s in
            guard var seen = s[key] else { return nil }
            seen.places[Place(interface: e.interface, ipv6: e.ipv6)] = nil
            s[key] = seen.places.isEmpty ? nil : seen
            return seen.places.isEmpty ? .disappeared(name: e.name, type: e.type, domain: e.domain) : nil
        }
    }

    /// One peer from its resolutions: host, port and TXT of the first IPv4 one (else the
    /// first IPv6 one), by interface; every distinct address, IPv4 first.
    private static func peer(_ seen: Seen) -> Peer? {
        let all = seen.places.sorted { ($0.key.ipv6 ? 1 : 0, $0.key.interface) < ($1.key.ipv6 ? 1 : 0, $1.key.interface) }.map(\.value)
        guard let first = all.first else { return nil }
        var addresses: [String] = []
        for a in all.map(\.address) where !addresses.contains(a) { addresses.append(a) }
        return Peer(name: first.name, type: first.type, domain: first.domain, host: first.host, port: first.port,
                    addresses: addresses, txt: ServiceTXT(parsing: first.txt))
    }
}
