import XCTest
@testable import CBLiteCore

/// Every query option alone and in combination, built-in and custom reducers, grouping,
/// prefix matching and all-docs modes.
final class ViewQueryTests: CBLCollectionTestCase {
    var c: Collection { coll }

    /// Docs d1..d5 with keys "a","b","c","d","e" and values 1..5, plus d6 also "c".
    func letters(reduce: Reducer? = nil) throws -> View {
        for (i, k) in ["a", "b", "c", "d", "e"].enumerated() {
            _ = try c.put(docID: "d\(i + 1)", json: "{\"k\":\"\(k)\",\"v\":\(i + 1)}", parent: nil)
        }
        _ = try c.put(docID: "d6", json: "{\"k\":\"c\",\"v\":10}", parent: nil)
        return try keyView(c, reduce: reduce)
    }

    func testRangeOptions() throws {
        let v = try letters()
        XCTAssertEqual(try ids(v), ["d1", "d2", "d3", "d6", "d4", "d5"])
        XCTAssertEqual(try ids(v, "{\"key\":\"c\"}"), ["d3", "d6"])
        XCTAssertEqual(try ids(v, "{\"keys\":[\"e\",\"a\",\"zz\",\"c\"]}"), ["d5", "d1", "d3", "d6"])
        XCTAssertEqual(try ids(v, "{\"startkey\":\"b\"}"), ["d2", "d3", "d6", "d4", "d5"])
        XCTAssertEqual(try ids(v, "{\"endkey\":\"c\"}"), ["d1", "d2", "d3", "d6"])
        XCTAssertEqual(try ids(v, "{\"endkey\":\"c\",\"inclusive_end\":false}"), ["d1", "d2"])
        XCTAssertEqual(try ids(v, "{\"startkey\":\"b\",\"endkey\":\"d\"}"), ["d2", "d3", "d6", "d4"])
        XCTAssertEqual(try ids(v, "{\"startkey\":\"c\",\"startkey_docid\":\"d6\"}"), ["d6", "d4", "d5"])
        XCTAssertEqual(try ids(v, "{\"endkey\":\"c\",\"endkey_docid\":\"d3\"}"), ["d1", "d2", "d3"])
        XCTAssertEqual(try ids(v, "{\"endkey\":\"c\",\"endkey_docid\":\"d6\",\"inclusive_end\":false}"), ["d1", "d2", "d3"])
        XCTAssertEqual(try ids(v, "{\"startkey\":\"B\"}"), ["d3", "d6", "d4", "d5"])   // "b" < "B" < "c"
        XCTAssertEqual(try ids(v, "{\"startkey\":\"zz\"}"), [])
    }

    func testDescendingReversesStartAndEnd() throws {
        let v = try letters()
        XCTAssertEqual(try ids(v, "{\"descending\":true}"), ["d5", "d4", "d6", "d3", "d2", "d1"])
        XCTAssertEqual(try ids(v, "{\"descending\":true,\"startkey\":\"d\",\"endkey\":\"b\"}"), ["d4", "d6", "d3", "d2"])
        XCTAssertEqual(try ids(v, "{\"descending\":true,\"startkey\":\"b\",\"endkey\":\"d\"}"), [])
        XCTAssertEqual(try ids(v, "{\"descending\":true,\"startkey\":\"d\",\"endkey\":\"b\",\"inclusive_end\":false}"), ["d4", "d6", "d3"])
        XCTAssertEqual(try ids(v, "{\"descending\":true,\"startkey\":\"c\",\"startkey_docid\":\"d3\"}"), ["d3", "d2", "d1"])
        XCTAssertEqual(try ids(v, "{\"descending\":true,\"endkey\":\"c\",\"endkey_docid\":\"d6\"}"), ["d5", "d4", "d6"])
        XCTAssertEqual(try ids(v, "{\"descending\":true,\"keys\":[\"c\",\"a\"]}"), ["d6", "d3", "d1"])
    }

