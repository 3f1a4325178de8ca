import Synchronization

/// One idle reader connection kept beside the store's pool, outside its lock: a read takes
/// it and gives it back with one atomic operation each way, where the pool costs a lock
/// and an unlock each way on a mutex that every reader thread shares (callgrind: ~150
/// instructions a read). Readers that find it taken use the pool.
struct IdleReader: ~Copyable {
    /// A retained Connection, or nil.
    private let slot = Atomic<UnsafeMutableRawPointer?>(nil)

    init() {}

    /// The idle connection, now the caller's; nil when another reader has it.
    func take() -> Connection? {
        // Acquiring and releasing: close() stores `closed` before draining, and a reader that
        // gives its connection back after that drain must then see `closed` (Store.giveBack).
        guard let p = slot.exchange(nil, ordering: .acquiringAndReleasing) else { return nil }
        return Unmanaged<Connection>.fromOpaque(p).takeRetainedValue()
    }

    /// Keeps `conn` when the slot is empty; false (and `conn` is not kept) when it is full.
    func offer(_ conn: Connection) -> Bool {
        let p = Unmanaged.passRetained(conn).toOpaque()
        if slot.compareExchange(expected: nil, desired: p, ordering: .acquiringAndReleasing).exchanged { return true }
        Unmanaged<Connection>.fromOpaque(p).release()
        return false
    }

    /// Drops the idle connection, if any (closing the store, or swapping its file).
    func drain() { _ = take() }

    deinit { drain() }
}
