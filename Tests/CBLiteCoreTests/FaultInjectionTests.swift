import XCTest
import Glibc
@testable import CBLiteCore

#if CBLITE_FAULT_INJECTION
/// Every write point of FaultWorkload failed in turn, by the fault injector (SQLite's VFS
/// shim and the attachment store's FaultPoint, one counter): the N-th write, sync,
/// truncate, rename or directory creation fails as a full disk (ENOSPC, and every later
/// one too until space is back) or as a transient I/O error (EIO, that one only), for N
/// over all of them. Each time: the failures are 507 (disk full) or 500 (I/O error) and
/// nothing else, no acknowledged write is lost, the integrity check finds nothing, the
/// same handle writes again once the fault is gone, and so does the reopened file.
final class FaultInjectionTests: CBLTestCase {
    override func tearDown() {
        FaultInjector.disarm()
        super.tearDown()
    }

    /// The fault points the workload passes (counted with nothing failing).
    private func countPoints(options: String?, cachePages: Int?) throws -> Int {
        let db = try open("count", options: options)
        try limitCache(db, cachePages)
        FaultInjector.arm(failAt: 0, errno: 0, sticky: false)
        let w = FaultWorkload(db)
        w.run()
        let n = FaultInjector.count
        FaultInjector.disarm()
        XCTAssertEqual(w.ledger.failures.map { "\($0.step): \($0.error)" }, [], "the workload without faults")
        XCTAssertEqual(FaultWorkload.problems(db, w.ledger), [])
        try db.close()
        return n
    }

    /// Runs the sweep; returns (points swept, points whose fault surfaced as an error).
    @discardableResult
    /// `cachePages`: the writer's page cache, in pages (nil: as opened).
    private func sweep(errno code: Int32, sticky: Bool, expected: Status, options: String? = nil, cachePages: Int? = nil,
                       file: StaticString = #filePath, line: UInt = #line) throws -> (swept: Int, surfaced: Int) {
        let points = try countPoints(options: options, cachePages: cachePages)
        XCTAssertGreaterThan(points, 40, "the workload's write points", file: file, line: line)
        var surfaced = 0
        for n in 1...points {
            let name = "n\(n)"
            let db = try open(name, options: options)
            try limitCache(db, cachePages)
            FaultInjector.arm(failAt: n, errno: code, sticky: sticky)
            let w = FaultWorkload(db)
            w.run()
            let injected = FaultInjector.injected
            FaultInjector.disarm()
            let at = "fault at point \(n) of \(points) (\(String(cString: strerror(code))), \(sticky ? "sticky" : "once"))"
            XCTAssertGreaterThanOrEqual(injected, 1, at, file: file, line: line)
            if !w.ledger.failures.isEmpty { surfaced += 1 }
            for f in w.ledger.failures where f.error.status != expected {
                XCTFail("\(at): \(f.step) failed with \(f.error), expected \(expected.rawValue)", file: file, line: line)
            }
            XCTAssertEqual(FaultWorkload.problems(db, w.ledger), [], at, file: file, line: line)
            // Space is back: the same handle writes again, no reopening.
            if let e = w.writeAgain() { XCTFail("\(at): writing again failed: \(e)", file: file, line: line) }
            XCTAssertEqual(FaultWorkload.problems(db, w.ledger), [], "\(at), after writing again", file: file, line: line)
            try db.close()
            let reopened = try open(name, options: options)
            XCTAssertEqual(FaultWorkload.problems(reopened, w.ledger), [], "\(at), reopened", file: file, line: line)
            try reopened.delete()
        }
        print("fault sweep (\(String(cString: strerror(code))), \(sticky ? "sticky" : "once")\(options == nil ? "" : ", " + options!)"
              + "\(cachePages.map { ", a page cache of \($0) pages" } ?? "")): "
              + "\(points) fault points swept, \(points) survived, \(surfaced) surfaced as an error")
        return (points, surfaced)
    }

    private func limitCache(_ db: Database, _ pages: Int?) throws {
        guard let pages else { return }
        try db.store.exclusive { conn in try conn.exec("PRAGMA cache_size = \(pages)") }
    }

    func testDiskFullAtEveryWritePoint() throws {
        try sweep(errno: ENOSPC, sticky: true, expected: .insufficientStorage)
    }

    func testIOErrorAtEveryWritePoint() throws {
        try sweep(errno: EIO, sticky: false, expected: .internalError)
    }

