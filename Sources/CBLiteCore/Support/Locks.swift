import Glibc

/// A plain mutex with a condition variable, for the few places that need to wait.
/// (LockedValue has no condition variable.)
public final class Monitor: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var cond = pthread_cond_t()
    private var waiters = 0              // guarded by the mutex

    public init() {
        pthread_mutex_init(&mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(&cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(&cond)
        pthread_mutex_destroy(&mutex)
    }

    @inline(__always)
    public func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body()
    }

    /// Waits (the mutex must be held, i.e. inside `locked`) until signalled or until
    /// the monotonic deadline passes; returns false on timeout.
    public func wait(until deadline: MonotonicTime?) -> Bool {
        waiters += 1
        defer { waiters -= 1 }
        guard let deadline else {
            pthread_cond_wait(&cond, &mutex)
            return true
        }
        var ts = deadline.asTimespec
        return pthread_cond_timedwait(&cond, &mutex, &ts) != ETIMEDOUT
    }

    /// Waits (inside `locked`) until signalled or `timeoutMs` passes (nil: no limit);
    /// returns false on timeout.
    @discardableResult
    public func wait(timeoutMs: Int? = nil) -> Bool {
        wait(until: timeoutMs.map { MonotonicTime.now().adding(milliseconds: $0) })
    }

    public func broadcast() { pthread_cond_broadcast(&cond) }
    /// Wakes one waiting thread.
    public func signal() { pthread_cond_signal(&cond) }

    /// How many threads wait in `wait` (tests: a broadcast from now on reaches them).
    var waiting: Int { locked { waiters } }
}

/// A value behind a pthread mutex. Used instead of Synchronization.Mutex, which
/// ThreadSanitizer does not see on Linux with this toolchain (it reports every access
/// under it as a race, and so would hide a real race behind the noise); uncontended, a
/// pthread mutex costs about the same.
public final class LockedValue<Value>: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(&mutex, nil)
    }

    deinit { pthread_mutex_destroy(&mutex) }

    @inline(__always)
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body(&value)
    }
}

/// Nanoseconds on the monotonic clock.
public struct MonotonicTime: Comparable, Sendable {
    public let nanoseconds: UInt64

    public static func now() -> MonotonicTime {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicTime(nanoseconds: UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec))
    }

    /// Milliseconds on the monotonic clock (for deadlines and idle times).
    public var milliseconds: Int64 { Int64(nanoseconds / 1_000_000) }

    public func adding(milliseconds: Int) -> MonotonicTime {
        MonotonicTime(nanoseconds: nanoseconds + UInt64(max(0, milliseconds)) * 1_000_000)
    }

    var asTimespec: timespec {
        Glibc.timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    }

    public static func < (a: MonotonicTime, b: MonotonicTime) -> Bool { a.nanoseconds < b.nanoseconds }
}

/// The calling thread's identity, comparable across threads.
public struct ThreadID: Equatable, Sendable {
    let raw: pthread_t
    public static var current: ThreadID { ThreadID(raw: pthread_self()) }
    public static func == (a: ThreadID, b: ThreadID) -> Bool { pthread_equal(a.raw, b.raw) != 0 }
}

/// Wall-clock seconds since 1970 (expiration times).
public func unixTimeNow() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec)
}

/// Wall-clock microseconds since 1970.
public func unixTimeMicrosNow() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec / 1000)
}
