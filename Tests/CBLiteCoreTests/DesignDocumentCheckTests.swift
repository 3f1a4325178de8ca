import XCTest
@testable import CBLiteCore

/// Design documents are checked when written, as CouchDB 3.5 does: shapes, built-in
/// reduce names, and their view and filter functions compiling (validate_doc_update is not).
final class DesignDocumentCheckTests: CBLTestCase {
    private func refusal(_ c: Collection, _ body: String) -> DesignDocumentRefusal? {
        do {
            _ = try c.put(docID: "_design/d", json: body, parent: nil)
            return nil
        } catch let e as CBLError {
            XCTAssertEqual(e.status, .badRequest, e.message)
            return e.designDocumentRefusal
        } catch {
            XCTFail("\(error)")
            return nil
        }
    }

    func testBrokenDesignDocumentsAreRefusedInCouchDBsTerms() throws {
        let c = try open().defaultCollection()
        XCTAssertEqual(refusal(c, #"{"views":{"v":{"map":"function(doc){ emit(doc._id, ; }"}}}"#), .compilation)
        XCTAssertEqual(refusal(c, #"{"views":{"v":{"map":"emit(1, 2)"}}}"#), .compilation)
        XCTAssertEqual(refusal(c, #"{"views":{"v":{"map":"function(doc){}","reduce":"function(k, v) {"}}}"#), .compilation)
        XCTAssertEqual(refusal(c, #"{"filters":{"f":"function(doc, req) { return ; ; ) }"}}"#), .compilation)
        XCTAssertEqual(refusal(c, #"{"views":"notanobject"}"#), .invalid)
        XCTAssertEqual(refusal(c, #"{"views":{"v":{"reduce":"_count"}}}"#), .invalid)
        XCTAssertEqual(refusal(c, #"{"views":{"v":{"map":"function(doc){ emit(1, 1); }","reduce":"_unknown"}}}"#), .invalid)
        XCTAssertEqual(refusal(c, #"{"filters":{"f":42}}"#), .invalid)
        assertStatus(.notFound, try c.get(docID: "_design/d"))
        // Replicated revisions too (CouchDB's new_edits=false).
        XCTAssertThrowsError(try c.putExisting(docID: "_design/d", json: #"{"views":{"v":{"map":"function( {"}}}"#, history: ["1-e"]))
        assertStatus(.notFound, try c.get(docID: "_design/d"))
    }

    /// Once the collection is known to have no validator (a plain write looked), design
    /// documents are still checked, created or updated.
    func testCheckedWhenTheCollectionHasNoValidator() throws {
        let c = try open().defaultCollection()
        _ = try c.put(docID: "plain", json: #"{"a":1}"#, parent: nil)
        _ = try c.put(docID: "plain2", json: #"{"a":2}"#, parent: nil)
        XCTAssertEqual(refusal(c, #"{"views":{"v":{"map":"function(doc){ emit(doc._id, ; }"}}}"#), .compilation)
        let rev = try c.put(docID: "_design/sound", json: #"{"views":{"v":{"map":"function(doc){ emit(doc._id, 1); }"}}}"#, parent: nil)
        _ = try c.put(docID: "plain3", json: #"{"a":3}"#, parent: nil)
        XCTAssertThrowsError(try c.put(docID: "_design/sound", json: #"{"views":{"v":{"map":"function( {"}}}"#, parent: rev.revID))
    }

    /// A function whose expression never ends evaluating (or fills the heap) is refused as
    /// not compiling, within the time limit: a 400, not a 500.
    func testALoopingOrHugeExpressionIsACompilationError() throws {
        let saved = JSLimits.current
        JSLimits.current = JSLimits(timeoutMs: 200, memoryBytes: 4 << 20)
        defer { JSLimits.current = saved }
        let c = try open().defaultCollection()
        let started = MonotonicTime.now()
        XCTAssertEqual(refusal(c, #"{"views":{"v":{"map":"(function () { for (;;) {} })() || function (doc) {}"}}}"#), .compilation)
        XCTAssertEqual(refusal(c, #"{"filters":{"f":"(function () { var s = 'x'; for (;;) s = s + s; })()"}}"#), .compilation)
        XCTAssertLessThan(MonotonicTime.now().milliseconds - started.milliseconds, 3000)
        do {
            _ = try c.put(docID: "_design/d", json: #"{"views":{"v":{"map":"(function () { for (;;) {} })()"}}}"#, parent: nil)
            XCTFail("a looping expression was stored")
        } catch let e as CBLError {
            XCTAssertTrue(e.message.contains("Compilation of the map function in the 'v' view failed: execution timeout"), e.message)
        }
        XCTAssertNil(refusal(c, #"{"views":{"v":{"map":"function (doc) { for (;;) {} }"}}}"#))   // only its calls loop
    }

    func testSoundOnesAndValidateDocUpdatePass() throws {
        let c = try open().defaultCollection()
        XCTAssertNil(refusal(c, #"""
            {"views":{"lib":{"m":"exports.x = 1;"},"v":{"map":"function(doc){ emit(doc._id, 1); }","reduce":"_sum"},
                      "w":{"map":"function(doc){}","reduce":"function(k, v, re) { return sum(v); }"}},
             "filters":{"f":"function(doc, req) { return true; }"},
             "validate_doc_update":"function( {"}
            """#))
        _ = try c.put(docID: "_design/q", json: #"{"language":"query","views":{"n":{"map":{"fields":{"name":"asc"}},"reduce":"_count"}}}"#, parent: nil)
    }
}
