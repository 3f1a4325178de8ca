import CBLiteCore

/// The threads requests run on: made as they are needed, up to `maxThreads` — one per
/// allowed connection, so feeds waiting for changes never starve other requests — and
/// kept until shutdown. (NIOThreadPool starts all of its threads at once: with a
/// connection limit sized to the descriptor limit, hundreds of threads for every
/// listener, most of them never used.)
final class WorkerPool: @unchecked Sendable {
    private let condition = Monitor()
    private var queue: [() -> Void] = []
    private var next = 0
    private var threads: [ServiceThread] = []
    private var idle = 0
    private var stopping = false
    private let maxThreads: Int

    init(maxThreads: Int) { self.maxThreads = max(1, maxThreads) }

    var threadCount: Int { condition.locked { threads.count } }

    /// Runs `work` on a pool thread (on a thread of its own once the pool is shut down, or
    /// when the pool has none and cannot make one: never on the caller, an event loop).
    func submit(_ work: @escaping () -> Void) {
        let queued: Bool = condition.locked {
            guard !stopping else { return false }
            queue.append(work)
            if queue.count - next > idle && threads.count < maxThreads {
                if let t = try? ServiceThread({ self.run() }) {
                    threads.append(t)
                } else if threads.isEmpty {
                    queue.removeLast()
                    return false
                }
            } else {
                condition.signal()
            }
            return true
        }
        if !queued { ServiceThread.detached(work) }
    }

    /// Lets the threads finish what is queued, then joins them.
    func shutdown() {
        let all: [ServiceThread] = condition.locked {
            stopping = true
            condition.broadcast()
            return threads
        }
        for t in all { t.join() }
        condition.locked { threads = [] }
    }

    private func run() {
        while true {
            let work: (() -> Void)? = condition.locked {
                while next == queue.count && !stopping {
                    idle += 1
                    condition.wait()
                    idle -= 1
                }
                guard next < queue.count else { return nil }      // stopping, and nothing left
                let w = queue[next]
                next += 1
                if next == queue.count {
                    queue.removeAll(keepingCapacity: true)
                    next = 0
                }
                return w
            }
            guard let work else { return }
            work()
        }
    }
}
