import CBLiteCore

/// The rule that cuts off a client sending its request body too slowly (a slow-body
/// attack holds a connection and a worker for as long as each byte comes before the idle
/// timeout): the body may take `graceMs`, plus one second for every `minBytesPerSecond`
/// bytes that arrived — Apache's mod_reqtimeout `body=20,MinRate=500` rule. The time the
/// listener itself stopped reading (the worker had not drained the body) is not the
/// client's: `restart` begins the count again from then.
struct BodyRateGuard {
    let graceMs: Int
    let minBytesPerSecond: Int
    private var startMs: Int64
    private var bytesSinceStart = 0

    init(graceMs: Int, minBytesPerSecond: Int, nowMs: Int64) {
        self.graceMs = graceMs
        self.minBytesPerSecond = minBytesPerSecond
        self.startMs = nowMs
    }

    mutating func received(_ count: Int) { bytesSinceStart += count }

    /// Counts from `nowMs` again, as if the body began there.
    mutating func restart(nowMs: Int64) {
        startMs = nowMs
        bytesSinceStart = 0
    }

    /// When the body must have made more progress: past it, with no more bytes, the
    /// client is too slow.
    var deadlineMs: Int64 {
        let earned = Int64(bytesSinceStart) * 1000 / Int64(max(1, minBytesPerSecond))
        return startMs + Int64(graceMs) + earned
    }
}
