import XCTest
@testable import CBLiteCore

/// Lucene's syntax on the full-text engine (CouchDB's `$text` and Nouveau): phrase slop,
/// ranges and values of stored number and string fields, sorting by them, one count for
/// the total, what is refused (with its position), and Mango's `nouveau` indexes.
final class FullTextLuceneTests: CBLCollectionTestCase {
    func lucene(_ q: String) throws -> FullTextQuery {
        try FullTextQuery(lucene: q, fields: ["title", "tag"], numbers: ["year"], strings: ["tag", "code"])
    }

    func refused(_ q: String, at position: Int, _ words: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try lucene(q), q, file: file, line: line) { e in
            let err = e as? FullTextQueryError
            XCTAssertEqual(err?.position, position, "\(q): \(String(describing: err))", file: file, line: line)
            XCTAssertTrue(err?.message.contains(words) == true, "\(q): \(String(describing: err))", file: file, line: line)
        }
    }

    func testLuceneSyntaxIsReadOrRefusedWithItsPosition() throws {
        XCTAssertEqual(try lucene(#""flat white"~3"#), .near([.phrase("flat", prefix: false), .phrase("white", prefix: false)], distance: 3))
        XCTAssertEqual(try lucene("year:[2000 TO 2005}"),
                       .range("year", lower: FullTextBound(.number(2000), inclusive: true), upper: FullTextBound(.number(2005), inclusive: false)))
        XCTAssertEqual(try lucene("year:{2000 TO *]"), .range("year", lower: FullTextBound(.number(2000), inclusive: false), upper: nil))
        XCTAssertEqual(try lucene("year:2001"), .value("year", .number(2001)))
        XCTAssertEqual(try lucene(#"tag:["a" TO m]"#),
                       .range("tag", lower: FullTextBound(.string("a"), inclusive: true), upper: FullTextBound(.string("m"), inclusive: true)))
        XCTAssertEqual(try lucene("tag:red"), .field("tag", .phrase("red", prefix: false)))       // a text column: its terms
        XCTAssertEqual(try lucene("code:X-1"), .value("code", .string("X-1")))                     // a value only: the whole value
        XCTAssertEqual(try lucene("coffee -year:[* TO 2000]"),
                       .not(.phrase("coffee", prefix: false), .range("year", lower: nil, upper: FullTextBound(.number(2000), inclusive: true))))
        refused("coffee~", at: 6, "fuzzy")
        refused("coffee~2", at: 6, "fuzzy")
        refused("coffee^2", at: 6, "boosts")
        refused(#""flat white"^2"#, at: 12, "boosts")
        refused("co?fee", at: 2, "single-character wildcards")
        refused("*ffee", at: 0, "leading wildcards")
        refused("co*ee", at: 2, "wildcards inside a term")
        refused("[a TO b]", at: 0, "a range needs a field")
        refused("title:[a TO b]", at: 6, "ranges need a number or string field")
        refused("year:abc", at: 5, "number field")
        refused("year:[1 TO x]", at: 11, "number field")
        refused("year:[1 5]", at: 8, "TO")
        refused("year:[1 TO 5", at: 5, "unterminated range")
        refused(#""flat white"~"#, at: 12, "distance")
        // The engine's own syntax reads them as before (no value fields there).
        XCTAssertEqual(try FullTextQuery("coffee^2", fields: ["title"]), .phrase("coffee^2", prefix: false))
    }

    /// A source storing a number (year) and a string (code) beside the text.
    func source() -> FullTextSource {
        FullTextSource(name: "\u{1}test/values", columns: ["title"], analyzer: FullTextAnalyzer(), version: "1",
                       valueFields: [FullTextValueField("year", numeric: true), FullTextValueField("code", numeric: false)]) { doc in
            let o = try doc.object
            var row = FullTextRow(texts: [o["title"]?.stringValue])
            if case .int(let y)? = o["year"] { row.values.append((0, .number(Double(y)))) }
            if case .array(let codes)? = o["codes"] { for case .string(let c) in codes { row.values.append((1, .string(c))) } }
            return row
        }
    }

    func put(_ id: String, _ json: String) throws { _ = try coll.put(docID: id, json: json, parent: nil) }

    func corpus() throws {
        try put("a", #"{"title": "coffee with milk", "year": 2001, "codes": ["m", "c"]}"#)
        try put("b", #"{"title": "tea", "year": 1999, "codes": ["t"]}"#)
        try put("c", #"{"title": "coffee coffee coffee", "year": 2010}"#)
        try put("d", #"{"title": "water", "year": 2005, "codes": ["w"]}"#)
        try put("e", #"{"title": "coffee beans"}"#)
    }

    func ids(_ q: String, sort: [FullTextSort] = [], skip: Int = 0, limit: Int? = nil) throws -> [String] {
        var r = FullTextSearchRequest(query: q, limit: limit, skip: skip, snippets: nil)
        r.lucene = true
        r.sort = sort
        return try coll.search(source(), r).hits.map(\.docID)
    }

    func testRangesValuesAndSortingOnStoredValues() throws {
        try corpus()
        XCTAssertEqual(Set(try ids("year:[2001 TO 2005]")), ["a", "d"])
        XCTAssertEqual(Set(try ids("year:{2001 TO 2005]")), ["d"])
        XCTAssertEqual(Set(try ids("year:[* TO 2001}")), ["b"])
        XCTAssertEqual(Set(try ids("year:[2005 TO *]")), ["c", "d"])
        XCTAssertEqual(try ids("year:2010"), ["c"])
        XCTAssertEqual(Set(try ids("code:[a TO n]")), ["a"])                       // "m" and "c" both in; one hit
        XCTAssertEqual(try ids("code:w"), ["d"])
        // Text ranked, then filtered by values; excluded values; values under OR.
        XCTAssertEqual(try ids("coffee AND year:[2000 TO *]"), ["c", "a"])
        XCTAssertEqual(Set(try ids("coffee -year:[2005 TO *]")), ["a", "e"])
        XCTAssertEqual(Set(try ids("tea OR year:[2005 TO 2005]")), ["b", "d"])
        XCTAssertEqual(Set(try ids("year:[2000 TO *] NOT coffee")), ["d"])
        // Sorted by a value: missing last either way, paged by skip.
        XCTAssertEqual(try ids("coffee", sort: [FullTextSort("year")]), ["a", "c", "e"])
        XCTAssertEqual(try ids("coffee", sort: [FullTextSort("year", descending: true)]), ["c", "a", "e"])
        XCTAssertEqual(try ids("coffee", sort: [FullTextSort("year", descending: true)], skip: 1, limit: 1), ["a"])
        XCTAssertEqual(try ids("year:[* TO *]", sort: [FullTextSort("code")]), ["a", "b", "d", "c"])      // first values: m, t, w; c has none
        // One count of the matches.
        var r = FullTextSearchRequest(query: "coffee OR year:[* TO 2000]", limit: 1)
        r.lucene = true
        XCTAssertEqual(try coll.count(source(), r), 4)
        // A changed document's values follow it; a deleted one's go.
        let rev = try coll.get(docID: "d").withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }["_rev"]?.stringValue
        _ = try coll.put(docID: "d", json: #"{"title": "water", "year": 1990}"#, parent: rev)
        XCTAssertEqual(Set(try ids("year:[* TO 2000]")), ["b", "d"])
        let rev2 = try coll.get(docID: "b").withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }["_rev"]?.stringValue
        _ = try coll.delete(docID: "b", parent: rev2)
        XCTAssertEqual(try ids("year:[* TO 2000]"), ["d"])
        XCTAssertThrowsError(try ids("coffee", sort: [FullTextSort("title")]))
    }

    func testAnIndexOfTheFormerLayoutIsPurgedFromThenRebuilt() throws {
        try corpus()
        XCTAssertEqual(try ids("year:2010"), ["c"])
        // As a database written before values were stored: no value table, an older version.
        try coll.store.write(timeoutMs: 1000) { conn, _ in
            let id = try XCTUnwrap(try FullTextStorage.indexes(conn, collectionID: coll.id).first).id
            try conn.exec("DROP TABLE \(FullTextStorage.valueTable(id)); UPDATE fts_indexes SET version='1' WHERE id=\(id)")
        }
        try coll.purge(docID: "c")                   // removes its row without the value table
        XCTAssertEqual(Set(try ids("year:[2000 TO *]")), ["a", "d"])
    }

    func testNouveauDoubleFieldsAreQueryableAndSortable() throws {
        _ = try coll.put(docID: "_design/n", json: #"""
            {"nouveau": {"i": {"index": "function (doc) { index('text', 'title', doc.title); if (doc.year) index('double', 'year', doc.year); if (doc.tag) index('string', 'tag', doc.tag); }"}}}
            """#, parent: nil)
        try put("a", #"{"title": "coffee with milk", "year": 2001, "tag": "hot"}"#)
        try put("b", #"{"title": "iced coffee", "year": 2010, "tag": "cold"}"#)
        try put("c", #"{"title": "tea", "year": 1999, "tag": "hot"}"#)
        func hits(_ q: String, sort: [NouveauSort] = []) throws -> (ids: [String], total: Int64, order: [JSONValue]) {
            let r = try coll.nouveauSearch(ddoc: "n", index: "i", query: q, sort: sort).objectValue!
            guard case .array(let hs)? = r["hits"], case .int(let total)? = r["total_hits"] else { XCTFail(); return ([], 0, []) }
            return (hs.map { $0.objectValue!["id"]!.stringValue! }, total, hs.map { $0.objectValue!["order"]! })
        }
        XCTAssertEqual(Set(try hits("year:[2000 TO *]").ids), ["a", "b"])
        XCTAssertEqual(try hits("coffee AND year:{2001 TO *]").ids, ["b"])
        XCTAssertEqual(try hits("tag:[a TO h]").ids, ["b"])
        let sorted = try hits("coffee OR tea", sort: [NouveauSort(field: "year", type: "double", descending: true)])
        XCTAssertEqual(sorted.ids, ["b", "a", "c"])
        XCTAssertEqual(sorted.total, 3)
        XCTAssertEqual(sorted.order[0].arrayValue?.first, .object(JSONObject([("@type", .string("double")), ("value", .int(2010))])))
        XCTAssertThrowsError(try hits("coffee", sort: [NouveauSort(field: "title", type: "string", descending: false)]))
        XCTAssertThrowsError(try hits(#""coffee milk"~1^2"#)) { XCTAssertTrue("\($0)".contains("position 15"), "\($0)") }
    }

    func testMangoNouveauIndexIsStoredListedUsedAndDeleted() throws {
        try put("a", #"{"title": "coffee with milk", "year": 2001}"#)
        try put("b", #"{"title": "coffee beans", "year": 1999}"#)
        // No text or nouveau index: a sort is CouchDB's no_usable_index, word for word.
        let sorted = try JSONParser.parse(#"{"selector": {"$text": "coffee"}, "sort": ["year"]}"#)
        XCTAssertThrowsError(try coll.textFind(sorted)) { XCTAssertEqual(($0 as? MangoError)?.reason, "No index exists for this sort, try indexing by the sort fields.") }
        let body = try JSONParser.parse(#"{"type": "nouveau", "ddoc": "mn", "name": "words", "index": {"fields": [{"name": "title", "type": "string"}, {"name": "year", "type": "number"}]}}"#)
        XCTAssertEqual(try coll.createMangoIndex(body).result, "created")
        XCTAssertEqual(try coll.createMangoIndex(body).result, "exists")
        let ddoc = obj(try coll.get(docID: "_design/mn"))
        XCTAssertEqual(ddoc["language"], .string("query"))
        let member = try XCTUnwrap(ddoc["nouveau"]?.objectValue?["words"]?.objectValue)
        XCTAssertEqual(member["index"]?.objectValue?["default_analyzer"], .string("keyword"))
        XCTAssertEqual(member["analyzer"]?.objectValue?["name"], .string("perfield"))
        let listed = try coll.mangoIndexListJSON().objectValue?["indexes"]?.arrayValue?.last?.objectValue
        XCTAssertEqual(listed?["type"], .string("nouveau"))
        XCTAssertEqual(listed?["def"]?.objectValue?["fields"], try JSONParser.parse(#"[{"title": "string"}, {"year": "number"}]"#))
        let find = try JSONParser.parse(#"{"selector": {"$text": "coffee AND year:[2000 TO *]", "title": {"$gt": "a"}}}"#)
        XCTAssertEqual(try XCTUnwrap(try coll.textFind(find)).docs.map { obj($0)["_id"] }, [.string("a")])
        XCTAssertEqual(try coll.textExplain(find, databaseName: "db")?.objectValue?["index"]?.objectValue?["type"], .string("nouveau"))
        try coll.deleteMangoIndex(ddoc: "mn", type: "nouveau", name: "words")
        XCTAssertNil(try? coll.get(docID: "_design/mn"))
        XCTAssertThrowsError(try coll.deleteMangoIndex(ddoc: "mn", type: "nouveau", name: "words"))
    }
}
