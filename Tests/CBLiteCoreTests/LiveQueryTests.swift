import XCTest
@testable import CBLiteCore

/// Live queries: first result, re-runs on relevant changes only (CBL 1.3 #1114), option
/// changes, stop. `waitIdle` makes every check deterministic (no timing).
final class LiveQueryTests: CBLTestCase {
    final class Results: @unchecked Sendable {
        let sets = Locked<[[String]]>([])
        func record(_ e: QueryEnumerator) {
            let keys = (try? e.allRows().map { $0.keyJSON + "=" + ($0.valueJSON ?? "-") }) ?? ["error"]
            sets.with { $0.append(keys) }
        }
        var count: Int { sets.get().count }
        var last: [String]? { sets.get().last }
    }

    func testFiresFirstThenOnlyOnRelevantChanges() throws {
        let db = try open()
        let c = try db.defaultCollection()
        for i in 0..<5 { _ = try c.put(docID: "d\(i)", json: "{\"k\":\(i),\"v\":\(i)}", parent: nil) }
        let v = try keyView(c)
        let results = Results()
        let lq = LiveQuery(view: v, options: try QueryOptions(json: "{\"startkey\":1,\"endkey\":3}"), callback: results.record)
        try lq.start()
        XCTAssertTrue(lq.waitIdle())
        XCTAssertEqual(results.count, 1)
        XCTAssertEqual(results.last, ["1=1", "2=2", "3=3"])
        XCTAssertEqual(lq.runCount, 1)

        // Out of range: the index changes, but the query does not even re-run.
        _ = try c.put(docID: "far", json: "{\"k\":100}", parent: nil)
        lq.waitIdle()
        XCTAssertEqual(results.count, 1)
        XCTAssertEqual(lq.runCount, 1)
        // A document that emits nothing: the index does not change.
        _ = try c.put(docID: "nokey", json: "{\"x\":1}", parent: nil)
        lq.waitIdle()
        XCTAssertEqual(lq.runCount, 1)
        // In range: fires with the new rows.
        _ = try c.put(docID: "mid", json: "{\"k\":2.5,\"v\":\"m\"}", parent: nil)
        lq.waitIdle()
        XCTAssertEqual(results.count, 2)
        XCTAssertEqual(results.last, ["1=1", "2=2", "2.5=\"m\"", "3=3"])
        // Deleting a row in range fires; purging one fires.
        _ = try c.delete(docID: "d2", parent: nil)
        lq.waitIdle()
        XCTAssertEqual(results.last, ["1=1", "2.5=\"m\"", "3=3"])
        try c.purge(docID: "d1")
        lq.waitIdle()
        XCTAssertEqual(results.last, ["2.5=\"m\"", "3=3"])
        XCTAssertEqual(results.count, 4)
        // A key moving out of range fires (its old key was in range).
        let d3 = try c.doc("d3")
        _ = try c.put(docID: "d3", json: "{\"k\":50}", parent: d3["_rev"]!.stringValue)
        lq.waitIdle()
        XCTAssertEqual(results.last, ["2.5=\"m\""])
        // A change in range that leaves the rows equal re-runs but does not deliver.
        let mid = try c.doc("mid")
        _ = try c.put(docID: "mid", json: "{\"k\":2.5,\"v\":\"m\",\"extra\":true}", parent: mid["_rev"]!.stringValue)
        lq.waitIdle()
        XCTAssertEqual(results.count, 5)
        lq.stop()
        _ = try c.put(docID: "after", json: "{\"k\":2}", parent: nil)
        XCTAssertFalse(lq.waitIdle())
        XCTAssertEqual(results.count, 5)
        XCTAssertFalse(lq.isRunning)
    }

