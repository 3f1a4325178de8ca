import XCTest
@testable import CBLiteCore

final class LocalDocumentTests: CBLTestCase {
    /// CouchDB 3's rule (what its HTTP API does): no write conflicts; the new revision is
    /// the named one plus one, "0-1" when none is named.
    func testFollowsGivenRule() throws {
        let db = try open()
        let c = try db.defaultCollection()
        XCTAssertEqual(try c.putLocal(id: "l", json: #"{"v":1}"#, parent: nil, rule: .followsGiven), "0-1")
        XCTAssertEqual(try c.putLocal(id: "l", json: #"{"_rev":"0-1","v":2}"#, parent: nil, rule: .followsGiven), "0-2")
        XCTAssertEqual(try c.putLocal(id: "l", json: #"{"v":3}"#, parent: nil, rule: .followsGiven), "0-1", "no revision named")
        XCTAssertEqual(try c.putLocal(id: "l", json: #"{"_rev":"0-9","v":4}"#, parent: nil, rule: .followsGiven), "0-10")
        XCTAssertEqual(try c.putLocal(id: "l", json: #"{"v":5}"#, parent: "0-0", rule: .followsGiven), "0-1")
        XCTAssertEqual(obj(try c.getLocal(id: "l"))["v"], .int(5))
        assertStatus(.badRequest, try c.putLocal(id: "l", json: "{}", parent: "1-abc", rule: .followsGiven))
        // The default rule is unchanged.
        assertStatus(.conflict, try c.putLocal(id: "l", json: "{}", parent: "0-9"))
        assertStatus(.badRequest, try c.putLocal(id: "l", json: "{}", parent: "0-0"))
    }

    func testPutGetUpdateDelete() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let r1 = try c.putLocal(id: "checkpoint", json: #"{"seq":10}"#, parent: nil)
        XCTAssertEqual(r1, "0-1")
        var d = obj(try c.getLocal(id: "checkpoint"))
        XCTAssertEqual(d["_id"], .string("checkpoint"))
        XCTAssertEqual(d["_rev"], .string("0-1"))
        XCTAssertEqual(d["seq"], .int(10))
        XCTAssertEqual(d.members.count, 3)

        let r2 = try c.putLocal(id: "checkpoint", json: #"{"seq":20}"#, parent: r1)
        XCTAssertEqual(r2, "0-2")
        d = obj(try c.getLocal(id: "checkpoint"))
        XCTAssertEqual(d["seq"], .int(20))
        XCTAssertEqual(d["_rev"], .string("0-2"))

        // _rev in the body names the parent.
        let r3 = try c.putLocal(id: "checkpoint", json: #"{"_rev":"0-2","seq":30}"#, parent: nil)
        XCTAssertEqual(r3, "0-3")
        // _id in the body must match.
        XCTAssertNoThrow(try c.putLocal(id: "checkpoint", json: #"{"_id":"checkpoint","seq":40}"#, parent: r3))
        assertStatus(.badRequest, try c.putLocal(id: "checkpoint", json: #"{"_id":"other"}"#, parent: "0-4"))

        assertStatus(.conflict, try c.putLocal(id: "checkpoint", json: "{}", parent: "0-1"), "stale revision")
        assertStatus(.conflict, try c.putLocal(id: "checkpoint", json: "{}", parent: nil), "exists already")
        assertStatus(.badRequest, try c.putLocal(id: "checkpoint", json: "{}", parent: "1-abc"), "not a local revision")
        assertStatus(.badRequest, try c.putLocal(id: "checkpoint", json: "[]", parent: "0-4"))
        assertStatus(.badRequest, try c.putLocal(id: "checkpoint", json: "nope", parent: "0-4"))
        XCTAssertEqual(obj(try c.getLocal(id: "checkpoint"))["seq"], .int(40))

        assertStatus(.conflict, try c.deleteLocal(id: "checkpoint", parent: "0-2"))
        try c.deleteLocal(id: "checkpoint", parent: "0-4")
        assertStatus(.notFound, try c.getLocal(id: "checkpoint"))
        assertStatus(.notFound, try c.deleteLocal(id: "checkpoint", parent: nil))
        // Delete with no revision: any.
        _ = try c.putLocal(id: "any", json: "{}", parent: nil)
        _ = try c.putLocal(id: "any", json: "{}", parent: "0-1")
        try c.deleteLocal(id: "any", parent: nil)
        assertStatus(.notFound, try c.getLocal(id: "any"))
        // Re-creation after delete.
        XCTAssertNoThrow(try c.putLocal(id: "any", json: #"{"again":true}"#, parent: nil))
        XCTAssertEqual(obj(try c.getLocal(id: "any"))["again"], .bool(true))
    }

    func testPutWithParentOnAbsentLocalDocIs409() throws {
        let db = try open()
        let c = try db.defaultCollection()
        // Header: "put: parent_rev_id must be the current revision (NULL to create): 409 otherwise."
        assertStatus(.conflict, try c.putLocal(id: "absent", json: "{}", parent: "0-1"))
        assertStatus(.notFound, try c.getLocal(id: "absent"))
    }

    func testLocalDocsAreSeparateFromDocumentsAndFeed() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let other = try db.createCollection(scope: nil, name: "other")
        _ = try c.putLocal(id: "same", json: #"{"local":true}"#, parent: nil)
        XCTAssertEqual(try c.count, 0)
        XCTAssertEqual(try c.lastSequence, 0, "no sequence used")
        XCTAssertEqual(try c.changes(since: 0).count, 0)
        assertStatus(.notFound, try c.get(docID: "same"))
        _ = try c.put(docID: "same", json: #"{"local":false}"#, parent: nil)
        XCTAssertEqual(obj(try c.getLocal(id: "same"))["local"], .bool(true))
        XCTAssertEqual(try c.doc("same")["local"], .bool(false))
        // Per collection.
        assertStatus(.notFound, try other.getLocal(id: "same"))
        _ = try other.putLocal(id: "same", json: #"{"in":"other"}"#, parent: nil)
        XCTAssertEqual(obj(try other.getLocal(id: "same"))["in"], .string("other"))
        XCTAssertEqual(obj(try c.getLocal(id: "same"))["local"], .bool(true))
        // Change observers hear nothing of local documents.
        let rec = ChangeRecorder()
        let token = try c.addChangeObserver(rec.callback)
        defer { token.remove() }
        _ = try c.putLocal(id: "quiet", json: "{}", parent: nil)
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.batchCount, 0)
        // Survive reopening.
        try db.close()
        let again = try open()
        XCTAssertEqual(obj(try again.defaultCollection().getLocal(id: "same"))["local"], .bool(true))
    }

    func testLocalIDsAndTransactions() throws {
        let db = try open()
        let c = try db.defaultCollection()
        assertStatus(.badRequest, try c.putLocal(id: "", json: "{}", parent: nil))
        assertStatus(.badRequest, try c.putLocal(id: "a\nb", json: "{}", parent: nil))
        assertStatus(.badRequest, try c.getLocal(id: String(repeating: "x", count: 1025)))
        XCTAssertNoThrow(try c.putLocal(id: "with/slash and ünicode", json: "{}", parent: nil))
        // Inside an aborted transaction: rolled back.
        try db.begin()
        _ = try c.putLocal(id: "txn", json: "{}", parent: nil)
        XCTAssertNoThrow(try c.getLocal(id: "txn"))
        try db.abort()
        assertStatus(.notFound, try c.getLocal(id: "txn"))
    }
}
