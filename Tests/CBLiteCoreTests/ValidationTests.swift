import XCTest
@testable import CBLiteCore

final class ValidationTests: CBLTestCase {
    func testRejectWithMessageAndRemoval() throws {
        let db = try open()
        let c = try db.defaultCollection()
        try c.setValidator(name: "no-bad") { new, _ in
            obj(new)["bad"] != nil ? "documents must not be bad" : nil
        }
        XCTAssertNoThrow(try c.put(docID: "ok", json: #"{"good":1}"#, parent: nil))
        let e = assertStatus(.forbidden, try c.put(docID: "nope", json: #"{"bad":1}"#, parent: nil))
        XCTAssertEqual(e?.message, "documents must not be bad")
        assertStatus(.notFound, try c.get(docID: "nope"))
        XCTAssertEqual(try c.count, 1)
        XCTAssertEqual(try c.lastSequence, 1, "a rejected save uses no sequence")

        // Empty reason: the default message names the validator.
        try c.setValidator(name: "silent") { new, _ in obj(new)["silent"] != nil ? "" : nil }
        let e2 = assertStatus(.forbidden, try c.put(docID: "s", json: #"{"silent":1}"#, parent: nil))
        XCTAssertEqual(e2?.message, "rejected by validator silent")

        // Removal: saves pass again.
        try c.setValidator(name: "no-bad", nil)
        try c.setValidator(name: "silent", nil)
        XCTAssertNoThrow(try c.put(docID: "nope", json: #"{"bad":1}"#, parent: nil))
        XCTAssertNoThrow(try c.put(docID: "s", json: #"{"silent":1}"#, parent: nil))
        try c.setValidator(name: "never-set", nil)          // removing an unknown name is harmless
        assertStatus(.badRequest, try c.setValidator(name: "", nil))
    }

    func testReplacingAValidatorOfTheSameName() throws {
        let db = try open()
        let c = try db.defaultCollection()
        try c.setValidator(name: "v") { _, _ in "first" }
        XCTAssertEqual(assertStatus(.forbidden, try c.put(docID: "a", json: "{}", parent: nil))?.message, "first")
        try c.setValidator(name: "v") { _, _ in "second" }
        XCTAssertEqual(assertStatus(.forbidden, try c.put(docID: "a", json: "{}", parent: nil))?.message, "second")
        try c.setValidator(name: "v") { _, _ in nil }
        XCTAssertNoThrow(try c.put(docID: "a", json: "{}", parent: nil))
    }

    func testValidatorSeesNewAndCurrentRevisions() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let seen = Locked<[(String, String?)]>([])
        try c.setValidator(name: "spy") { new, cur in seen.with { $0.append((new, cur)) }; return nil }

        let r1 = try c.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        var (new, cur) = seen.get().last!
        var n = obj(new)
        XCTAssertEqual(n["_id"], .string("d"))
        XCTAssertEqual(n["_rev"], .string(r1.revID))
        XCTAssertEqual(n["v"], .int(1))
        XCTAssertNil(n["_deleted"])
        XCTAssertNil(cur, "creation: no current revision")

        let r2 = try c.put(docID: "d", json: #"{"v":2}"#, parent: r1.revID)
        (new, cur) = seen.get().last!
        XCTAssertEqual(obj(new)["_rev"], .string(r2.revID))
        let curObj = obj(try XCTUnwrap(cur))
        XCTAssertEqual(curObj["_rev"], .string(r1.revID))
        XCTAssertEqual(curObj["v"], .int(1))

        let t = try c.delete(docID: "d", parent: nil)
        (new, cur) = seen.get().last!
        n = obj(new)
        XCTAssertEqual(n["_rev"], .string(t))
        XCTAssertEqual(n["_deleted"], .bool(true))
        XCTAssertEqual(obj(try XCTUnwrap(cur))["_rev"], .string(r2.revID))

        _ = try c.update(docID: "u") { _ in #"{"via":"update"}"# }
        XCTAssertEqual(obj(seen.get().last!.0)["via"], .string("update"))

        try c.putExisting(docID: "x", json: #"{"via":"replication"}"#, history: ["2-b", "1-a"])
        n = obj(seen.get().last!.0)
        XCTAssertEqual(n["via"], .string("replication"))
        XCTAssertEqual(n["_rev"], .string("2-b"))
        XCTAssertEqual(n["_id"], .string("x"))
        XCTAssertEqual(seen.get().count, 5)
    }

    func testRejectionAppliesToEveryWritePath() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let r1 = try c.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        try c.putExisting(docID: "d", json: #"{"v":"peer"}"#, history: ["2-peer", r1.revID])
        let rec = ChangeRecorder()
        let token = try c.addChangeObserver(rec.callback)
        defer { token.remove() }
        let seq = try c.lastSequence
        try c.setValidator(name: "freeze") { _, _ in "frozen" }
        assertStatus(.forbidden, try c.put(docID: "d", json: "{}", parent: "2-peer"))
        assertStatus(.forbidden, try c.put(docID: "new", json: "{}", parent: nil))
        assertStatus(.forbidden, try c.delete(docID: "d", parent: nil))
        assertStatus(.forbidden, try c.update(docID: "d") { _ in "{}" }, "403 is not retried")
        assertStatus(.forbidden, try c.putExisting(docID: "d", json: "{}", history: ["3-x", "2-peer"]))
        assertStatus(.forbidden, try c.putExisting(docID: "fresh", json: "{}", history: ["1-x"]))
        // Inside a transaction the rejected save leaves no trace, the rest commits.
        try c.setValidator(name: "freeze", nil)
        try c.setValidator(name: "only-ok") { new, _ in obj(new)["ok"] == .bool(true) ? nil : "not ok" }
        try db.inTransaction {
            _ = try c.put(docID: "t1", json: #"{"ok":true}"#, parent: nil)
            assertStatus(.forbidden, try c.put(docID: "t2", json: #"{"ok":false}"#, parent: nil))
            return true
        }
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.events.map(\.docID), ["t1"])
        XCTAssertEqual(try c.lastSequence, seq + 1)
        XCTAssertEqual(try c.doc("d")["_rev"], .string("2-peer"))
        assertStatus(.notFound, try c.get(docID: "t2"))
        assertSound(db)
    }

    func testValidatorsArePerCollectionAndSharedByHandles() throws {
        let h1 = try open()
        let h2 = try open()
        let c1 = try h1.createCollection(scope: nil, name: "guarded")
        let c2 = try XCTUnwrap(try h2.collection(scope: nil, name: "guarded"))
        try c1.setValidator(name: "no") { _, _ in "no" }
        assertStatus(.forbidden, try c2.put(docID: "a", json: "{}", parent: nil), "other handle, same collection")
        XCTAssertNoThrow(try h2.defaultCollection().put(docID: "a", json: "{}", parent: nil), "other collection")
        try c2.setValidator(name: "no", nil)
        XCTAssertNoThrow(try c1.put(docID: "a", json: "{}", parent: nil))
    }

    func testValidatorMayReadThroughTheLibrary() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "config", json: #"{"max":3}"#, parent: nil)
        try c.setValidator(name: "limit") { new, _ in
            let max = (try? c.doc("config")["max"]?.intValue) ?? nil
            guard let max else { return "cannot read config" }
            return (obj(new)["n"]?.intValue ?? 0) > max ? "n above \(max)" : nil
        }
        XCTAssertNoThrow(try c.put(docID: "a", json: #"{"n":3}"#, parent: nil))
        XCTAssertEqual(assertStatus(.forbidden, try c.put(docID: "b", json: #"{"n":4}"#, parent: nil))?.message, "n above 3")
    }
}