    func testLimitSkipAndCombinations() throws {
        let v = try letters()
        XCTAssertEqual(try ids(v, "{\"limit\":2}"), ["d1", "d2"])
        XCTAssertEqual(try ids(v, "{\"limit\":0}"), [])
        XCTAssertEqual(try ids(v, "{\"skip\":4}"), ["d4", "d5"])
        XCTAssertEqual(try ids(v, "{\"skip\":2,\"limit\":2}"), ["d3", "d6"])
        XCTAssertEqual(try ids(v, "{\"skip\":10}"), [])
        XCTAssertEqual(try ids(v, "{\"descending\":true,\"skip\":1,\"limit\":3,\"endkey\":\"b\"}"), ["d4", "d6", "d3"])
        XCTAssertEqual(try ids(v, "{\"startkey\":\"b\",\"endkey\":\"d\",\"inclusive_end\":false,\"skip\":1,\"limit\":1}"), ["d3"])
        XCTAssertEqual(try ids(v, "{\"keys\":[\"c\",\"e\"],\"skip\":1,\"limit\":2}"), ["d6", "d5"])
        let e = try v.query(QueryOptions(json: "{\"skip\":3}"))
        XCTAssertEqual(e.offset, 3)
        XCTAssertEqual(e.totalRows, 6)
    }

    func testIncludeDocsAndRowFields() throws {
        let v = try letters()
        let r = try rows(v, "{\"key\":\"a\",\"include_docs\":true}")
        XCTAssertEqual(r.count, 1)
        XCTAssertEqual(r[0].valueJSON, "1")
        XCTAssertEqual(r[0].sourceDocID, "d1")
        XCTAssertEqual(r[0].sequence, 1)
        XCTAssertEqual(obj(r[0].doc!)["_id"], .string("d1"))
        XCTAssertNil(try rows(v, "{\"key\":\"a\"}")[0].doc)
        // A document deleted after indexing with update=false: doc is null.
        _ = try c.delete(docID: "d1", parent: nil)
        let stale = try rows(v, "{\"key\":\"a\",\"include_docs\":true,\"update\":false}")
        XCTAssertEqual(stale.count, 1)
        XCTAssertNil(stale[0].doc)
    }

    func testOptionErrors() throws {
        let v = try letters()
        assertStatus(.badRequest, try QueryOptions(json: "{\"limit\":-1}"))
        assertStatus(.badRequest, try QueryOptions(json: "{\"nope\":1}"))
        assertStatus(.badRequest, try QueryOptions(json: "{\"key\":1,\"keys\":[1]}"))
        assertStatus(.badRequest, try QueryOptions(json: "{\"update\":\"sometimes\"}"))
        assertStatus(.badRequest, try QueryOptions(json: "[1]"))
        assertStatus(.badRequest, try v.query(QueryOptions(json: "{\"reduce\":true}")))   // no reduce function
    }

    func testPrefixMatching() throws {
        for (i, k) in ["fo", "foo", "Foolish", "foolish", "fop", "fong", "food"].enumerated() {
            _ = try c.put(docID: "s\(i)", json: "{\"k\":\"\(k)\"}", parent: nil)
        }
        for (i, k) in ["[1]", "[1,\"x\"]", "[1,\"xtc\"]", "[1,\"y\"]", "[2]", "[1,[\"a\",\"b\"]]"].enumerated() {
            _ = try c.put(docID: "a\(i)", json: "{\"k\":\(k)}", parent: nil)
        }
        let v = try keyView(c)
        XCTAssertEqual(try keys(v, "{\"startkey\":\"foo\",\"endkey\":\"foo\",\"prefix_match_level\":1}"),
                       ["\"foo\"", "\"food\"", "\"foolish\"", "\"Foolish\""])
        XCTAssertEqual(try keys(v, "{\"startkey\":\"foo\",\"endkey\":\"foo\"}"), ["\"foo\""])
        XCTAssertEqual(try keys(v, "{\"startkey\":[1],\"endkey\":[1],\"prefix_match_level\":1}"),
                       ["[1]", "[1,\"x\"]", "[1,\"xtc\"]", "[1,\"y\"]", "[1,[\"a\",\"b\"]]"])
        XCTAssertEqual(try keys(v, "{\"startkey\":[1,\"x\"],\"endkey\":[1,\"x\"],\"prefix_match_level\":2}"),
                       ["[1,\"x\"]", "[1,\"xtc\"]"])
        XCTAssertEqual(try keys(v, "{\"startkey\":[1,[\"a\"]],\"endkey\":[1,[\"a\"]],\"prefix_match_level\":2}"),
                       ["[1,[\"a\",\"b\"]]"])
        // Descending: the start key is the prefix.
        XCTAssertEqual(try keys(v, "{\"descending\":true,\"startkey\":\"foo\",\"endkey\":\"foo\",\"prefix_match_level\":1}"),
                       ["\"Foolish\"", "\"foolish\"", "\"food\"", "\"foo\""])
        // Other key types: no effect.
        XCTAssertEqual(try keys(v, "{\"startkey\":\"fop\",\"endkey\":\"fop\",\"prefix_match_level\":1}"), ["\"fop\""])
    }

