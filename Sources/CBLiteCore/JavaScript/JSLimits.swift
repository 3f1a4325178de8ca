/// The limits every JavaScript call runs under: a time limit per call and a cap on the
/// engine's heap. A call past either fails alone (its document, its write), never the
/// process. Defaults: CouchDB's os_process_timeout (5 s) and 64 MiB a context.
public struct JSLimits: Equatable, Sendable {
    /// Milliseconds a call may run (0: no limit).
    public var timeoutMs: UInt32
    /// Bytes a context's heap may hold, its compiled code included.
    public var memoryBytes: Int

    public init(timeoutMs: UInt32 = 5000, memoryBytes: Int = 64 << 20) {
        self.timeoutMs = timeoutMs
        self.memoryBytes = memoryBytes
    }

    public static let defaults = JSLimits()
    /// The smallest cap the API takes: an empty context holds about 100 KiB.
    public static let minimumMemoryBytes: UInt64 = 1 << 20
    /// The limits new contexts take (cbl_js_set_limits); contexts made before keep theirs.
    public static var current: JSLimits {
        get { shared.withLock { $0 } }
        set { shared.withLock { $0 = newValue } }
    }
    private static let shared = LockedValue(JSLimits.defaults)
}
