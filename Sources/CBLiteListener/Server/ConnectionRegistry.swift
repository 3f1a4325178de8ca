import CBLiteCore
import NIOCore

/// The open connections: enforces the limit, and closes them all at stop.
///
/// At the limit a new connection is not refused while another one is only waiting —
/// idle between keep-alive requests, or still sending its request head: the one that
/// has waited longest (since it was accepted or its last response ended) is closed to
/// make room. So a crowd of slow or silent clients (slowloris) cannot lock honest ones
/// out; only when every connection has a request in flight is a new one refused (503).
final class ConnectionRegistry: @unchecked Sendable {
    private struct Entry {
        let channel: Channel
        /// Waiting since then (ms, monotonic); nil while a request is in flight.
        var waitingSince: Int64?
    }

    private let lock = Monitor()
    private var entries: [ObjectIdentifier: Entry] = [:]

    /// Admits `c`, first closing the longest-waiting connection when `max` are open;
    /// false when all of them are busy.
    func admit(_ c: Channel, max: Int) -> Bool {
        let now = MonotonicTime.now().milliseconds
        let (admitted, shed): (Bool, Channel?) = lock.locked {
            var shed: Channel?
            if entries.count >= max {
                var oldest: (key: ObjectIdentifier, since: Int64)?
                for (key, e) in entries {
                    if let since = e.waitingSince, since < oldest?.since ?? .max { oldest = (key, since) }
                }
                guard let oldest else { return (false, nil) }
                shed = entries.removeValue(forKey: oldest.key)?.channel
            }
            entries[ObjectIdentifier(c)] = Entry(channel: c, waitingSince: now)
            return (true, shed)
        }
        shed?.close(promise: nil)
        return admitted
    }

    /// A request head arrived: `c` is not to be shed until its response ends.
    func markBusy(_ c: Channel) { lock.locked { entries[ObjectIdentifier(c)]?.waitingSince = nil } }

    /// `c`'s response ended: it waits for its next request from now on.
    func markWaiting(_ c: Channel) {
        let now = MonotonicTime.now().milliseconds
        lock.locked { entries[ObjectIdentifier(c)]?.waitingSince = now }
    }

    func remove(_ c: Channel) { lock.locked { _ = entries.removeValue(forKey: ObjectIdentifier(c)) } }

    var count: Int { lock.locked { entries.count } }

    func closeAll() {
        let all = lock.locked { entries.values.map(\.channel) }
        for c in all { try? c.close().wait() }
    }
}