    func testChangingOptionsWhileLive() throws {
        let db = try open()
        let c = try db.defaultCollection()
        for i in 0..<6 { _ = try c.put(docID: "d\(i)", json: "{\"k\":\(i),\"v\":1}", parent: nil) }
        let v = try keyView(c, reduce: .count)
        let results = Results()
        let lq = LiveQuery(view: v, options: QueryOptions(), callback: results.record)
        try lq.start()
        lq.waitIdle()
        XCTAssertEqual(results.last, ["null=6"])
        lq.setOptions(try QueryOptions(json: "{\"reduce\":false,\"limit\":2,\"descending\":true}"))
        lq.waitIdle()
        XCTAssertEqual(results.last, ["5=1", "4=1"])
        XCTAssertEqual(results.count, 2)
        _ = try c.put(docID: "top", json: "{\"k\":9,\"v\":1}", parent: nil)
        lq.waitIdle()
        XCTAssertEqual(results.last, ["9=1", "5=1"])
        lq.stop()
        lq.stop()                                          // idempotent
    }

    func testChangesInOtherCollectionsAndOtherViewsDoNotFire() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let other = try db.createCollection(scope: nil, name: "other")
        _ = try c.put(docID: "a", json: "{\"k\":1}", parent: nil)
        let v = try keyView(c)
        let results = Results()
        let lq = LiveQuery(view: v, options: QueryOptions(), callback: results.record)
        try lq.start()
        lq.waitIdle()
        _ = try other.put(docID: "b", json: "{\"k\":2}", parent: nil)
        lq.waitIdle()
        XCTAssertEqual(results.count, 1)
        XCTAssertEqual(lq.runCount, 1)
        // A change made inside a transaction is seen once, at commit, not on rollback.
        try db.begin()
        _ = try c.put(docID: "t1", json: "{\"k\":3}", parent: nil)
        try db.abort()
        lq.waitIdle()
        XCTAssertEqual(results.count, 1)
        try db.begin()
        _ = try c.put(docID: "t2", json: "{\"k\":4}", parent: nil)
        _ = try c.put(docID: "t3", json: "{\"k\":5}", parent: nil)
        try db.commit()
        lq.waitIdle()
        XCTAssertEqual(results.count, 2)
        XCTAssertEqual(results.last, ["1=-", "4=-", "5=-"])
        lq.stop()
    }

    func testIndexChangedBySomeoneElseStillReRuns() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "a", json: "{\"k\":1}", parent: nil)
        let v = try keyView(c)
        let results = Results()
        let lq = LiveQuery(view: v, options: try QueryOptions(json: "{\"key\":1}"), callback: results.record)
        try lq.start()
        lq.waitIdle()
        XCTAssertEqual(results.count, 1)
        // Index the change through another query first, inside a transaction whose
        // notification arrives after the index already moved on.
        try db.begin()
        _ = try c.put(docID: "b", json: "{\"k\":1}", parent: nil)
        XCTAssertEqual(try keys(v).count, 2)
        try db.commit()
        lq.waitIdle()
        XCTAssertEqual(results.count, 2)
        XCTAssertEqual(results.last, ["1=-", "1=-"])
        lq.stop()
    }

    func testCallbackMayStopItsOwnLiveQueryAndCallTheLibrary() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "a", json: "{\"k\":1}", parent: nil)
        let v = try keyView(c)
        let seen = Locked<[Int]>([])
        var lqRef: LiveQuery?
        let lq = LiveQuery(view: v, options: QueryOptions(), callback: { e in
            let n = (try? e.allRows().count) ?? -1
            let total = (try? c.count) ?? -1                 // reads through the library
            seen.with { $0.append(n * 100 + Int(total)) }
            if n >= 2 { lqRef?.stop() }
        })
        lqRef = lq
        try lq.start()
        lq.waitIdle()
        _ = try c.put(docID: "b", json: "{\"k\":2}", parent: nil)
        lq.waitIdle()
        XCTAssertEqual(seen.get(), [101, 202])
        XCTAssertFalse(lq.isRunning)
        _ = try c.put(docID: "c", json: "{\"k\":3}", parent: nil)
        XCTAssertEqual(seen.get(), [101, 202])
        lqRef = nil
    }

    func testClosingTheDatabaseUnderALiveQueryIsSafe() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "a", json: "{\"k\":1}", parent: nil)
        let results = Results()
        let lq = LiveQuery(view: try keyView(c), options: QueryOptions(), callback: results.record)
        try lq.start()
        lq.waitIdle()
        let writer = try open()                          // another handle keeps writing
        try db.close()
        _ = try writer.defaultCollection().put(docID: "b", json: "{\"k\":2}", parent: nil)
        lq.waitIdle()
        XCTAssertEqual(results.count, 1)                 // no callback from a closed handle
        XCTAssertFalse(lq.isRunning, "closing the handle stopped the live query")
        XCTAssertNil(lq.lastError)
        lq.stop()                                        // stopping again is harmless
        XCTAssertFalse(lq.isRunning)
    }

    /// Writers and several indexing readers at once: the index ends up exactly right.
    func testConcurrentWritersAndQueries() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let v = try keyView(c)
        let failures = Locked(0)
        runOnThreads(6) { t in
            do {
                if t < 3 {
                    for i in 0..<200 { _ = try c.put(docID: "t\(t)-\(i)", json: "{\"k\":\(i)}", parent: nil) }
                    for i in stride(from: 0, to: 200, by: 2) { _ = try c.delete(docID: "t\(t)-\(i)", parent: nil) }
                } else {
                    for _ in 0..<30 { _ = try v.query(QueryOptions(json: "{\"limit\":5}")).allRows() }
                }
            } catch {
                failures.with { $0 += 1 }
            }
        }
        XCTAssertEqual(failures.get(), 0)
        let all = try rows(v)
        XCTAssertEqual(all.count, 300)
        XCTAssertEqual(Set(all.map { $0.docID! }).count, 300)
        XCTAssertTrue(all.allSatisfy { Int($0.keyJSON)! % 2 == 1 })
        XCTAssertEqual(try v.totalRows, 300)
        assertSound(db)
    }

    /// A refused second start gives back what it registered and leaves the first start's
    /// (it used to overwrite the first start's close hook, which then stayed registered);
    /// stopping leaves nothing registered.
    func testSecondStartIsRefusedAndLeavesNothingBehind() throws {
        let db = try open()
        let coll = try db.defaultCollection()
        let view = try coll.view(named: "all")
        view.setMapReduce(map: { _, emitter in emitter.emit(.int(1), nil) }, reduce: nil, version: "1")
        let observersBefore = db.store.notifier.observerCount
        let lq = LiveQuery(view: view, options: QueryOptions(), callback: { _ in })
        try lq.start()
        XCTAssertEqual(db.store.notifier.observerCount, observersBefore + 1)
        XCTAssertEqual(db.serviceCount, 1)
        assertStatus(.notAcceptable, try lq.start())
        XCTAssertEqual(db.store.notifier.observerCount, observersBefore + 1, "the refused start's observer is removed")
        XCTAssertEqual(db.serviceCount, 1, "the refused start's registration is removed, the first one kept")
        XCTAssertTrue(lq.waitIdle())
        lq.stop()
        XCTAssertEqual(db.store.notifier.observerCount, observersBefore)
        XCTAssertEqual(db.serviceCount, 0)
        assertStatus(.notAcceptable, try lq.start(), "a stopped live query does not start again")
        XCTAssertEqual(db.store.notifier.observerCount, observersBefore)
        XCTAssertEqual(db.serviceCount, 0)
    }

    func testStartRequiresAMapFunction() throws {
        let db = try open()
        let v = try db.defaultCollection().view(named: "none")
        let lq = LiveQuery(view: v, options: QueryOptions(), callback: { _ in })
        assertStatus(.notAcceptable, try lq.start())
    }
}

/// Closing a database handle stops the live queries running on it.
final class LiveQueryCloseTests: XCTestCase {
    func testClosingTheDatabaseStopsItsLiveQueries() throws {
        var template = Array("/tmp/cblite-lqclose-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { try? FileSystem.remove(dir) }
        let db = try Database.open(name: "lq", directory: dir)
        let coll = try db.defaultCollection()
        let view = try coll.view(named: "all")
        view.setMapReduce(map: { _, emitter in emitter.emit(.int(1), nil) }, reduce: nil, version: "1")
        let lq = LiveQuery(view: view, options: QueryOptions(), callback: { _ in })
        try lq.start()
        XCTAssertTrue(lq.waitIdle())
        XCTAssertTrue(lq.isRunning)
        try db.close()
        XCTAssertFalse(lq.isRunning, "close must stop the live query")
        lq.stop()   // stopping again is harmless
    }
}