    /// An encrypted database: other attachment files (sealed chunks), pages through the codec.
    func testDiskFullAtEveryWritePointEncrypted() throws {
        try sweep(errno: ENOSPC, sticky: true, expected: .insufficientStorage,
                  options: #"{"encryption_key":{"raw_hex":"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"}}"#)
    }

    /// The checkpoint copying the WAL into the database file, failed at each of its write
    /// points (and at each of the commit's before it) with the disk staying full: the
    /// commit is acknowledged or fails with 507, a failed copy is only counted (the commit
    /// that ran it was acknowledged already), nothing acknowledged is lost, and once space
    /// is back the next copy empties the log.
    func testDiskFullDuringTheWALCheckpoint() throws {
        var sweptPoints = 0
        for n in 0... {
            let path = dir + "/cp\(n).sqlite3"
            let writer = try Connection(path: path, create: true, busyTimeoutMs: 5000)
            try writer.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE t(x BLOB)")
            let cp = WALCheckpointer(label: "test", threshold: 20) { try Connection(path: path, create: false, busyTimeoutMs: 5000) }
            cp.attach(to: writer)
            cp.stop()                                           // commits copy themselves: one thread, a fixed order
            try FaultInjectionTests.insert(writer, rows: 15)
            FaultInjector.arm(failAt: n, errno: ENOSPC, sticky: true)     // n = 0: count the points
            var acked = 15
            do {
                try FaultInjectionTests.insert(writer, rows: 15)
                acked += 15
            } catch let e as CBLError {
                XCTAssertEqual(e.status, .insufficientStorage, "point \(n): \(e)")
                try? writer.exec("ROLLBACK")
            }
            let points = FaultInjector.count
            FaultInjector.disarm()
            if n == 0 {
                XCTAssertEqual(cp.counts.failures, 0)
                XCTAssertGreaterThan(cp.counts.inline, 0, "the second commit ran a checkpoint")
                sweptPoints = points
            } else {
                XCTAssertEqual(cp.counts.failures, acked == 30 ? 1 : 0, "point \(n): a failed copy is counted")
            }
            XCTAssertEqual(try writer.queryInt("SELECT count(*) FROM t"), Int64(acked), "point \(n)")
            XCTAssertEqual(try writer.queryString("PRAGMA integrity_check"), "ok", "point \(n)")
            // Space back: the next commit's copy succeeds.
            let before = cp.counts
            try FaultInjectionTests.insert(writer, rows: 25)
            try writer.exec("INSERT INTO t VALUES (1)")
            XCTAssertGreaterThan(cp.counts.inline, before.inline, "point \(n)")
            XCTAssertEqual(cp.counts.failures, before.failures, "point \(n)")
            XCTAssertEqual(try writer.queryInt("SELECT count(*) FROM t"), Int64(acked + 26), "point \(n)")
            writer.close()
            let reopened = try Connection(path: path, create: false, busyTimeoutMs: 5000)
            XCTAssertEqual(try reopened.queryInt("SELECT count(*) FROM t"), Int64(acked + 26), "point \(n), reopened")
            XCTAssertEqual(try reopened.queryString("PRAGMA integrity_check"), "ok", "point \(n), reopened")
            reopened.close()
            if n > 0 && n >= sweptPoints { break }
        }
        XCTAssertGreaterThan(sweptPoints, 10)
        print("fault sweep (WAL checkpoint, No space left on device, sticky): \(sweptPoints) fault points swept, \(sweptPoints) survived")
    }

    /// One transaction of `rows` rows of about 3,000 bytes.
    private static func insert(_ c: Connection, rows: Int) throws {
        try c.exec("BEGIN; WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < \(rows)) "
                   + "INSERT INTO t SELECT randomblob(3000) FROM s; COMMIT")
    }

    /// With a page cache of two pages SQLite writes pages to the WAL in the middle of
    /// transactions too, where a failure makes it roll the whole transaction back.
    func testIOErrorAtEveryWritePointWithATinyPageCache() throws {
        try sweep(errno: EIO, sticky: false, expected: .internalError, cachePages: 2)
    }

    func testDiskFullAtEveryWritePointWithATinyPageCache() throws {
        try sweep(errno: ENOSPC, sticky: true, expected: .insufficientStorage, cachePages: 2)
    }

    /// A page cache of a few pages: SQLite writes pages out in the middle of transactions,
    /// where a failure makes it roll the whole transaction back by itself. The engine's
    /// transaction must then fail as a whole (its commit included), never commit the rest.
    func testIOErrorWithPagesWrittenMidTransaction() throws {
        let db = try open()
        try db.store.exclusive { conn in try conn.exec("PRAGMA cache_size = 2") }
        let c = try db.defaultCollection()
        let big = String(repeating: "x", count: 3000)
        _ = try c.put(docID: "kept", json: #"{"n":0}"#, parent: nil)
        FaultInjector.arm(failAt: 3, errno: EIO, sticky: false)
        try db.begin()
        var failed: CBLError?
        for i in 0..<40 {
            do { _ = try c.put(docID: "t\(i)", json: #"{"s":"\#(big)"}"#, parent: nil) } catch let e as CBLError { failed = failed ?? e }
        }
        XCTAssertGreaterThanOrEqual(FaultInjector.injected, 1)
        FaultInjector.disarm()
        XCTAssertEqual(failed?.status, .internalError)
        XCTAssertThrowsError(try db.commit(), "a commit after SQLite rolled the transaction back") { e in
            XCTAssertEqual((e as? CBLError)?.status, .internalError)
        }
        XCTAssertEqual(db.store.transactionDepth, 0)
        XCTAssertEqual(try c.count, 1, "nothing of the lost transaction committed")
        assertSound(db)
        _ = try c.put(docID: "after", json: #"{"n":1}"#, parent: nil)
        XCTAssertEqual(try c.count, 2)
        assertSound(db)
    }
}
#endif
