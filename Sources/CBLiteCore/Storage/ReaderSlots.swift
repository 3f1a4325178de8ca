import Glibc
import Synchronization

/// Idle reader connections kept beside the store's pool, one slot per thread number, each
/// taken and given back with one atomic operation, outside the pool's lock.
///
/// A thread reads on the connection it used last: two reader threads never hand one
/// connection (its page cache, its statements) back and forth between cores, and never
/// write the same atomic line. With a single shared slot, two busy readers swapped
/// connections on nearly every read and reached 1.57x one reader where SQLite with a
/// connection per thread reached 1.99x (bench/RESULTS.md, "Concurrency").
/// Threads whose numbers share a slot, and reads nested on one thread, use the pool.
struct ReaderSlots: ~Copyable {
    private typealias Slots = InlineArray<8, Slot>
    static let count = Slots.count
    private let slots: Slots

    /// A retained Connection, or nil, alone on its cache line: two threads' slots side by
    /// side on one line made every take and give-back of one thread invalidate the other's.
    private struct Slot: ~Copyable {
        private let before: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
        let connection = Atomic<UnsafeMutableRawPointer?>(nil)
        private let after: (Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0)
    }

    init() {
        slots = Slots { _ in Slot() }
    }

    /// The calling thread's slot.
    private var mine: Int { ThreadNumber.current & (ReaderSlots.count - 1) }

    /// The calling thread's idle connection, now the caller's; nil when its slot is empty.
    func take() -> Connection? { take(at: mine) }

    /// An idle connection from any slot (another thread's): only before opening a new
    /// connection, so that threads reading one after another share connections instead
    /// of each keeping its own.
    func takeAny() -> Connection? {
        for i in 0..<ReaderSlots.count { if let c = take(at: i) { return c } }
        return nil
    }

    private func take(at i: Int) -> Connection? {
        // Acquiring and releasing: close() stores `closed` before draining, and a reader that
        // gives its connection back after that drain must then see `closed` (Store.giveBack).
        guard let p = slots[i].connection.exchange(nil, ordering: .acquiringAndReleasing) else { return nil }
        return Unmanaged<Connection>.fromOpaque(p).takeRetainedValue()
    }

    /// Keeps `conn` in the calling thread's slot when it is empty; false (and `conn` is
    /// not kept) when it is full.
    func offer(_ conn: Connection) -> Bool {
        let p = Unmanaged.passRetained(conn).toOpaque()
        if slots[mine].connection.compareExchange(expected: nil, desired: p, ordering: .acquiringAndReleasing).exchanged {
            return true
        }
        Unmanaged<Connection>.fromOpaque(p).release()
        return false
    }

    /// Drops the calling thread's idle connection, if any.
    func drainMine() { _ = take() }

    /// Drops every idle connection (closing the store, or swapping its file).
    func drain() { while takeAny() != nil {} }

    deinit { drain() }
}

/// A small number for the calling thread (1, 2, 3, ... in the order threads first ask),
/// kept in thread-specific data: the reader slot's index.
enum ThreadNumber {
    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        precondition(pthread_key_create(&k, nil) == 0, "pthread_key_create failed")
        return k
    }()
    private static let next = Atomic<Int>(1)

    static var current: Int {
        if let p = pthread_getspecific(key) { return Int(bitPattern: p) }
        let n = next.wrappingAdd(1, ordering: .relaxed).oldValue
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: n))
        return n
    }
}
