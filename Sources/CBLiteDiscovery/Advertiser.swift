import CAvahiShim
import CBLiteCore

/// A service advertised with DNS-SD (through Avahi) until `stop()`: a listener's, so that
/// peers browsing for its type find its name, port and TXT metadata. A name another host
/// already uses is replaced as DNS-SD prescribes ("name #2", probed again); `name` follows.
public final class Advertiser: @unchecked Sendable {
    public enum State: Equatable, Sendable {
        case registering
        case established
        case failed(String)
    }

    public let type: String
    public let port: Int
    private var currentTXT: [String]
    private let monitor = Monitor()
    private var currentName: String
    private var currentState = State.registering
    private var service: AvahiService?

    /// Starts advertising. Throws 400 for an invalid name or type, 503 when Avahi (its
    /// library or its daemon) is not there, with a message saying which.
    public init(name: String, type: String = ServiceType.couchDB, port: Int, txt: [String]) throws {
        try ServiceType.validate(name: name)
        try ServiceType.validate(type)
        self.type = type
        self.port = port
        currentTXT = txt
        currentName = name
        // The service holds the advertiser weakly: the advertiser's deinit stops it.
        service = try AvahiService.publish(name: name, type: type, port: port, txt: txt) { [weak self] event in
            self?.handle(event)
        }
        if case .failed(let message) = state {
            stop()
            throw CBLError(.badRequest, message)
        }
    }

    /// The advertised name (another one after a conflict).
    public var name: String { monitor.locked { currentName } }

    public var state: State { monitor.locked { currentState } }

    /// The TXT items advertised.
    public var txt: [String] { monitor.locked { currentTXT } }

    /// Advertises other TXT items from now on (peers browsing see the service "updated").
    /// Throws 400 when Avahi refuses them.
    public func update(txt: [String]) throws {
        let s: AvahiService? = monitor.locked { service }
        try s?.updateTXT(txt)
        monitor.locked { currentTXT = txt }
    }

    /// Waits up to `timeoutMs` until the advertisement is established or has failed; returns the state.
    @discardableResult
    public func waitSettled(timeoutMs: Int) -> State {
        let deadline = MonotonicTime.now().adding(milliseconds: timeoutMs)
        return monitor.locked {
            while currentState == .registering, monitor.wait(until: deadline) {}
            return currentState
        }
    }

    /// Withdraws the advertisement (it goes from the network at once: Avahi sends goodbyes). Idempotent.
    public func stop() {
        let s: AvahiService? = monitor.locked { defer { service = nil }; return service }
        s?.stop()
    }

    deinit { stop() }

    private func handle(_ event: AvahiService.Event) {
        monitor.locked {
            switch event.kind {
            case CAVAHI_PUBLISHED: currentName = event.name; currentState = .established
            case CAVAHI_RENAMED: currentName = event.name; currentState = .registering
            case CAVAHI_FAILED: currentState = .failed(event.message)
            default: break
            }
            monitor.broadcast()
        }
    }
}
