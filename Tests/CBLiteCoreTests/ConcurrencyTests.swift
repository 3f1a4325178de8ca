import XCTest
import Foundation
@testable import CBLiteCore

final class ConcurrencyTests: CBLTestCase {
    private static func increment(_ c: Collection, _ errors: Locked<[String]>) {
        do {
            _ = try c.update(docID: "counter") { cur in
                guard let cur else { return #"{"n":1}"# }
                guard case .object(let o) = try JSONParser.parse(cur), let n = o["n"]?.intValue else {
                    throw CBLError(.internalError, "bad counter \(cur)")
                }
                return #"{"n":\#(n + 1)}"#
            }
        } catch {
            errors.with { $0.append("\(error)") }
        }
    }

    func testCounterOnOneHandle() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let errors = Locked<[String]>([])
        let threads = 8, perThread = 25
        runOnThreads(threads) { _ in
            for _ in 0..<perThread { ConcurrencyTests.increment(c, errors) }
        }
        XCTAssertEqual(errors.get(), [])
        let d = try c.doc("counter")
        XCTAssertEqual(d["n"], .int(Int64(threads * perThread)))
        XCTAssertEqual(RevID(d["_rev"]!.stringValue!)?.generation, threads * perThread, "one revision per increment")
        XCTAssertEqual(try c.conflicts(docID: "counter").count, 1, "no branches")
        XCTAssertEqual(try c.lastSequence, Int64(threads * perThread))
        assertSound(db)
    }

    func testCounterOnTwoHandles() throws {
        let h1 = try open()
        let h2 = try open()
        let c1 = try h1.defaultCollection()
        let c2 = try h2.defaultCollection()
        let errors = Locked<[String]>([])
        let rec = ChangeRecorder()
        let token = try c1.addChangeObserver(rec.callback)
        defer { token.remove() }
        let threads = 8, perThread = 20
        runOnThreads(threads) { i in
            let c = i % 2 == 0 ? c1 : c2
            for _ in 0..<perThread { ConcurrencyTests.increment(c, errors) }
        }
        XCTAssertEqual(errors.get(), [])
        XCTAssertEqual(try c1.doc("counter")["n"], .int(Int64(threads * perThread)))
        XCTAssertEqual(try c2.doc("counter")["n"], .int(Int64(threads * perThread)))
        try h1.waitForNotifications(timeoutMs: 30_000)
        let seqs = rec.events.map(\.sequence)
        XCTAssertEqual(seqs.count, threads * perThread, "every commit notified once, from either handle")
        XCTAssertEqual(seqs, seqs.sorted(), "in commit order")
        assertSound(h1)
    }

