import Glibc

/// A mutex with one condition variable: how a worker thread waits for the event loop
/// (request body bytes arriving). Foundation-free on purpose (DESIGN §8).
final class Condition: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var cond = pthread_cond_t()

    init() {
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

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body()
    }

    /// Waits (the mutex held by `locked`) until signalled or `timeoutMs` passes.
    func wait(timeoutMs: Int? = nil) {
        guard let timeoutMs else { pthread_cond_wait(&cond, &mutex); return }
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let ns = Int(ts.tv_nsec) + (timeoutMs % 1000) * 1_000_000
        ts.tv_sec += timeoutMs / 1000 + ns / 1_000_000_000
        ts.tv_nsec = ns % 1_000_000_000
        pthread_cond_timedwait(&cond, &mutex, &ts)
    }

    func broadcast() { pthread_cond_broadcast(&cond) }
}

enum Clock {
    /// Milliseconds on the monotonic clock.
    static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// Microseconds since the Unix epoch.
    static func unixMicros() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }
}
