/// Counts requests being handled so `stop()` can wait for them (bounded).
final class InFlightRequests: @unchecked Sendable {
    private let condition = Condition()
    private var count = 0

    func enter() { condition.locked { count += 1 } }
    func leave() { condition.locked { count -= 1; condition.broadcast() } }

    /// Waits until none is running or `timeoutMs` passes; true when none is running.
    func waitIdle(timeoutMs: Int) -> Bool {
        let deadline = Clock.nowMs() + Int64(timeoutMs)
        return condition.locked {
            while count > 0 {
                let left = deadline - Clock.nowMs()
                if left <= 0 { return false }
                condition.wait(timeoutMs: Int(left))
            }
            return true
        }
    }
}
