import XCTest
@testable import CBLiteCore

/// The changes feed's design-document filters: `_design`, `_view` and JavaScript
/// `filters.NAME(doc, req)` with the feed's parameters in req.query.
final class JavaScriptFilterTests: CBLTestCase {
    private func ids(_ c: Collection, _ filter: String, _ params: JSONObject = JSONObject()) throws -> [String] {
        var o = ChangesOptions()
        o.filter = filter
        o.filterParams = params
        return try c.changes(since: 0, options: o).map(\.docID)
    }

    func testDesignViewAndJavaScriptFilters() throws {
        let saved = JSLimits.current
        JSLimits.current = JSLimits(timeoutMs: 200)
        defer { JSLimits.current = saved }
        let c = try open().defaultCollection()
        for (id, type) in [("a", "veg"), ("b", "fruit"), ("c", "veg"), ("loop", "loop"), ("bad", "bad")] {
            _ = try c.put(docID: id, json: #"{"type":"\#(type)"}"#, parent: nil)
        }
        _ = try c.put(docID: "_design/app", json: #"""
            {"filters": {"by_type": "function (doc, req) { if (doc.type == 'loop') for (;;) {} if (doc.type == 'bad') throw 'bad'; return doc.type == req.query.type; }",
                         "truthy": "function (doc) { return doc.type == 'veg' ? 1 : 0; }"},
             "views": {"veg": {"map": "function (doc) { if (doc.type == 'veg') emit(doc._id); }"}}}
            """#, parent: nil)
        XCTAssertEqual(try ids(c, "_design"), ["_design/app"])
        XCTAssertEqual(try ids(c, "app/by_type", JSONObject([("type", .string("veg"))])), ["a", "c"])
        XCTAssertEqual(try ids(c, "app/by_type", JSONObject([("type", .string("fruit"))])), ["b"])
        XCTAssertEqual(try ids(c, "app/truthy"), [], "a filter passes a document only when it returns true")
        XCTAssertEqual(try ids(c, "_view", JSONObject([("view", .string("app/veg"))])), ["a", "c"])
        assertStatus(.notFound, try ids(c, "app/missing"))
        assertStatus(.notFound, try ids(c, "nope/x"))
        assertStatus(.notFound, try ids(c, "_view", JSONObject([("view", .string("app/missing"))])))
        assertStatus(.badRequest, try ids(c, "_view"))
        // A registered filter of the same name wins.
        try c.database.setFilter(name: "app/by_type") { _, _ in true }
        XCTAssertEqual(try ids(c, "app/by_type").count, 6)
    }
}
