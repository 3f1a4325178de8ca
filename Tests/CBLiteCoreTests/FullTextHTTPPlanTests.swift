import XCTest
@testable import CBLiteCore

/// What the listener's full-text endpoints stand on: `$text` taken out of a `_find`
/// selector (TextFind) and a Nouveau index function's fields and texts (NouveauIndex).
final class FullTextHTTPPlanTests: CBLTestCase {
    private func body(_ text: String) throws -> JSONValue { try JSONParser.parse(text) }

    func testTextIsTakenFromTheTopOfTheSelectorOrItsTopAnd() throws {
        let top = try XCTUnwrap(try TextFind.split(body(#"{"selector": {"$text": "coffee", "year": {"$gt": 1}}, "limit": 2}"#)))
        XCTAssertEqual(top.query, "coffee")
        XCTAssertEqual(top.body, try body(#"{"selector": {"year": {"$gt": 1}}, "limit": 2}"#))
        let and = try XCTUnwrap(try TextFind.split(body(#"{"selector": {"$and": [{"year": 1}, {"$text": "milk"}]}}"#)))
        XCTAssertEqual(and.query, "milk")
        XCTAssertEqual(and.body, try body(#"{"selector": {"$and": [{"year": 1}]}}"#))
        XCTAssertEqual(try TextFind.split(body(#"{"selector": {"$text": 42}}"#))?.query, "42")
        XCTAssertNil(try TextFind.split(body(#"{"selector": {"year": 1}}"#)))
        XCTAssertThrowsError(try TextFind.split(body(#"{"selector": {"$text": ["a"]}}"#)))
        // Elsewhere it stays in the selector, which refuses it.
        let nested = try body(#"{"selector": {"$or": [{"$text": "a"}, {"b": 1}]}}"#)
        XCTAssertNil(try TextFind.split(nested))
        XCTAssertThrowsError(try FindRequest(nested)) { XCTAssertEqual(($0 as? MangoError)?.error, "invalid_operator") }
    }

    func testTextFindUsesTheOnlyTextIndexOrTheNamedOne() throws {
        let c = try open().defaultCollection()
        _ = try c.put(docID: "a", json: #"{"t": "coffee", "n": 1}"#, parent: nil)
        _ = try c.put(docID: "b", json: #"{"t": "coffee coffee", "n": 2}"#, parent: nil)
        let find = try body(#"{"selector": {"$text": "coffee", "n": {"$lt": 2}}}"#)
        XCTAssertThrowsError(try c.textFind(find)) { XCTAssertEqual(($0 as? MangoError)?.error, "no_usable_index") }
        try c.createTextIndex(FullTextIndex(ddoc: "x", name: "t", fields: ["t"]))
        let page = try XCTUnwrap(try c.textFind(find))
        XCTAssertEqual(page.docs.map { obj($0)["_id"] }, [.string("a")])
        try c.createTextIndex(FullTextIndex(ddoc: "y", name: "t", fields: ["t"]))
        XCTAssertThrowsError(try c.textFind(find)) { XCTAssertEqual(($0 as? MangoError)?.error, "multiple_text_indexes") }
        let named = try body(#"{"selector": {"$text": "coffee"}, "use_index": "y", "fields": ["_id"]}"#)
        XCTAssertEqual(try XCTUnwrap(try c.textFind(named)).docs.map { String(decoding: $0, as: UTF8.self) },
                       [#"{"_id":"b"}"#, #"{"_id":"a"}"#])
    }

    func testNouveauColumnsAreTheLiteralTextFieldsOfIndexCalls() {
        let f = """
            function (doc) {
              index("text", "title", doc.title, {store: true});
              index( 'string' , 'tag', doc.tag); index('double', 'n', doc.n);
              index('text', 'title', doc.subtitle); myindex('text', 'no', 1); index('text', doc.dynamic, 'x');
              index('text', "it's \\"quoted\\"", doc.q);
            }
            """
        XCTAssertEqual(NouveauIndex.fieldNames(in: f), ["title", "tag", #"it's "quoted""#])
    }

    func testNouveauIndexTextsComeFromTheFunction() throws {
        let c = try open().defaultCollection()
        _ = try c.put(docID: "_design/d", json: #"""
            {"nouveau": {"i": {"index": "function (doc) { index('text', 'title', doc.title, {store: true}); (doc.tags || []).forEach(function (t) { index('string', 'tag', t); }); index('stored', 'n', doc.n); }"}}}
            """#, parent: nil)
        _ = try c.put(docID: "a", json: #"{"title": "Flat white", "tags": ["milk", "hot"], "n": 3}"#, parent: nil)
        let index = try NouveauIndex(try XCTUnwrap(try DesignDocument.load(c, name: "d")), name: "i")
        XCTAssertEqual(index.columns, ["title", "tag"])
        let doc = Array(#"{"_id": "a", "title": "Flat white", "tags": ["milk", "hot"], "n": 3}"#.utf8)
        let stored = NouveauIndex.storedFields(try XCTUnwrap(try index.fields(doc, docID: "a")))
        XCTAssertEqual(stored["title"], .string("Flat white"))
        XCTAssertEqual(stored["n"], .int(3))
        XCTAssertNil(stored["tag"])
        let hits = try c.search(index.source, FullTextSearchRequest(query: "tag:hot AND title:flat"))
        XCTAssertEqual(hits.hits.map(\.docID), ["a"])
        XCTAssertThrowsError(try NouveauIndex(try XCTUnwrap(try DesignDocument.load(c, name: "d")), name: "none"))
    }

    func testNouveauSortItems() throws {
        XCTAssertEqual(try NouveauSort.parse("-year<double>"), NouveauSort(field: "year", type: "double", descending: true))
        XCTAssertEqual(try NouveauSort.parse("title<string>"), NouveauSort(field: "title", type: "string", descending: false))
        XCTAssertNil(try NouveauSort.parse("-<score>"))
        for bad in ["year", "<double>", "-", "year<long>"] { XCTAssertThrowsError(try NouveauSort.parse(bad), bad) }
    }
}