    func testBuiltinReducers() throws {
        let v = try letters(reduce: .sum)
        XCTAssertEqual(try rows(v).map(\.valueJSON), ["25"])
        XCTAssertEqual(try rows(v).map(\.keyJSON), ["null"])
        XCTAssertEqual(try rows(v, "{\"startkey\":\"b\",\"endkey\":\"c\"}").map(\.valueJSON), ["15"])
        XCTAssertEqual(try rows(v, "{\"reduce\":false}").count, 6)
        XCTAssertEqual(try rows(v, "{\"startkey\":\"x\"}").count, 0)      // nothing to reduce: no row
        v.setMapReduce(map: { doc, e in let o = try doc.object; e.emit(o["k"]!, o["v"]) }, reduce: .count, version: "1")
        XCTAssertEqual(try rows(v).map(\.valueJSON), ["6"])
        v.setMapReduce(map: { doc, e in let o = try doc.object; e.emit(o["k"]!, o["v"]) }, reduce: .stats, version: "1")
        let stats = obj(try rows(v)[0].value!)
        XCTAssertEqual(stats["sum"], .int(25))
        XCTAssertEqual(stats["count"], .int(6))
        XCTAssertEqual(stats["min"], .int(1))
        XCTAssertEqual(stats["max"], .int(10))
        XCTAssertEqual(stats["sumsqr"], .int(1 + 4 + 9 + 16 + 25 + 100))
        assertStatus(.badRequest, try v.query(QueryOptions(json: "{\"include_docs\":true}")))
        XCTAssertEqual(Reducer(builtin: "_count").map { if case .count = $0 { return true } else { return false } }, true)
        XCTAssertNil(Reducer(builtin: "_avg"))
    }

    func testSumOfDoublesArraysAndBadValues() throws {
        _ = try c.put(docID: "a", json: "{\"v\":1.5}", parent: nil)
        _ = try c.put(docID: "b", json: "{\"v\":2}", parent: nil)
        let v = try c.view(named: "s")
        v.setMapReduce(map: { doc, e in e.emit(.null, try doc.object["v"]) }, reduce: .sum, version: "1")
        XCTAssertEqual(try rows(v).map(\.valueJSON), ["3.5"])
        v.setMapReduce(map: { doc, e in e.emit(.null, .array([.int(1), try doc.object["v"]!])) }, reduce: .sum, version: "2")
        XCTAssertEqual(try rows(v).map(\.valueJSON), ["[2,3.5]"])
        v.setMapReduce(map: { doc, e in e.emit(.null, .string("x")) }, reduce: .sum, version: "3")
        XCTAssertEqual(obj(try rows(v)[0].value!)["caused_by"], .string("x"))     // CouchDB's error object, not a failure
    }

    func testGrouping() throws {
        let tracks: [(String, String, String, Int)] = [
            ("rock", "radiohead", "ok computer", 300), ("rock", "radiohead", "ok computer", 200),
            ("rock", "radiohead", "kid a", 250), ("rock", "muse", "absolution", 100), ("jazz", "miles", "kind of blue", 500),
        ]
        for (i, t) in tracks.enumerated() {
            _ = try c.put(docID: "t\(i)", json: "{\"k\":[\"\(t.0)\",\"\(t.1)\",\"\(t.2)\"],\"v\":\(t.3)}", parent: nil)
        }
        _ = try c.put(docID: "s1", json: "{\"k\":\"loose\",\"v\":7}", parent: nil)
        _ = try c.put(docID: "s2", json: "{\"k\":\"loose\",\"v\":8}", parent: nil)
        let v = try keyView(c, reduce: .sum)
        let l1 = try rows(v, "{\"group_level\":1}")
        XCTAssertEqual(l1.map(\.keyJSON), ["\"loose\"", "[\"jazz\"]", "[\"rock\"]"])      // non-array keys grouped at level 1
        XCTAssertEqual(l1.map(\.valueJSON), ["15", "500", "850"])
        let l2 = try rows(v, "{\"group_level\":2}")
        XCTAssertEqual(l2.map(\.keyJSON), ["[\"jazz\",\"miles\"]", "[\"rock\",\"muse\"]", "[\"rock\",\"radiohead\"]"])  // non-array keys left out
        XCTAssertEqual(l2.map(\.valueJSON), ["500", "100", "750"])
        let l3 = try rows(v, "{\"group_level\":3,\"startkey\":[\"rock\",\"radiohead\"],\"endkey\":[\"rock\",\"radiohead\",{}]}")
        XCTAssertEqual(l3.map(\.keyJSON), ["[\"rock\",\"radiohead\",\"kid a\"]", "[\"rock\",\"radiohead\",\"ok computer\"]"])
        XCTAssertEqual(l3.map(\.valueJSON), ["250", "500"])
        let exact = try rows(v, "{\"group\":true}")
        XCTAssertEqual(exact.count, 5)
        XCTAssertEqual(exact.first?.valueJSON, "15")
        XCTAssertEqual(try rows(v, "{\"group_level\":2,\"descending\":true}").map(\.valueJSON), ["750", "100", "500"])
        XCTAssertEqual(try rows(v, "{\"group_level\":2,\"skip\":1,\"limit\":1}").map(\.valueJSON), ["100"])
        XCTAssertEqual(try rows(v, "{\"group_level\":9}").count, 4)     // shorter arrays group whole; "loose" left out
        // Grouping without a reduce function: unique group keys, null values.
        let plain = try keyView(c, "plain")
        let g = try rows(plain, "{\"group_level\":1}")
        XCTAssertEqual(g.count, 3)
        XCTAssertNil(g[0].value)
        XCTAssertNil(g[0].docID)
    }

