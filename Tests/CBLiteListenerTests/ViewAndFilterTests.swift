import CBLiteCore
@testable import CBLiteListener
import XCTest

final class ViewAndFilterTests: ListenerTestCase {
    func testRegisteredViewsAreQueriedWithCouchDBParameters() throws {
        let db = try Database.open(name: "shop", directory: directory)
        defer { try? db.close() }
        let coll = try db.defaultCollection()
        for (id, price) in [("apple", 3), ("pear", 5), ("fig", 9)] {
            _ = try coll.put(docID: id, json: #"{"price":\#(price)}"#, parent: nil)
        }
        let view = try coll.view(named: "prices")
        view.setMapReduce(map: { doc, emit in
            if let p = try doc.object["price"] { emit.emit(p, p) }
        }, reduce: Reducer(builtin: "_sum"), version: "1")
        listener = try Listener(configuration: #"{"port":0}"#)
        try listener.serve(name: "shop", database: db)
        listener.serveView(view, database: "shop", designDoc: "d", name: "prices")
        try listener.start()
        let c = try client()
        let rows = try c.request("GET", "/shop/_design/d/_view/prices?reduce=false&startkey=4").object
        XCTAssertEqual(rows["rows"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue }, ["pear", "fig"])
        XCTAssertEqual(rows["total_rows"], .int(3))
        let sum = try c.request("GET", "/shop/_design/d/_view/prices").object["rows"]?.arrayValue?.first?.objectValue?["value"]
        XCTAssertEqual(sum?.intValue, 17)
        let keyed = try c.json("POST", "/shop/_design/d/_view/prices?reduce=false", #"{"keys":[9,3]}"#).object["rows"]?.arrayValue
        XCTAssertEqual(keyed?.compactMap { $0.objectValue?["id"]?.stringValue }, ["fig", "apple"])
        XCTAssertEqual(try c.request("GET", "/shop/_design/d/_view/nope").object["reason"], .string("missing_named_view"))
        XCTAssertEqual(try c.request("GET", "/shop/_design/d/_view/prices?limit=x").status, 400)
        // A stored design document's JavaScript view runs, on the same index mechanism.
        let js = try c.json("PUT", "/shop/_design/js", #"{"views":{"v":{"map":"function(doc){ if (doc.price > 4) emit(doc._id, doc.price); }","reduce":"_sum"}}}"#)
        XCTAssertEqual(js.status, 201)
        let mapped = try c.request("GET", "/shop/_design/js/_view/v?reduce=false&update_seq=true")
        XCTAssertEqual(mapped.status, 200)
        XCTAssertEqual(String(decoding: mapped.body, as: UTF8.self),
                       "{\"total_rows\":2,\"offset\":0,\"update_seq\":4,\"rows\":[\n{\"id\":\"fig\",\"key\":\"fig\",\"value\":9},\n{\"id\":\"pear\",\"key\":\"pear\",\"value\":5}\n]}\n")
        XCTAssertEqual(String(decoding: try c.request("GET", "/shop/_design/js/_view/v").body, as: UTF8.self), "{\"rows\":[\n{\"key\":null,\"value\":14}\n]}\n")
        XCTAssertEqual(try c.json("POST", "/shop/_design/js/_view/v", #"{"keys":["pear"],"reduce":false}"#).object["rows"]?.arrayValue?.count, 1)
        XCTAssertEqual(try c.request("GET", "/shop/_design/js/_view/other").object["reason"], .string("missing_named_view"))
        XCTAssertEqual(try c.request("GET", "/shop/_design/none/_view/other").object["reason"], .string("missing"))
        let info = try c.request("GET", "/shop/_design/js/_info").object
        XCTAssertEqual(info["name"], .string("js"))
        XCTAssertEqual(info["view_index"]?.objectValue?["update_seq"], .int(4))
        XCTAssertEqual(try c.request("GET", "/shop/_design/none/_info").status, 404)
        // _view_cleanup drops the index of a view the design document no longer has.
        XCTAssertEqual(try coll.viewNames().sorted(), ["js/v", "prices"])
        let stored = try c.request("GET", "/shop/_design/js").object
        XCTAssertEqual(try c.json("PUT", "/shop/_design/js?rev=" + (stored["_rev"]?.stringValue ?? ""), #"{"views":{}}"#).status, 201)
        XCTAssertEqual(try c.json("POST", "/shop/_view_cleanup", "").status, 202)
        XCTAssertEqual(try coll.viewNames(), ["prices"])
        let show = try c.request("GET", "/shop/_design/plain/_show/x")
        XCTAssertEqual(show.status, 501)
        XCTAssertTrue(show.object["reason"]?.stringValue?.contains("deprecated") == true)
    }

    func testRegisteredViewsAnswerFullTextQueries() throws {
        let db = try Database.open(name: "notes", directory: directory)
        defer { try? db.close() }
        let coll = try db.defaultCollection()
        for (id, text) in [("a", "coffee coffee beans"), ("b", "tea with milk"), ("c", "a coffee with milk")] {
            _ = try coll.put(docID: id, json: #"{"text":"\#(text)"}"#, parent: nil)
        }
        let view = try coll.view(named: "texts")
        view.setMapReduce(map: { doc, emit in
            if case .string(let t)? = try doc.object["text"] { emit.emit(text: t, .int(1)) }
        }, reduce: Reducer(builtin: "_count"), version: "1")
        listener = try Listener(configuration: #"{"port":0}"#)
        try listener.serve(name: "notes", database: db)
        listener.serveView(view, database: "notes", designDoc: "d", name: "texts")
        try listener.start()
        let c = try client()
        // Map rows (the view's reduce does not apply), the match as key, the offset its skip.
        let answer = try c.request("GET", #"/notes/_design/d/_view/texts?full_text_query="coffee"&skip=1"#).object
        XCTAssertEqual(answer["offset"], .int(1))
        XCTAssertEqual(answer["total_rows"], .int(3))
        let rows = answer["rows"]?.arrayValue ?? []
        XCTAssertEqual(rows.compactMap { $0.objectValue?["id"]?.stringValue }, ["c"])
        XCTAssertEqual(rows.first?.objectValue?["key"]?.objectValue?["text"], .string("a coffee with milk"))
        XCTAssertEqual(rows.first?.objectValue?["value"], .int(1))
        let bad = try c.request("GET", #"/notes/_design/d/_view/texts?full_text_query="coffee%20AND""#)
        XCTAssertEqual(bad.status, 400)
        XCTAssertTrue(bad.object["reason"]?.stringValue?.hasSuffix("at position 7") == true)
    }

    func testNamedFiltersWithQueryParameters() throws {
        let db = try Database.open(name: "db", directory: directory)
        defer { try? db.close() }
        let coll = try db.defaultCollection()
        for (id, color) in [("a", "red"), ("b", "blue"), ("c", "red")] {
            _ = try coll.put(docID: id, json: #"{"color":"\#(color)"}"#, parent: nil)
        }
        try db.setFilter(name: "by/color") { json, params in
            let doc = json.withUnsafeBufferPointer { try? JSONParser.parseObject(bytes: $0) }
            return doc?["color"] == params["color"]
        }
        listener = try Listener(configuration: #"{"port":0}"#)
        try listener.serve(name: "db", database: db)
        try listener.start()
        let c = try client()
        let rows = try c.request("GET", "/db/_changes?filter=by/color&color=red").object["results"]?.arrayValue
        XCTAssertEqual(rows?.compactMap { $0.objectValue?["id"]?.stringValue }, ["a", "c"])
        XCTAssertEqual(try c.request("GET", "/db/_changes?filter=unknown").status, 404)
        XCTAssertEqual(try c.request("GET", "/db/_changes?filter=_view").object["reason"], .string("`view` filter parameter is not provided."))
        XCTAssertEqual(try c.request("GET", "/db/_changes?filter=_view&view=d/v").status, 404, "no design document d")
        // A design document's JavaScript filter, with the query's parameters in req.query.
        XCTAssertEqual(try c.json("PUT", "/db/_design/app", #"{"filters":{"color":"function (doc, req) { return doc.color == req.query.c; }"},"views":{"blue":{"map":"function (doc) { if (doc.color == 'blue') emit(null); }"}}}"#).status, 201)
        let red = try c.request("GET", "/db/_changes?filter=app/color&c=red").object["results"]?.arrayValue
        XCTAssertEqual(red?.compactMap { $0.objectValue?["id"]?.stringValue }, ["a", "c"])
        let blue = try c.request("GET", "/db/_changes?filter=_view&view=app/blue").object["results"]?.arrayValue
        XCTAssertEqual(blue?.compactMap { $0.objectValue?["id"]?.stringValue }, ["b"])
        let design = try c.request("GET", "/db/_changes?filter=_design").object["results"]?.arrayValue
        XCTAssertEqual(design?.compactMap { $0.objectValue?["id"]?.stringValue }, ["_design/app"])
        XCTAssertEqual(try c.request("GET", "/db/_changes?filter=app/none").object["reason"], .string("missing json key: none"))
    }

    func testGzipRequestBodies() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        // gzip of {"zipped":true} (made with Python's gzip module).
        let gz: [UInt8] = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xab, 0x56, 0xaa, 0xca, 0x2c, 0x28,
                           0x48, 0x4d, 0x51, 0xb2, 0x2a, 0x29, 0x2a, 0x4d, 0xad, 0x05, 0x00, 0x84, 0x28, 0xbc, 0x08, 0x0f,
                           0x00, 0x00, 0x00]
        let r = try c.request("PUT", "/db/z", headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")], body: gz)
        XCTAssertEqual(r.status, 201, r.text)
        XCTAssertEqual(try c.request("GET", "/db/z").object["zipped"], .bool(true))
        let bad = try client().request("PUT", "/db/y", headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")], body: Array("not gzip".utf8))
        XCTAssertEqual(bad.status, 400)
        XCTAssertEqual(try client().request("PUT", "/db/w", headers: [("Content-Encoding", "br")], body: [1]).status, 415)
    }
}
