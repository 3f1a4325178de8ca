import XCTest
@testable import CBLiteCore

/// Design documents' `validate_doc_update(newDoc, oldDoc, userCtx, secObj)` on every write
/// path, with CouchDB's meaning of what it throws.
final class JavaScriptValidationTests: CBLTestCase {
    /// Refuses by what the new revision asks for; `show` refuses with what the function saw.
    static let validator = #"""
        {"validate_doc_update": "function (newDoc, oldDoc, userCtx, secObj) { if (newDoc.forbid) throw({forbidden: 'no ' + newDoc._id}); if (newDoc.login) throw({unauthorized: 'log in'}); if (newDoc.other) throw('plain'); if (newDoc.error) throw new Error('broken'); if (newDoc.loop) for (;;) {} if (newDoc.show) throw({forbidden: JSON.stringify({old: oldDoc, user: userCtx, sec: secObj, revs: newDoc._revisions})}); if (newDoc._deleted && oldDoc && oldDoc.keep) throw({forbidden: 'keep ' + oldDoc._rev}); }"}
        """#

    private func refusal<T>(_ expr: @autoclosure () throws -> T) -> CBLError? {
        do { _ = try expr(); return nil } catch { return error as? CBLError }
    }

    func testThrowsMapToCouchDBAnswers() throws {
        let saved = JSLimits.current
        JSLimits.current = JSLimits(timeoutMs: 200)
        defer { JSLimits.current = saved }
        let db = try open()
        let c = try db.defaultCollection()
        let before = try c.put(docID: "before", json: #"{"v":1}"#, parent: nil)     // no validator yet: cached as none
        _ = try c.put(docID: "_design/v", json: Self.validator, parent: nil)
        let forbidden = refusal(try c.put(docID: "x", json: #"{"forbid":true}"#, parent: nil))
        XCTAssertEqual(forbidden?.status, .forbidden)
        XCTAssertEqual(forbidden?.message, "no x")
        let login = refusal(try c.put(docID: "x", json: #"{"login":true}"#, parent: nil))
        XCTAssertEqual(login?.status, .unauthorized)
        XCTAssertEqual(login?.message, "log in")
        let plain = refusal(try c.put(docID: "x", json: #"{"other":true}"#, parent: nil))
        XCTAssertEqual(plain?.status, .internalError)
        XCTAssertEqual(plain?.message, "plain")
        assertStatus(.internalError, try c.put(docID: "x", json: #"{"error":true}"#, parent: nil))
        let start = Date()
        assertStatus(.internalError, try c.put(docID: "x", json: #"{"loop":true}"#, parent: nil))
        XCTAssertLessThan(Date().timeIntervalSince(start), 5, "stopped by the time limit")
        // An update of an older document is validated too (the fast path is not taken).
        assertStatus(.forbidden, try c.put(docID: "before", json: #"{"forbid":true}"#, parent: before.revID))
        assertStatus(.notFound, try c.get(docID: "x"))
        // Accepted writes go through; design documents are not validated (CouchDB checks admins only).
        let x = try c.put(docID: "x", json: #"{"keep":true}"#, parent: nil)
        _ = try c.put(docID: "_design/other", json: #"{"forbid":true}"#, parent: nil)
        // A deletion is newDoc {_id, _rev, _deleted: true} against the revision it replaces.
        let deletion = refusal(try c.delete(docID: "x", parent: nil))
        XCTAssertEqual(deletion?.message, "keep \(x.revID)")
        // Removing the design document removes its validator.
        _ = try c.delete(docID: "_design/v", parent: nil)
        _ = try c.put(docID: "y", json: #"{"forbid":true}"#, parent: nil)
        _ = try c.delete(docID: "x", parent: nil)
        assertSound(db)
    }

    func testArgumentsOldDocUserAndSecurity() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "_design/v", json: Self.validator, parent: nil)
        func seen(_ put: () throws -> Any) throws -> JSONObject {
            guard let e = refusal(try put()), e.status == .forbidden else { XCTFail("not refused"); return JSONObject() }
            return obj(e.message)
        }
        // A new document: oldDoc null; the API's writes are the local admin, with the stored _security.
        let new = try seen { try c.put(docID: "d", json: #"{"show":1}"#, parent: nil) }
        XCTAssertEqual(new["old"], .null)
        XCTAssertEqual(new["user"], .object(obj(#"{"db":"\#(db.name)","name":null,"roles":["_admin"]}"#)))
        XCTAssertEqual(new["sec"], .object(JSONObject()))
        try db.setSecurityObject(try SecurityObject(json: #"{"admins":{"names":["ann"]}}"#))
        let r1 = try c.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        let update = try seen { try c.put(docID: "d", json: #"{"show":2}"#, parent: r1.revID) }
        XCTAssertEqual(update["old"], .object(obj(#"{"_id":"d","_rev":"\#(r1.revID)","v":1}"#)))
        XCTAssertEqual(update["sec"], .object(obj(#"{"admins":{"names":["ann"]}}"#)))
        XCTAssertEqual(update["revs"]?.objectValue?["start"], .int(2))
        XCTAssertEqual(update["revs"]?.objectValue?["ids"]?.arrayValue?.last, .string(RevID(r1.revID)!.digest))
        // A listener binds its user.
        let user = WriteUser(name: "bob", roles: ["staff"], db: "served", security: { JSONObject([("x", .int(1))]) })
        let bob = try WriteUser.$current.withValue(user) { try seen { try c.put(docID: "b", json: #"{"show":3}"#, parent: nil) } }
        XCTAssertEqual(bob["user"], .object(obj(#"{"db":"served","name":"bob","roles":["staff"]}"#)))
        XCTAssertEqual(bob["sec"], .object(obj(#"{"x":1}"#)))
        // A replicated revision: oldDoc is its nearest stored ancestor.
        let pulled = try seen { try c.putExisting(docID: "d", json: #"{"show":4}"#, history: ["3-b", "2-a", r1.revID]) }
        XCTAssertEqual(pulled["old"]?.objectValue?["_rev"], .string(r1.revID))
        let fresh = try seen { try c.putExisting(docID: "fresh", json: #"{"show":5}"#, history: ["1-a"]) }
        XCTAssertEqual(fresh["old"], .null)
        // Re-created on a tombstone: oldDoc null, as CouchDB has it.
        _ = try c.delete(docID: "d", parent: nil)
        XCTAssertEqual(try seen { try c.put(docID: "d", json: #"{"show":6}"#, parent: nil) }["old"], .null)
    }

    func testBatchesFailOneDocumentAndNativeValidatorsRunFirst() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "_design/v", json: Self.validator, parent: nil)
        let bulk = try c.saveDocuments([obj(#"{"_id":"a","forbid":true}"#), obj(#"{"_id":"b","login":true}"#), obj(#"{"_id":"c"}"#)])
        XCTAssertEqual(bulk.map { $0.error?.status }, [.forbidden, .unauthorized, nil])
        XCTAssertEqual(bulk[0].error?.message, "no a")
        let pulled = try c.insertExistingRevisions([
            .init(body: obj(#"{"_id":"p","_rev":"1-aa","forbid":true}"#)), .init(body: obj(#"{"_id":"q","_rev":"1-bb"}"#)),
        ])
        XCTAssertEqual(pulled.map { $0.error?.status }, [.forbidden, nil])
        XCTAssertEqual(["a", "b", "c", "p", "q"].map { (try? c.get(docID: $0)) != nil }, [false, false, true, false, true])
        try c.setValidator(name: "native") { new, _ in obj(new)["native"] != nil ? "native says no" : nil }
        let both = refusal(try c.put(docID: "n", json: #"{"native":1,"forbid":true}"#, parent: nil))
        XCTAssertEqual(both?.message, "native says no")
        XCTAssertEqual(refusal(try c.put(docID: "n", json: #"{"forbid":true}"#, parent: nil))?.message, "no n")
        // A design document written in a transaction that rolls back leaves no validator behind.
        assertStatus(.conflict, try db.inTransaction {       // a body answering false aborts (409)
            _ = try c.put(docID: "_design/w", json: #"{"validate_doc_update":"function (d) { throw({forbidden: 'w'}); }"}"#, parent: nil)
            assertStatus(.forbidden, try c.put(docID: "in", json: "{}", parent: nil))
            return false
        })
        _ = try c.put(docID: "after", json: "{}", parent: nil)
    }
}