    func testCustomReduceUsesRereduceOnChunks() throws {
        let saved = Reduction.defaultChunkSize
        Reduction.defaultChunkSize = 4
        defer { Reduction.defaultChunkSize = saved }
        try db.begin()
        for i in 0..<50 { _ = try c.put(docID: String(format: "d%02d", i), json: "{\"k\":\(i % 3),\"v\":\(i)}", parent: nil) }
        try db.commit()
        let calls = Locked<(plain: Int, re: Int, maxRows: Int)>((0, 0, 0))
        let v = try keyView(c, reduce: .custom({ keys, values, rereduce in
            calls.with { $0.maxRows = max($0.maxRows, values.count); if rereduce { $0.re += 1 } else { $0.plain += 1 } }
            if rereduce { XCTAssertNil(keys) } else { XCTAssertEqual(keys?.count, values.count) }
            // count in reduce mode, sum in rereduce mode (the seeds' example)
            if rereduce {
                let total = try values.reduce(Int64(0)) { acc, v in acc + (try v.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) }.intValue ?? 0) }
                return Array(String(total).utf8)
            }
            return Array(String(values.count).utf8)
        }))
        XCTAssertEqual(try rows(v).map(\.valueJSON), ["50"])
        XCTAssertGreaterThan(calls.get().re, 0)
        XCTAssertLessThanOrEqual(calls.get().maxRows, 4)
        let grouped = try rows(v, "{\"group\":true}")
        XCTAssertEqual(grouped.map(\.valueJSON), ["17", "17", "16"])
        // A failing reduce fails the query.
        let bad = try keyView(c, "bad", reduce: .custom({ _, _, _ in throw CBLError(.internalError, "boom") }))
        assertStatus(.internalError, try rows(bad))
    }

    func testAllDocsModes() throws {
        for id in ["b", "a", "c", "d"] { _ = try c.put(docID: id, json: "{\"n\":1}", parent: nil) }
        _ = try c.delete(docID: "c", parent: nil)
        try c.putExisting(docID: "e", json: "{\"n\":1}", history: ["1-x"])
        try c.putExisting(docID: "e", json: "{\"n\":2}", history: ["2-y", "1-x"])
        try c.putExisting(docID: "e", json: "{\"n\":3}", history: ["2-z", "1-x"])
        func ids(_ o: String) throws -> [String] { try c.allDocsQuery(QueryOptions(json: o)).allRows().map { $0.docID ?? "?" } }
        XCTAssertEqual(try ids("{}"), ["a", "b", "d", "e"])
        XCTAssertEqual(try ids("{\"all_docs_mode\":\"include_deleted\"}"), ["a", "b", "c", "d", "e"])
        XCTAssertEqual(try ids("{\"all_docs_mode\":\"only_conflicts\"}"), ["e"])
        let show = try c.allDocsQuery(QueryOptions(json: "{\"all_docs_mode\":\"show_conflicts\"}")).allRows()
        XCTAssertEqual(show.map { $0.docID! }, ["a", "b", "d", "e"])
        XCTAssertEqual(obj(show[3].value!)["_conflicts"], .array([.string("2-y")]))
        XCTAssertEqual(obj(show[3].value!)["rev"], .string("2-z"))
        XCTAssertNil(obj(show[0].value!)["_conflicts"])
        XCTAssertEqual(try ids("{\"descending\":true}"), ["e", "d", "b", "a"])
        XCTAssertEqual(try ids("{\"startkey\":\"b\",\"endkey\":\"d\"}"), ["b", "d"])
        XCTAssertEqual(try ids("{\"startkey\":\"b\",\"endkey\":\"d\",\"inclusive_end\":false}"), ["b"])
        XCTAssertEqual(try ids("{\"descending\":true,\"startkey\":\"d\",\"endkey\":\"a\",\"inclusive_end\":false}"), ["d", "b"])
        XCTAssertEqual(try ids("{\"skip\":1,\"limit\":2}"), ["b", "d"])
        XCTAssertEqual(try ids("{\"keys\":[\"d\",\"zz\",\"a\"]}"), ["d", "?", "a"])
        let withDocs = try c.allDocsQuery(QueryOptions(json: "{\"keys\":[\"c\",\"a\"],\"include_docs\":true}")).allRows()
        XCTAssertEqual(obj(withDocs[0].value!)["deleted"], .bool(true))
        XCTAssertNil(withDocs[0].doc)
        XCTAssertEqual(obj(withDocs[1].doc!)["_id"], .string("a"))
        // Prefix: byte order, so upper case sorts first.
        for id in ["app", "apple", "Apple", "apz"] { _ = try c.put(docID: id, json: "{}", parent: nil) }
        XCTAssertEqual(try ids("{\"startkey\":\"app\",\"endkey\":\"app\",\"prefix_match_level\":1}"), ["app", "apple"])
        XCTAssertEqual(try ids("{\"limit\":1}"), ["Apple"])
        // By sequence: keys are sequences, deleted documents included.
        let bySeq = try c.allDocsQuery(QueryOptions(json: "{\"all_docs_mode\":\"by_sequence\",\"startkey\":2,\"endkey\":5}")).allRows()
        XCTAssertEqual(bySeq.map(\.sequence), [2, 4, 5])      // seq 3 was "c", rewritten as seq 5 by its deletion
        XCTAssertEqual(bySeq.map(\.keyJSON), ["2", "4", "5"])
        let json = String(decoding: try c.allDocsQuery(QueryOptions(json: "{\"keys\":[\"nope\"]}")).json(), as: UTF8.self)
        XCTAssertEqual(json, "{\"total_rows\":8,\"offset\":0,\"update_seq\":\(try c.lastSequence),\"rows\":[{\"key\":\"nope\",\"error\":\"not_found\"}]}")
        assertStatus(.badRequest, try c.allDocsQuery(QueryOptions(json: "{\"group\":true}")))
    }

    /// CouchDB's `_all_docs` rules: `offset` counts the rows before the start key (in the
    /// query's direction) plus skip; `keys` with `descending` come reversed, with `skip`
    /// and `limit` applied to them; `conflicts` with include_docs gives each `_conflicts`.
    func testAllDocsOffsetKeysAndConflicts() throws {
        for id in ["a", "b", "c", "d"] { _ = try c.put(docID: id, json: "{\"n\":1}", parent: nil) }
        _ = try c.delete(docID: "b", parent: nil)                      // not counted: not a row
        try c.putExisting(docID: "e", json: "{\"n\":2}", history: ["2-y", "1-x"])
        try c.putExisting(docID: "e", json: "{\"n\":3}", history: ["2-z", "1-x"])
        func offset(_ o: String) throws -> Int64 { try c.allDocsQuery(QueryOptions(json: o)).offset }
        XCTAssertEqual(try offset("{}"), 0)
        XCTAssertEqual(try offset("{\"skip\":2}"), 2)
        XCTAssertEqual(try offset("{\"startkey\":\"c\"}"), 1, "a (b is deleted)")
        XCTAssertEqual(try offset("{\"startkey\":\"c\",\"skip\":1}"), 2)
        XCTAssertEqual(try offset("{\"startkey\":\"cc\"}"), 2)
        XCTAssertEqual(try offset("{\"startkey\":\"z\",\"endkey\":\"a\"}"), 4, "an empty range still counts its place")
        XCTAssertEqual(try offset("{\"descending\":true,\"startkey\":\"c\"}"), 2, "e and d come first")
        XCTAssertEqual(try offset("{\"keys\":[\"a\"],\"skip\":1}"), 1)
        let keyed = try c.allDocsQuery(QueryOptions(json: "{\"keys\":[\"a\",\"zz\",\"b\",\"e\"],\"descending\":true,\"skip\":1,\"limit\":2}")).allRows()
        XCTAssertEqual(keyed.map { $0.docID ?? "?" }, ["b", "?"])
        XCTAssertEqual(keyed[1].keyJSON, "\"zz\"")
        let numeric = try c.allDocsQuery(QueryOptions(json: "{\"keys\":[1]}")).allRows()
        XCTAssertEqual(numeric.map(\.keyJSON), ["1"])
        XCTAssertEqual(numeric.first?.error, "not_found")
        let docs = try c.allDocsQuery(QueryOptions(json: "{\"keys\":[\"e\",\"a\"],\"include_docs\":true,\"conflicts\":true}")).allRows()
        XCTAssertEqual(obj(docs[0].doc!)["_conflicts"], .array([.string("2-y")]))
        XCTAssertNil(obj(docs[1].doc!)["_conflicts"])
        let plain = try c.allDocsQuery(QueryOptions(json: "{\"keys\":[\"e\"],\"include_docs\":true}")).allRows()
        XCTAssertNil(obj(plain[0].doc!)["_conflicts"], "only when asked")
    }

    func testAllDocsPagesThroughManyDocuments() throws {
        try db.begin()
        for i in 0..<1000 { _ = try c.put(docID: String(format: "%04d", i), json: "{}", parent: nil) }
        try db.commit()
        let all = try c.allDocsQuery().allRows().map { $0.docID! }
        XCTAssertEqual(all, (0..<1000).map { String(format: "%04d", $0) })
        let desc = try c.allDocsQuery(QueryOptions(json: "{\"descending\":true,\"skip\":500}")).allRows().map { $0.docID! }
        XCTAssertEqual(desc, (0..<500).reversed().map { String(format: "%04d", $0) })
    }

    func testQueryJSONShape() throws {
        let v = try letters()
        let json = String(decoding: try v.query(QueryOptions(json: "{\"key\":\"a\"}")).json(), as: UTF8.self)
        XCTAssertEqual(json, "{\"total_rows\":6,\"offset\":0,\"update_seq\":6,\"rows\":[{\"id\":\"d1\",\"key\":\"a\",\"value\":1,\"seq\":1}]}")
    }
}

