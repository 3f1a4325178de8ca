import XCTest
import Foundation
@testable import CBLiteCore

final class ExpirationTests: CBLTestCase {
    private func isPurged(_ c: Collection, _ id: String) -> Bool {
        do {
            _ = try c.get(docID: id, options: .deleted)
            return false
        } catch let e as CBLError {
            return e.status == .notFound
        } catch { return false }
    }

    func testSetGetClear() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "d", json: "{}", parent: nil)
        XCTAssertEqual(try c.expiration(docID: "d"), 0, "none set")
        let t = unixTimeNow() + 3600
        try c.setExpiration(docID: "d", unixTime: t)
        XCTAssertEqual(try c.expiration(docID: "d"), t)
        try c.setExpiration(docID: "d", unixTime: t + 5)
        XCTAssertEqual(try c.expiration(docID: "d"), t + 5)
        try c.setExpiration(docID: "d", unixTime: 0)
        XCTAssertEqual(try c.expiration(docID: "d"), 0, "0 clears")
        assertStatus(.notFound, try c.setExpiration(docID: "absent", unixTime: t))
        assertStatus(.notFound, try c.expiration(docID: "absent"))
        assertStatus(.badRequest, try c.setExpiration(docID: "d", unixTime: -5))
        assertStatus(.badRequest, try c.setExpiration(docID: "_x", unixTime: t))
        // Setting an expiration is not a document change.
        XCTAssertEqual(try c.lastSequence, 1)
        XCTAssertEqual(try c.history(docID: "d", revID: nil).count, 1)
        // It survives updates and reopening.
        try c.setExpiration(docID: "d", unixTime: t)
        let cur = try c.doc("d")["_rev"]!.stringValue!
        _ = try c.put(docID: "d", json: #"{"v":2}"#, parent: cur)
        XCTAssertEqual(try c.expiration(docID: "d"), t)
        try db.close()
        let again = try open()
        XCTAssertEqual(try again.defaultCollection().expiration(docID: "d"), t)
    }

    func testExpiredDocumentsArePurgedWhileOpen() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let named = try db.createCollection(scope: "s", name: "named")
        _ = try c.put(docID: "soon", json: "{}", parent: nil)
        _ = try c.put(docID: "later", json: "{}", parent: nil)
        _ = try c.put(docID: "never", json: "{}", parent: nil)
        _ = try named.put(docID: "soon-too", json: "{}", parent: nil)
        let t = try c.put(docID: "tomb", json: "{}", parent: nil)
        _ = try c.delete(docID: "tomb", parent: t.revID)
        let rec = ChangeRecorder()
        let token = try c.addChangeObserver(rec.callback)
        defer { token.remove() }

        try c.setExpiration(docID: "soon", unixTime: unixTimeNow() + 1)
        try c.setExpiration(docID: "tomb", unixTime: unixTimeNow() + 1)
        try named.setExpiration(docID: "soon-too", unixTime: unixTimeNow() + 1)
        try c.setExpiration(docID: "later", unixTime: unixTimeNow() + 3600)

        XCTAssertTrue(eventually(pollMs: 50) { isPurged(c, "soon") && isPurged(c, "tomb") && isPurged(named, "soon-too") },
                      "expired documents are purged within a few seconds")
        XCTAssertNoThrow(try c.get(docID: "later"))
        XCTAssertNoThrow(try c.get(docID: "never"))
        XCTAssertEqual(try c.count, 2)
        XCTAssertEqual(try named.count, 0)
        XCTAssertFalse(try c.changes(since: 0).contains { $0.docID == "soon" || $0.docID == "tomb" })
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertTrue(rec.events.contains { $0.docID == "soon" && $0.revID == "" && $0.deleted },
                      "the purge is reported to change observers")
        assertSound(db)
    }

    /// The timer's thread runs only while an expiration is pending: none for a database
    /// without one, started by setting one, ended once it is purged; at open, started when
    /// the file holds one; and started when another process sets one while a change
    /// observer watches the file.
    func testTheTimersThreadRunsOnlyWhileAnExpirationIsPending() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "a", json: "{}", parent: nil)
        _ = try c.put(docID: "b", json: "{}", parent: nil)
        let timer = try XCTUnwrap(db.store.expiration)
        XCTAssertFalse(timer.isRunning, "no expiration: no thread")
        try c.setExpiration(docID: "a", unixTime: unixTimeNow() + 1)
        XCTAssertTrue(timer.isRunning, "setting one starts it")
        XCTAssertTrue(eventually(pollMs: 50) { isPurged(c, "a") })
        XCTAssertTrue(eventually(pollMs: 50) { !timer.isRunning }, "nothing left pending: the thread ended")
        // Cleared before it is due: the thread ends without purging.
        try c.setExpiration(docID: "b", unixTime: unixTimeNow() + 3600)
        XCTAssertTrue(timer.isRunning)
        try c.setExpiration(docID: "b", unixTime: 0)
        XCTAssertTrue(eventually(pollMs: 50) { !timer.isRunning })
        XCTAssertNoThrow(try c.get(docID: "b"))
        // Reopened with one pending: running from open.
        try c.setExpiration(docID: "b", unixTime: unixTimeNow() + 3600)
        try db.close()
        let again = try open()
        XCTAssertTrue(try XCTUnwrap(again.store.expiration).isRunning, "the file holds one: started at open")
        try again.defaultCollection().setExpiration(docID: "b", unixTime: 0)
        let reopened = try XCTUnwrap(again.store.expiration)
        XCTAssertTrue(eventually(pollMs: 50) { !reopened.isRunning })
        // Another process (a Store of its own) sets one: this process's change watcher
        // sees the commit and starts the timer, which purges it when due.
        let c2 = try again.defaultCollection()
        let token = try c2.addChangeObserver { _ in }
        defer { token.remove() }
        let store = try Store(bundlePath: again.path, filePath: again.path + "/db.sqlite3", create: false,
                              busyTimeoutMs: 5000, key: nil)
        defer { store.close() }
        let other = Database(name: again.name, directory: dir, store: store)
        // Due in 1-2 s: the thread runs for at least a second after the watcher's round.
        try other.defaultCollection().setExpiration(docID: "b", unixTime: unixTimeNow() + 2)
        XCTAssertTrue(eventually(pollMs: 50) { reopened.isRunning }, "started on the other process's commit")
        XCTAssertTrue(eventually(pollMs: 50) { isPurged(c2, "b") })
        XCTAssertTrue(eventually(pollMs: 50) { !reopened.isRunning })
    }

    func testAlreadyExpiredIsPurgedPromptly() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "past", json: "{}", parent: nil)
        try c.setExpiration(docID: "past", unixTime: unixTimeNow() - 10)
        XCTAssertTrue(eventually(pollMs: 50) { isPurged(c, "past") })
    }

    func testExpiredDocumentsArePurgedOnOpen() throws {
        var db: Database? = try open()
        let c = try db!.defaultCollection()
        _ = try c.put(docID: "exp", json: "{}", parent: nil)
        _ = try c.put(docID: "stay", json: "{}", parent: nil)
        let when = unixTimeNow() + 2
        try c.setExpiration(docID: "exp", unixTime: when)
        try db!.close()
        db = nil
        // Wait (bounded) until the expiration time has passed while nothing is open.
        XCTAssertTrue(eventually(pollMs: 50) { unixTimeNow() > when })
        XCTAssertTrue(try Database.exists(name: "db", directory: dir))
        let reopened = try open()
        let c2 = try reopened.defaultCollection()
        // Purged by the time open returns.
        assertStatus(.notFound, try c2.get(docID: "exp", options: .deleted))
        XCTAssertNoThrow(try c2.get(docID: "stay"))
        XCTAssertEqual(try c2.count, 1)
        assertSound(reopened)
    }

    func testCompactPurgesExpired() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "x", json: "{}", parent: nil)
        try c.setExpiration(docID: "x", unixTime: 1)
        try db.compact()
        assertStatus(.notFound, try c.get(docID: "x", options: .deleted))
        assertSound(db)
    }
}