    func testReadersConcurrentWithAWriter() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "x", json: #"{"n":0}"#, parent: nil)
        let writes = 150
        let done = Locked(false)
        let errors = Locked<[String]>([])
        let reads = Locked(0)
        runOnThreads(5) { i in
            if i == 0 {
                var rev = try! c.doc("x")["_rev"]!.stringValue!
                for n in 1...writes {
                    do { rev = try c.put(docID: "x", json: #"{"n":\#(n)}"#, parent: rev).revID }
                    catch { errors.with { $0.append("write \(n): \(error)") }; break }
                    if n % 10 == 0 { _ = try? c.put(docID: "other\(n)", json: "{}", parent: nil) }
                }
                done.set(true)
            } else {
                var last: Int64 = -1
                var lastSeq: Int64 = -1
                while true {
                    let finished = done.get()
                    do {
                        let d = try c.doc("x")
                        guard let n = d["n"]?.intValue, let rev = RevID(d["_rev"]?.stringValue ?? "") else {
                            errors.with { $0.append("bad read \(d)") }; break
                        }
                        if n < last { errors.with { $0.append("went backwards: \(n) after \(last)") } }
                        if rev.generation != Int(n) + 1 { errors.with { $0.append("body \(n) with revision \(rev)") } }
                        last = n
                        let seq = try c.lastSequence
                        if seq < lastSeq { errors.with { $0.append("sequence went backwards") } }
                        lastSeq = seq
                        _ = try c.changes(since: max(0, seq - 5))
                        reads.with { $0 += 1 }
                    } catch {
                        errors.with { $0.append("read: \(error)") }
                        break
                    }
                    if finished { break }
                }
            }
        }
        XCTAssertEqual(errors.get(), [])
        XCTAssertGreaterThan(reads.get(), 0)
        XCTAssertEqual(try c.doc("x")["n"], .int(Int64(writes)))
        assertSound(db)
    }

    /// A Store of its own, with no Database on it: no expiration timer thread whose
    /// reads would take connections while a test counts them.
    private func bareStore() throws -> Store {
        let bundle = dir + "/bare.cblite2"
        try FileSystem.createDirectory(bundle)
        return try Store(bundlePath: bundle, filePath: bundle + "/db.sqlite3", create: true, busyTimeoutMs: 5000, key: nil)
    }

    /// Two reader threads busy at once each keep reading on a connection of their own
    /// (one per thread slot): a connection handed back and forth between threads on two
    /// cores carries its page cache and statements with it.
    func testReaderThreadsKeepTheirOwnConnections() throws {
        let store = try bareStore()
        defer { store.close() }
        let used = Locked<[Int: Set<ObjectIdentifier>]>([:])
        let slots = Locked<[Int]>([])
        let inside = DispatchGroup()
        for _ in 0..<2 { inside.enter() }
        runOnThreads(2) { t in
            slots.with { $0.append(ThreadNumber.current & (ReaderSlots.count - 1)) }
            do {
                // Both threads inside a read at once: two connections exist from here on.
                try store.read { _ in
                    inside.leave()
                    inside.wait()
                }
                for _ in 0..<300 {
                    let conn = try store.read { conn in
                        _ = try conn.queryInt("SELECT count(*) FROM sqlite_master")
                        return ObjectIdentifier(conn)
                    }
                    used.with { $0[t, default: []].insert(conn) }
                }
            } catch {
                XCTFail("\(error)")
            }
        }
        let s = slots.get()
        try XCTSkipIf(s[0] == s[1], "the two threads' numbers share a slot in this process (\(s))")
        let u = used.get()
        XCTAssertEqual(u[0]?.count, 1, "thread 0 read on \(u[0]?.count ?? 0) connections")
        XCTAssertEqual(u[1]?.count, 1, "thread 1 read on \(u[1]?.count ?? 0) connections")
        XCTAssertNotEqual(u[0], u[1], "the threads shared a connection")
    }

    /// Threads that read one after another share one connection: a thread whose slot is
    /// empty takes another's idle connection before opening one.
    func testThreadsReadingInTurnShareOneConnection() throws {
        let store = try bareStore()
        defer { store.close() }
        var seen = Set<ObjectIdentifier>()
        for _ in 0..<(ReaderSlots.count + 2) {
            let conn = Locked<ObjectIdentifier?>(nil)
            runOnThreads(1) { _ in
                conn.set(try? store.read { conn in ObjectIdentifier(conn) })
            }
            seen.insert(try XCTUnwrap(conn.get()))
        }
        XCTAssertEqual(seen.count, 1, "sequential threads opened \(seen.count) connections")
    }

    /// Readers take a connection from the idle slot or the pool and give it back; a close
    /// racing with them must leave no connection open (the WAL is removed only when the
    /// last one closes), and reads after it fail with 400.
    func testCloseDuringReadsLeavesNoConnectionOpen() throws {
        for round in 0..<5 {
            let db = try open("race\(round)")
            let c = try db.defaultCollection()
            for i in 0..<20 { _ = try c.put(docID: "d\(i)", json: #"{"i":\#(i)}"#, parent: nil) }
            let path = db.store.filePath
            let errors = Locked<[String]>([])
            let closedSeen = Locked(0)
            runOnThreads(4) { t in
                for n in 0..<300 {
                    if t == 0 && n == 100 + round * 20 {
                        do { try db.close() } catch { errors.with { $0.append("close: \(error)") } }
                    }
                    do {
                        _ = try c.get(docID: "d\((n + t) % 20)")
                    } catch let e as CBLError where e.status == .badRequest {
                        closedSeen.with { $0 += 1 }
                    } catch {
                        errors.with { $0.append("read: \(error)") }
                    }
                }
            }
            XCTAssertEqual(errors.get(), [])
            XCTAssertGreaterThan(closedSeen.get(), 0, "reads after close fail with 400")
            XCTAssertThrowsError(try c.get(docID: "d0"))
            for suffix in ["-wal", "-shm"] {
                XCTAssertFalse(FileManager.default.fileExists(atPath: path + suffix), "round \(round): \(suffix) left: a connection is still open")
            }
        }
    }

    func testTransactionsOnSeveralThreadsSerialize() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let errors = Locked<[String]>([])
        runOnThreads(6) { t in
            for k in 0..<10 {
                do {
                    try db.inTransaction {
                        for j in 0..<3 { _ = try c.put(docID: "t\(t)-\(k)-\(j)", json: "{}", parent: nil) }
                        return true
                    }
                } catch { errors.with { $0.append("\(error)") } }
            }
        }
        XCTAssertEqual(errors.get(), [])
        XCTAssertEqual(try c.count, 6 * 10 * 3)
        XCTAssertEqual(try c.lastSequence, 6 * 10 * 3)
        assertSound(db)
    }

    func testWriteFromAnotherThreadWaitsThenTimesOutWith503() throws {
        let db = try open(options: #"{"busy_timeout_ms":100}"#)
        let c = try db.defaultCollection()
        try db.begin()
        _ = try c.put(docID: "mine", json: "{}", parent: nil)
        let status = Locked<Status?>(nil)
        runOnThreads(1) { _ in
            do { _ = try c.put(docID: "theirs", json: "{}", parent: nil); status.set(.ok) }
            catch let e as CBLError { status.set(e.status) } catch {}
        }
        XCTAssertEqual(status.get(), .busy)
        try db.commit()
        // Once the transaction ends, the other thread's write goes through.
        runOnThreads(1) { _ in
            do { _ = try c.put(docID: "theirs", json: "{}", parent: nil); status.set(.ok) }
            catch let e as CBLError { status.set(e.status) } catch {}
        }
        XCTAssertEqual(status.get(), .ok)
        XCTAssertEqual(try c.count, 2)
    }

    func testOtherThreadsWaitForATransactionThatEnds() throws {
        let db = try open()
        let c = try db.defaultCollection()
        try db.begin()
        _ = try c.put(docID: "first", json: "{}", parent: nil)
        let started = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let result = Locked<String>("")
        Thread {
            started.signal()
            do { _ = try c.put(docID: "second", json: "{}", parent: nil); result.set("ok") }
            catch { result.set("\(error)") }
            finished.signal()
        }.start()
        started.wait()
        usleep(20_000)
        try db.commit()
        finished.wait()
        XCTAssertEqual(result.get(), "ok")
        XCTAssertEqual(try c.changes(since: 0).map(\.docID), ["first", "second"])
    }
}