/// Integers beyond 64 bits as view keys and values: they collate by their value (as the
/// double nearest to it, as every number here does), rows show their exact digits, and
/// key ranges find them.
final class BigIntegerKeyTests: CBLTestCase {
    func testBigIntegerKeysCollateByValueAndKeepTheirDigits() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let keys = ["\"a\"", "2e19", "18446744073709551617", "1e19", "-12345678901234567890123", "5"]
        for (i, k) in keys.enumerated() {
            _ = try c.put(docID: "d\(i)", json: "{\"k\":\(k),\"v\":\(k == "\"a\"" ? "0" : k)}", parent: nil)
        }
        let v = try keyView(c)
        XCTAssertEqual(try rows(v).map(\.keyJSON),
                       ["-12345678901234567890123", "5", "1e+19", "18446744073709551617", "2e+19", "\"a\""])
        XCTAssertEqual(try ids(v, #"{"key":18446744073709551617}"#), ["d2"])
        XCTAssertEqual(try ids(v, #"{"startkey":1.5e19,"endkey":1.9e19}"#), ["d2"])
        XCTAssertEqual(try rows(v, #"{"key":18446744073709551617}"#).first?.valueJSON, "18446744073709551617")
        let doc = String(decoding: try c.get(docID: "d4"), as: UTF8.self)
        XCTAssertTrue(doc.contains(#""k":-12345678901234567890123"#), doc)
    }

    func testSumOfABigIntegerIsItsDouble() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "a", json: #"{"k":1,"v":18446744073709551617}"#, parent: nil)
        _ = try c.put(docID: "b", json: #"{"k":2,"v":1}"#, parent: nil)
        let v = try keyView(c, reduce: Reducer(builtin: "_sum")!)
        let total = try rows(v).first?.valueJSON
        XCTAssertEqual(total.flatMap(Double.init), 18446744073709551616.0 + 1)
    }
}
