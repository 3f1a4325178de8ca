import CBLiteCore
@testable import CBLiteListener
import XCTest

final class WorkerPoolTests: XCTestCase {
    /// Threads are made as work needs them, never more than allowed; all work runs, and
    /// what is queued at shutdown still runs before it returns.
    func testThreadsAreMadeOnDemandUpToTheLimit() {
        let pool = WorkerPool(maxThreads: 3)
        XCTAssertEqual(pool.threadCount, 0)
        let gate = Monitor()
        var open = false, done = 0
        for _ in 0..<10 {
            pool.submit {
                gate.locked {
                    while !open { gate.wait() }
                    done += 1
                }
            }
        }
        XCTAssertEqual(pool.threadCount, 3)                 // 10 blocked jobs, 3 threads
        gate.locked { open = true; gate.broadcast() }
        pool.shutdown()
        XCTAssertEqual(gate.locked { done }, 10)
        XCTAssertEqual(pool.threadCount, 0)
        let ran = Monitor()
        var late = false
        pool.submit { ran.locked { late = true; ran.broadcast() } }    // after shutdown: on a thread of its own
        ran.locked { while !late { ran.wait(timeoutMs: 5000) } }
        XCTAssertTrue(late)
    }

    /// One job at a time reuses the one thread made for the first.
    func testSequentialWorkReusesAThread() {
        let pool = WorkerPool(maxThreads: 8)
        let m = Monitor()
        var count = 0
        for i in 1...20 {
            pool.submit { m.locked { count += 1; m.broadcast() } }
            m.locked { while count < i { m.wait() } }
            usleep(2000)                                    // the thread is back waiting
        }
        XCTAssertLessThanOrEqual(pool.threadCount, 2)
        pool.shutdown()
    }
}
