import XCTest
@testable import CBLiteCore

/// Design documents' JavaScript views: one more MapFunction over the same index native
/// views have, by the name "DDOC/VIEW".
final class JavaScriptViewTests: CBLTestCase {
    private func putDesign(_ c: Collection, _ name: String, _ body: String, parent: String? = nil) throws -> String {
        try c.put(docID: "_design/" + name, json: body, parent: parent).revID
    }

    private func people(_ c: Collection) throws {
        let names = ["ann", "bob", "cy", "di", "ed", "flo", "gus"]
        for (i, n) in names.enumerated() {
            _ = try c.put(docID: "p\(i)", json: #"{"type":"person","age":\#(20 + i % 3),"name":"\#(n)"}"#, parent: nil)
        }
        _ = try c.put(docID: "x", json: #"{"type":"pet","age":3}"#, parent: nil)
        _ = try c.put(docID: "y", json: #"{"type":"person","age":"old","name":["z"]}"#, parent: nil)
    }

    /// The query's JSON without its sequences (update_seq, each row's seq); reduced
    /// queries: only the rows.
    private func rows(_ v: View, _ options: String = "{}") throws -> String {
        var o = obj(try v.query(QueryOptions(json: options)).json())
        o["update_seq"] = nil
        guard case .array(let rows)? = o["rows"] else { return "no rows" }
        o["rows"] = .array(rows.map { r -> JSONValue in
            guard var row = r.objectValue else { return r }
            row["seq"] = nil
            return .object(row)
        })
        if rows.first?.objectValue?["id"] == nil && rows.first != nil { o = JSONObject([("rows", o["rows"]!)]) }
        return String(decoding: JSONWriter.ordered(.object(o)), as: UTF8.self)
    }

    func testAJavaScriptViewGivesTheNativeViewsRows() throws {
        let c = try open().defaultCollection()
        try people(c)
        _ = try putDesign(c, "d", #"""
            {"views": {"byAge": {"map": "function (doc) { if (doc.type == 'person') emit(doc.age, doc.name); }", "reduce": "_count"}}}
            """#)
        let native = try c.view(named: "native")
        native.setMapReduce(map: { doc, emit in
            let o = try doc.object
            if o["type"]?.stringValue == "person" { emit.emit(o["age"] ?? .null, o["name"] ?? .null) }
        }, reduce: .count, version: "1")
        let js = try c.view(named: "d/byAge")
        for options in [#"{"reduce":false}"#, "{}", #"{"group":true}"#, #"{"reduce":false,"descending":true,"limit":3,"skip":1}"#,
                        #"{"reduce":false,"startkey":21,"endkey":22,"inclusive_end":false}"#, #"{"reduce":false,"include_docs":true}"#,
                        #"{"reduce":false,"keys":[22,"old",20]}"#, #"{"reduce":false,"sorted":false}"#] {
            XCTAssertEqual(try rows(js, options), try rows(native, options), options)
        }
        // CouchDB's sorted=false: any order, the same set (here still key order).
        XCTAssertEqual(try rows(js, #"{"reduce":false,"sorted":false}"#), try rows(js, #"{"reduce":false}"#))
        XCTAssertThrowsError(try QueryOptions(json: #"{"sorted":"no"}"#))
        XCTAssertEqual(try rows(js, "{}"), #"{"rows":[{"key":null,"value":8}]}"#)
        XCTAssertEqual(try c.viewNames().sorted(), ["d/byAge", "native"])
    }

    func testReduceInJavaScriptWithRereduceAndTheHelpers() throws {
        let c = try open().defaultCollection()
        try people(c)
        _ = try putDesign(c, "d", #"""
            {"views": {
              "lib": {"util": "exports.twice = function (x) { return require('./more').k * x; };", "more": "exports.k = 2;"},
              "n": {"map": "function (doc) { if (typeof doc.age == 'number') emit([doc.type, doc.age], require('views/lib/util').twice(doc.age)); }",
                    "reduce": "function (keys, values, rereduce) { if (!rereduce && !isArray(keys[0])) throw 'bad keys'; return sum(values); }"},
              "s": {"map": "function (doc) { emit(toJSON(doc.name || null), null); }"}}}
            """#)
        let saved = Reduction.defaultChunkSize
        Reduction.defaultChunkSize = 2        // several reduce calls and rereduces
        defer { Reduction.defaultChunkSize = saved }
        let v = try c.view(named: "d/n")
        XCTAssertEqual(try rows(v), #"{"rows":[{"key":null,"value":298}]}"#)
        XCTAssertEqual(try rows(v, #"{"group_level":1}"#), #"{"rows":[{"key":["person"],"value":292},{"key":["pet"],"value":6}]}"#)
        let s = try c.view(named: "d/s")
        XCTAssertEqual(try rows(s, #"{"keys":["null","\"ann\""]}"#),
                       #"{"total_rows":9,"offset":0,"rows":[{"id":"x","key":"null","value":null},{"id":"p0","key":"\"ann\"","value":null}]}"#)
    }

    /// CouchDB's reduce arguments: keys as [key, doc ID] on the first pass; every answered
    /// value comes out of a final rereduce, even over a single chunk (the recording's
    /// js_reduce answers "rereduced": true for 8 rows, and per group).
    func testJavaScriptReduceSeesDocIDsAndEndsWithARereduce() throws {
        let c = try open().defaultCollection()
        try people(c)
        _ = try putDesign(c, "d", #"""
            {"views": {"r": {"map": "function (doc) { if (doc.type == 'person' && typeof doc.age == 'number') emit(doc.age, 1); }",
              "reduce": "function (keys, values, rereduce) { if (rereduce) { var ids = []; for (var i = 0; i < values.length; i++) ids = ids.concat(values[i].ids); return {ids: ids.sort(), rereduced: true}; } return {ids: keys.map(function (k) { return k[0] + ':' + k[1]; }), rereduced: false}; }"}}}
            """#)
        let v = try c.view(named: "d/r")
        XCTAssertEqual(try rows(v), #"{"rows":[{"key":null,"value":{"ids":["20:p0","20:p3","20:p6","21:p1","21:p4","22:p2","22:p5"],"rereduced":true}}]}"#)
        XCTAssertEqual(try rows(v, #"{"group":true,"startkey":21}"#),
                       #"{"rows":[{"key":21,"value":{"ids":["21:p1","21:p4"],"rereduced":true}},{"key":22,"value":{"ids":["22:p2","22:p5"],"rereduced":true}}]}"#)
        let saved = Reduction.defaultChunkSize
        Reduction.defaultChunkSize = 2        // several chunks: their results rereduced once more
        defer { Reduction.defaultChunkSize = saved }
        XCTAssertEqual(try rows(v), #"{"rows":[{"key":null,"value":{"ids":["20:p0","20:p3","20:p6","21:p1","21:p4","22:p2","22:p5"],"rereduced":true}}]}"#)
    }

    func testAThrowingOrLoopingMapSkipsOnlyItsDocument() throws {
        let saved = JSLimits.current
        JSLimits.current = JSLimits(timeoutMs: 200)
        defer { JSLimits.current = saved }
        let lines = Locked<[String]>([])
        Log.shared.setSink { _, _, text in lines.with { $0.append(text) } }
        defer { Log.shared.setSink(nil) }
        let c = try open().defaultCollection()
        _ = try c.put(docID: "a", json: #"{"n":1}"#, parent: nil)
        _ = try c.put(docID: "bad", json: #"{"n":2,"bad":true}"#, parent: nil)
        _ = try c.put(docID: "loop", json: #"{"n":3,"loop":true}"#, parent: nil)
        _ = try c.put(docID: "z", json: #"{"n":4}"#, parent: nil)
        _ = try putDesign(c, "d", #"""
            {"views": {"v": {"map": "function (doc) { emit(doc.n, 'before'); if (doc.bad) throw new Error('bad doc'); if (doc.loop) for (;;) {} }"}}}
            """#)
        let started = MonotonicTime.now()
        XCTAssertEqual(try rows(try c.view(named: "d/v")),
                       #"{"total_rows":2,"offset":0,"rows":[{"id":"a","key":1,"value":"before"},{"id":"z","key":4,"value":"before"}]}"#)
        XCTAssertLessThan(MonotonicTime.now().milliseconds - started.milliseconds, 3000)
        let logged = lines.get().filter { $0.contains("_design/d/_view/v") }
        XCTAssertEqual(logged.count, 2, "\(logged)")
        XCTAssertTrue(logged.contains { $0.contains("\"bad\"") && $0.contains("bad doc") }, "\(logged)")
        XCTAssertTrue(logged.contains { $0.contains("\"loop\"") && $0.contains("execution timeout") }, "\(logged)")
    }

    func testTheIndexIsRebuiltWhenTheViewsCodeChangesOnly() throws {
        let c = try open().defaultCollection()
        try people(c)
        var rev = try putDesign(c, "d", #"{"views": {"v": {"map": "function (doc) { if (doc.name == 'ann') emit(1); }"}}}"#)
        let v = try c.view(named: "d/v")
        XCTAssertEqual(try rows(v), #"{"total_rows":1,"offset":0,"rows":[{"id":"p0","key":1,"value":null}]}"#)
        let generation = try v.generation
        // Another member of the design document: same index.
        rev = try putDesign(c, "d", #"{"views": {"v": {"map": "function (doc) { if (doc.name == 'ann') emit(1); }"}}, "filters": {}}"#, parent: rev)
        XCTAssertEqual(try rows(try c.view(named: "d/v")), #"{"total_rows":1,"offset":0,"rows":[{"id":"p0","key":1,"value":null}]}"#)
        XCTAssertEqual(try v.generation, generation)
        // The map changes: rebuilt.
        rev = try putDesign(c, "d", #"{"views": {"v": {"map": "function (doc) { if (doc.name == 'bob') emit(2); }"}}}"#, parent: rev)
        XCTAssertEqual(try rows(try c.view(named: "d/v")), #"{"total_rows":1,"offset":0,"rows":[{"id":"p1","key":2,"value":null}]}"#)
        // A view the design document no longer has: no functions.
        _ = try putDesign(c, "d", #"{"views": {}}"#, parent: rev)
        XCTAssertThrowsError(try c.view(named: "d/v").query()) { XCTAssertEqual(($0 as? CBLError)?.status, .notAcceptable) }
        // API-registered functions win over the design document's.
        let registered = try c.view(named: "d/v")
        registered.setMapReduce(map: { _, emit in emit.emit(.int(7), nil) }, reduce: nil, version: "api")
        XCTAssertEqual(try rows(registered, #"{"limit":1}"#), #"{"total_rows":9,"offset":0,"rows":[{"id":"p0","key":7,"value":null}]}"#)
    }

    func testCompactingADesignDocumentsViewsKeepsTheirRowsAndGivesPagesBack() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try putDesign(c, "d", #"{"views": {"v": {"map": "function (doc) { emit(doc.n, doc.pad); }"}}}"#)
        let pad = String(repeating: "x", count: 2000)
        var firstRevs: [String] = []
        for i in 0..<300 { firstRevs.append(try c.put(docID: "n\(i)", json: #"{"n":\#(i),"pad":"\#(pad)"}"#, parent: nil).revID) }
        let v = try c.view(named: "d/v")
        XCTAssertEqual(try v.query(QueryOptions(json: #"{"key":7}"#)).allRows().count, 1)
        // Deleting most documents frees the index's pages; compacting gives them back.
        for i in 0..<280 { _ = try c.delete(docID: "n\(i)", parent: nil) }
        XCTAssertEqual(try v.query(QueryOptions(json: "{}")).allRows().count, 20)
        let file = db.store.filePath
        let size = { FileSystem.fileSize(file) + max(0, FileSystem.fileSize(file + "-wal")) }
        let before = size()
        try c.compactDesignViews(name: "d")
        XCTAssertLessThan(size(), before - 400_000)     // the 280 deleted rows' 2 KB values
        XCTAssertEqual(try rows(v, #"{"limit":1}"#), #"{"total_rows":20,"offset":0,"rows":[{"id":"n280","key":280,"value":"\#(pad)"}]}"#)
        // Every revision's body is kept: this is not the database's compaction.
        XCTAssertNoThrow(try c.get(docID: "n0", revID: firstRevs[0]))
        XCTAssertThrowsError(try c.compactDesignViews(name: "nope")) { XCTAssertEqual(($0 as? CBLError)?.status, .notFound) }
    }
}
