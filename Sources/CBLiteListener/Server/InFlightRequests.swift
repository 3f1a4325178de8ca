import CBLiteCore

/// Counts requests being handled so `stop()` can wait for them (bounded).
final class InFlightRequests: @unchecked Sendable {
    private let condition = Monitor()
    private var count = 0

    func enter() { condition.locked { count += 1 } }
    func leave() { condition.locked { count -= 1; condition.broadcast() } }

    /// Waits until none is running or `timeoutMs` passes; true when none is running.
    func waitIdle(timeoutMs: Int) -> Bool {
        let deadline = MonotonicTime.now().milliseconds + Int64(timeoutMs)
        return condition.locked {
            while count > 0 {
                let left = deadline - MonotonicTime.now().milliseconds
                if left <= 0 { return false }
                condition.wait(timeoutMs: Int(left))
            }
            return true
        }
    }
}

/// The bodies and cancellation flags of requests being handled, so `stop()` can wake
/// every worker still waiting on a client (it must not wait forever on one).
final class ActiveRequests: @unchecked Sendable {
    private let condition = Monitor()
    private var requests: [ObjectIdentifier: (RequestBody, Cancellation)] = [:]

    func add(id: ObjectIdentifier, body: RequestBody, cancellation: Cancellation) {
        condition.locked { requests[id] = (body, cancellation) }
    }

    func remove(id: ObjectIdentifier) { condition.locked { _ = requests.removeValue(forKey: id) } }

    /// Ends the feeds waiting for changes: their responses close normally within a second.
    func cancelFeeds() {
        let all = condition.locked { Array(requests.values) }
        for (_, cancellation) in all where cancellation.isFeed { cancellation.cancel() }
    }

    func abortAll() {
        let all = condition.locked { Array(requests.values) }
        for (body, cancellation) in all {
            body.fail(.connectionClosed)
            cancellation.cancel()
        }
    }
}
