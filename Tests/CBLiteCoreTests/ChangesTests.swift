import XCTest
import Foundation
@testable import CBLiteCore

final class ChangesTests: CBLCollectionTestCase {

    private func opts(_ json: String) throws -> ChangesOptions { try ChangesOptions(json: json) }

    // MARK: the feed

    func testFeedSinceLimitDescending() throws {
        let a = try coll.put(docID: "a", json: #"{"n":1}"#, parent: nil)      // seq 1
        _ = try coll.put(docID: "b", json: #"{"n":2}"#, parent: nil)              // seq 2
        _ = try coll.put(docID: "c", json: #"{"n":3}"#, parent: nil)              // seq 3
        let a2 = try coll.put(docID: "a", json: #"{"n":4}"#, parent: a.revID) // seq 4
        let feed = try coll.changes(since: 0)
        XCTAssertEqual(feed.map(\.docID), ["b", "c", "a"], "one entry per document, at its latest sequence")
        XCTAssertEqual(feed.map(\.sequence), [2, 3, 4])
        XCTAssertEqual(feed.last?.revs, [a2.revID])
        XCTAssertTrue(feed.allSatisfy { !$0.deleted && $0.doc == nil })

        XCTAssertEqual(try coll.changes(since: 2).map(\.docID), ["c", "a"])
        XCTAssertEqual(try coll.changes(since: 4).map(\.docID), [])
        XCTAssertEqual(try coll.changes(since: 100).map(\.docID), [])
        XCTAssertEqual(try coll.changes(since: 0, options: opts(#"{"limit":2}"#)).map(\.docID), ["b", "c"])
        XCTAssertEqual(try coll.changes(since: 0, options: opts(#"{"limit":0}"#)).map(\.docID), [])
        XCTAssertEqual(try coll.changes(since: 0, options: opts(#"{"descending":true}"#)).map(\.docID), ["a", "c", "b"])
        XCTAssertEqual(try coll.changes(since: 0, options: opts(#"{"descending":true,"limit":1}"#)).map(\.sequence), [4])
        XCTAssertEqual(try coll.changes(since: 2, options: opts(#"{"descending":true}"#)).map(\.sequence), [4, 3])
    }

    func testFeedIncludeDocsAllRevsDeletedPurged() throws {
        let a = try coll.put(docID: "a", json: #"{"n":1}"#, parent: nil)
        let x = try coll.put(docID: "x", json: #"{"gone":1}"#, parent: nil)
        let b2 = try coll.put(docID: "a", json: #"{"n":"b"}"#, parent: a.revID)
        let c2 = try coll.put(docID: "a", json: #"{"n":"c"}"#, parent: a.revID, allowConflict: true)
        let t = try coll.delete(docID: "x", parent: x.revID)
        _ = try coll.put(docID: "p", json: "{}", parent: nil)
        try coll.purge(docID: "p")

        let feed = try coll.changes(since: 0, options: opts(#"{"include_docs":true}"#))
        XCTAssertEqual(feed.map(\.docID), ["a", "x"], "purged documents are absent")
        let winner = max(RevID(b2.revID)!, RevID(c2.revID)!).string
        let loser = winner == b2.revID ? c2.revID : b2.revID
        XCTAssertEqual(feed[0].revs, [winner], "without all_revs: the current revision only")
        let doc = obj(try XCTUnwrap(feed[0].doc))
        XCTAssertEqual(doc["_id"], .string("a"))
        XCTAssertEqual(doc["_rev"], .string(winner))
        XCTAssertEqual(doc["n"], winner == b2.revID ? .string("b") : .string("c"))
        XCTAssertTrue(feed[1].deleted)
        XCTAssertEqual(feed[1].revs, [t])
        XCTAssertEqual(obj(try XCTUnwrap(feed[1].doc))["_deleted"], .bool(true))

        let all = try coll.changes(since: 0, options: opts(#"{"all_revs":true}"#))
        XCTAssertEqual(all[0].revs, [winner, loser], "every leaf, the current one first")
        XCTAssertNil(all[0].doc)

        // Row by row, as the wire format writes them (CouchWire's ChangesWriter).
        var rows: [(seq: Int64, id: String, rev: String, leaves: [String]?, deleted: Bool, doc: [UInt8]?)] = []
        let last = try coll.visitChanges(since: 0, options: opts(#"{"all_revs":true,"include_docs":true}"#)) { r in
            rows.append((r.sequence, String(decoding: r.docID, as: UTF8.self), String(decoding: r.revID, as: UTF8.self), r.leaves, r.deleted, r.doc))
        }
        XCTAssertEqual(last, feed.last!.sequence)
        XCTAssertEqual(rows.count, 2)
        XCTAssertEqual(rows[0].id, "a")
        XCTAssertEqual(rows[0].seq, feed[0].sequence)
        XCTAssertEqual(rows[0].rev, winner)
        XCTAssertEqual(rows[0].leaves, [winner, loser])
        XCTAssertFalse(rows[0].deleted)
        XCTAssertEqual(obj(try XCTUnwrap(rows[0].doc))["_id"], .string("a"))
        XCTAssertTrue(rows[1].deleted)
        XCTAssertEqual(try coll.visitChanges(since: 99) { _ in XCTFail("no row after the last sequence") }, 99)
        try coll.visitChanges(since: 0) { r in
            XCTAssertNil(r.doc)
            XCTAssertNil(r.leaves)
        }
    }

    func testLocalDocsAndOtherCollectionsNotInFeed() throws {
        let other = try db.createCollection(scope: nil, name: "other")
        _ = try other.put(docID: "o", json: "{}", parent: nil)
        _ = try coll.putLocal(id: "loc", json: #"{"x":1}"#, parent: nil)
        _ = try coll.put(docID: "d", json: "{}", parent: nil)
        XCTAssertEqual(try coll.changes(since: 0).map(\.docID), ["d"])
        XCTAssertEqual(try other.changes(since: 0).map(\.docID), ["o"])
    }

    func testFeedOptionsValidation() {
        for bad in [#"{"limit":-1}"#, #"{"limit":"x"}"#, #"{"include_docs":1}"#, #"{"bogus":true}"#, "[]", "{"] {
            assertStatus(.badRequest, try ChangesOptions(json: bad), bad)
        }
        XCTAssertNoThrow(try ChangesOptions(json: nil))
        XCTAssertNoThrow(try ChangesOptions(json: #"{"limit":5,"include_docs":false,"all_revs":true,"descending":false}"#))
    }

    // MARK: change observers

    func testObserversGetOneBatchPerTransactionAfterCommit() throws {
        let rec = ChangeRecorder()
        let token = try coll.addChangeObserver(rec.callback)
        defer { token.remove() }
        let single = try coll.put(docID: "s", json: "{}", parent: nil)
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.batchCount, 1)
        XCTAssertEqual(rec.events, [ChangeEvent(collectionID: coll.id, docID: "s", revID: single.revID, sequence: 1,
                                                deleted: false, external: false)])

        try db.begin()
        _ = try coll.put(docID: "t1", json: "{}", parent: nil)
        _ = try coll.put(docID: "t2", json: "{}", parent: nil)
        let t3 = try coll.put(docID: "t3", json: "{}", parent: nil)
        _ = try coll.delete(docID: "t3", parent: t3.revID)
        XCTAssertEqual(rec.batchCount, 1, "nothing before commit")
        try db.commit()
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.batchCount, 2, "one batch for the transaction")
        let batch = rec.all[1]
        XCTAssertEqual(batch.map(\.docID), ["t1", "t2", "t3", "t3"], "in commit order")
        XCTAssertEqual(batch.map(\.sequence), [2, 3, 4, 5])
        XCTAssertEqual(batch.last?.deleted, true)

        // Aborted: nothing, ever.
        try db.begin()
        _ = try coll.put(docID: "ab", json: "{}", parent: nil)
        try db.abort()
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.batchCount, 2)
        // A nested transaction notifies once, at the outermost commit.
        try db.begin()
        try db.begin()
        _ = try coll.put(docID: "n1", json: "{}", parent: nil)
        try db.commit()
        XCTAssertEqual(rec.batchCount, 2)
        _ = try coll.put(docID: "n2", json: "{}", parent: nil)
        try db.commit()
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.batchCount, 3)
        XCTAssertEqual(rec.all[2].map(\.docID), ["n1", "n2"])
        // Failed saves notify nothing.
        assertStatus(.conflict, try coll.put(docID: "n1", json: "{}", parent: nil))
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.batchCount, 3)
    }

    func testEventContents() throws {
        let rec = ChangeRecorder()
        let token = try coll.addChangeObserver(rec.callback)
        defer { token.remove() }
        let r1 = try coll.put(docID: "d", json: "{}", parent: nil)
        let r2 = try coll.put(docID: "d", json: #"{"v":2}"#, parent: r1.revID)
        // A losing branch: the event carries the current (winning) revision.
        let b = try coll.put(docID: "d", json: #"{"v":"b"}"#, parent: r1.revID, allowConflict: true)
        let currentAfterBranch = max(RevID(r2.revID)!, RevID(b.revID)!).string
        try coll.putExisting(docID: "ext", json: #"{"from":"peer"}"#, history: ["2-b", "1-a"])
        try coll.purge(docID: "ext")
        try db.waitForNotifications(timeoutMs: 10_000)
        let ev = rec.events
        XCTAssertEqual(ev.count, 5)
        XCTAssertEqual(ev.map(\.revID), [r1.revID, r2.revID, currentAfterBranch, "2-b", ""])
        XCTAssertEqual(ev.map(\.external), [false, false, false, true, false])
        XCTAssertEqual(ev.map(\.deleted), [false, false, false, false, true], "purge is reported as deleted with rev \"\"")
        XCTAssertEqual(ev.map(\.sequence), [1, 2, 3, 4, 4])
    }

    func testDocumentObserverFiltersAndCollectionsAreSeparate() throws {
        let other = try db.createCollection(scope: "s", name: "other")
        let docRec = ChangeRecorder()
        let collRec = ChangeRecorder()
        let otherRec = ChangeRecorder()
        let t1 = try coll.addChangeObserver(docID: "watched", docRec.callback)
        let t2 = try coll.addChangeObserver(collRec.callback)
        let t3 = try other.addChangeObserver(otherRec.callback)
        defer { t1.remove(); t2.remove(); t3.remove() }
        assertStatus(.badRequest, try coll.addChangeObserver(docID: "_bad") { _ in })

        try db.inTransaction {
            _ = try coll.put(docID: "a", json: "{}", parent: nil)
            _ = try coll.put(docID: "watched", json: "{}", parent: nil)
            _ = try other.put(docID: "watched", json: "{}", parent: nil)
            _ = try coll.put(docID: "b", json: "{}", parent: nil)
            return true
        }
        _ = try coll.put(docID: "c", json: "{}", parent: nil)
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(docRec.all.map { $0.map(\.docID) }, [["watched"]], "only its document, only batches containing it")
        XCTAssertEqual(collRec.all.map { $0.map(\.docID) }, [["a", "watched", "b"], ["c"]])
        XCTAssertEqual(otherRec.all.map { $0.map(\.docID) }, [["watched"]])
        XCTAssertTrue(otherRec.events.allSatisfy { $0.collectionID == other.id })
    }

    func testRemovedObserverGetsNothing() throws {
        let rec = ChangeRecorder()
        let token = try coll.addChangeObserver(rec.callback)
        _ = try coll.put(docID: "a", json: "{}", parent: nil)
        try db.waitForNotifications(timeoutMs: 10_000)
        token.remove()
        token.remove()                       // twice: harmless
        _ = try coll.put(docID: "b", json: "{}", parent: nil)
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.events.map(\.docID), ["a"])
        // Removing after the database was closed is harmless too.
        let t2 = try coll.addChangeObserver { _ in }
        try db.close()
        t2.remove()
    }

    func testRemovalInsideCallback() throws {
        let rec = ChangeRecorder()
        let tokenBox = Locked<ChangeObserverToken?>(nil)
        let token = try coll.addChangeObserver { events in
            rec.record(events)
            tokenBox.get()?.remove()         // must not deadlock
        }
        tokenBox.set(token)
        _ = try coll.put(docID: "a", json: "{}", parent: nil)
        try db.waitForNotifications(timeoutMs: 10_000)
        _ = try coll.put(docID: "b", json: "{}", parent: nil)
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.events.map(\.docID), ["a"])
    }

    func testCallbackCanWriteBackIntoTheDatabase() throws {
        let rec = ChangeRecorder()
        let c = coll!
        let errors = Locked<[String]>([])
        let token = try coll.addChangeObserver { events in
            rec.record(events)
            for e in events where e.docID == "trigger" {
                do {
                    _ = try c.put(docID: "echo", json: #"{"of":"trigger"}"#, parent: nil)
                    _ = try c.get(docID: "trigger")
                } catch { errors.with { $0.append("\(error)") } }
            }
        }
        defer { token.remove() }
        _ = try coll.put(docID: "trigger", json: "{}", parent: nil)
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(errors.get(), [])
        XCTAssertEqual(try coll.doc("echo")["of"], .string("trigger"))
        XCTAssertEqual(rec.all.map { $0.map(\.docID) }, [["trigger"], ["echo"]], "the write-back is delivered too, in order")
    }

    func testBufferedNotifications() throws {
        let rec = ChangeRecorder()
        let token = try coll.addChangeObserver(rec.callback)
        defer { token.remove() }
        try db.setNotificationsBuffered(true)
        _ = try coll.put(docID: "a", json: "{}", parent: nil)
        try db.inTransaction {
            _ = try coll.put(docID: "b", json: "{}", parent: nil)
            _ = try coll.put(docID: "c", json: "{}", parent: nil)
            return true
        }
        try db.waitForNotifications(timeoutMs: 10_000)      // never waits for buffered changes
        XCTAssertEqual(rec.batchCount, 0, "held while buffered")
        try db.sendNotifications()
        XCTAssertEqual(rec.all.map { $0.map(\.docID) }, [["a"], ["b", "c"]], "delivered on flush, batches kept")
        try db.sendNotifications()
        XCTAssertEqual(rec.batchCount, 2, "nothing delivered twice")

        // Flushing from another thread delivers on that thread.
        _ = try coll.put(docID: "d", json: "{}", parent: nil)
        let d = db!
        runOnThreads(1) { _ in try? d.sendNotifications() }
        XCTAssertEqual(rec.events.map(\.docID), ["a", "b", "c", "d"])

        try db.setNotificationsBuffered(false)
        _ = try coll.put(docID: "e", json: "{}", parent: nil)
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.events.last?.docID, "e")
    }

    func testWaitForNotificationsTimesOutWhileAnObserverIsBusy() throws {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let rec = ChangeRecorder()
        let token = try coll.addChangeObserver { events in
            rec.record(events)
            if events.contains(where: { $0.docID == "slow" }) {
                entered.signal()
                release.wait()
            }
        }
        defer { token.remove() }
        let c = coll!
        let writerDone = DispatchSemaphore(value: 0)
        Thread {
            _ = try? c.put(docID: "slow", json: "{}", parent: nil)
            writerDone.signal()
        }.start()
        entered.wait()
        // Delivery is running on the writer thread: a short wait times out with 503.
        assertStatus(.busy, try db.waitForNotifications(timeoutMs: 50))
        // A commit made meanwhile is left to the thread already delivering.
        _ = try coll.put(docID: "meanwhile", json: "{}", parent: nil)
        XCTAssertEqual(rec.events.map(\.docID), ["slow"])
        release.signal()
        try db.waitForNotifications(timeoutMs: 30_000)
        XCTAssertEqual(rec.events.map(\.docID), ["slow", "meanwhile"], "commit order kept")
        writerDone.wait()
    }

    func testWaitForNotificationsFromInsideACallbackDoesNotDeadlock() throws {
        let status = Locked<[String]>([])
        let d = db!
        let token = try coll.addChangeObserver { _ in
            do { try d.waitForNotifications(timeoutMs: 5_000); status.with { $0.append("ok") } }
            catch { status.with { $0.append("\(error)") } }
        }
        defer { token.remove() }
        _ = try coll.put(docID: "a", json: "{}", parent: nil)
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(status.get(), ["ok"])
    }
}
