import CAvahiShim
import CBLiteCore
import Glibc

/// One Avahi service (an advertisement or a browse) through CAvahiShim, its events handed
/// to `onEvent` on Avahi's poll thread. `stop()` returns when no event runs any more
/// (except from inside an event, see cavahi_stop).
final class AvahiService: @unchecked Sendable {
    /// An event of the shim, copied out of its C structure.
    struct Event {
        var kind: cavahi_event_kind
        var name = "", type = "", domain = "", host = "", address = ""
        var port = 0, interface = 0, ipv6 = false
        var txt: [String] = []
        var message = ""
    }

    private let onEvent: (Event) -> Void
    private let handle = LockedValue<OpaquePointer?>(nil)

    private init(onEvent: @escaping (Event) -> Void) { self.onEvent = onEvent }

    /// Advertises `name` of `type` on `port`. Throws 503 with Avahi's reason when the library
    /// or the daemon is missing, 400 when Avahi refuses the service.
    static func publish(name: String, type: String, port: Int, txt: [String], onEvent: @escaping (Event) -> Void) throws -> AvahiService {
        let service = AvahiService(onEvent: onEvent)
        try service.start { context, out, err, len in
            let items = txt.map { strdup($0) }
            defer { items.forEach { free($0) } }
            return items.map { UnsafePointer($0) }.withUnsafeBufferPointer { p in
                cavahi_publish(name, type, UInt16(port), p.baseAddress, Int32(p.count), AvahiService.trampoline, context, out, err, len)
            }
        }
        return service
    }

    /// Browses for services of `type`. Errors as `publish`.
    static func browse(type: String, onEvent: @escaping (Event) -> Void) throws -> AvahiService {
        let service = AvahiService(onEvent: onEvent)
        try service.start { context, out, err, len in cavahi_browse(type, AvahiService.trampoline, context, out, err, len) }
        return service
    }

    private func start(_ open: (UnsafeMutableRawPointer, UnsafeMutablePointer<OpaquePointer?>, UnsafeMutablePointer<CChar>, Int) -> cavahi_status) throws {
        var message = [CChar](repeating: 0, count: 512)
        var out: OpaquePointer?
        // Unretained: the shim delivers nothing after cavahi_stop, which deinit calls at the latest.
        let st = message.withUnsafeMutableBufferPointer { m in
            open(Unmanaged.passUnretained(self).toOpaque(), &out, m.baseAddress!, m.count)
        }
        guard st == CAVAHI_OK else {
            let text = String(cString: message)
            throw CBLError(st == CAVAHI_ERROR ? .badRequest : .busy, text)
        }
        handle.withLock { $0 = out }
    }

    /// Replaces an advertisement's TXT items (nothing once stopped). Throws 400 when Avahi refuses them.
    func updateTXT(_ txt: [String]) throws {
        // Under the handle's lock: a concurrent stop waits until the update is done.
        try handle.withLock { h in
            guard let h else { return }
            var message = [CChar](repeating: 0, count: 512)
            let items = txt.map { strdup($0) }
            defer { items.forEach { free($0) } }
            let st = items.map { UnsafePointer($0) }.withUnsafeBufferPointer { p in
                cavahi_update_txt(h, p.baseAddress, Int32(p.count), &message, message.count)
            }
            guard st == CAVAHI_OK else {
                throw CBLError(.badRequest, String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
    }

    /// Withdraws the advertisement or stops browsing. Idempotent.
    func stop() {
        let h: OpaquePointer? = handle.withLock { h in defer { h = nil }; return h }
        if let h { cavahi_stop(h) }
    }

    deinit { stop() }

    private static let trampoline: cavahi_event_fn = { context, event in
        guard let context, let e = event?.pointee else { return }
        let service = Unmanaged<AvahiService>.fromOpaque(context).takeUnretainedValue()
        func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
        var copy = Event(kind: e.kind)
        copy.name = text(e.name); copy.type = text(e.type); copy.domain = text(e.domain)
        copy.host = text(e.host); copy.address = text(e.address); copy.message = text(e.message)
        copy.port = Int(e.port); copy.interface = Int(e.interface); copy.ipv6 = e.protocol == 1
        if let items = e.txt { copy.txt = (0..<Int(e.txt_count)).map { text(items[$0]) } }
        service.onEvent(copy)
    }
}
