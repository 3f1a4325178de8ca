import XCTest
@testable import CBLiteCore

/// Index pages after the first continue from the previous page's last row through several
/// statements (Range.scanSegments: the rest of its document, of its key, then the later
/// keys), and document-ID bounds split the same way. Every query here is checked against
/// the rows worked out by hand from what the map emitted, over pages whose boundaries fall
/// inside one document's rows of one key.
final class ScanPageBoundaryTests: CBLCollectionTestCase {
    /// 1,500 documents d00000...; each emits its key (i % 2) three times, with values 0, 1, 2
    /// (its emit numbers): 2,250 rows a key, so the first index page (2,048 rows) ends
    /// after the second row of document d01364, the second after the first row of d01231.
    static let docs = 1500

    struct Ref: Equatable {
        let key: Int
        let docID: String
        let n: Int
    }

    func populate() throws -> (View, [Ref]) {
        try db.inTransaction {
            for i in 0..<ScanPageBoundaryTests.docs {
                _ = try coll.put(docID: String(format: "d%05d", i), json: "{\"k\":\(i % 2)}", parent: nil)
            }
            return true
        }
        let v = try coll.view(named: "thrice")
        v.setMapReduce(map: { doc, emit in
            if let k = try doc.object["k"] { for n in 0..<3 { emit.emit(k, .int(Int64(n))) } }
        }, reduce: nil, version: "1")
        var all: [Ref] = []
        for i in 0..<ScanPageBoundaryTests.docs {
            for n in 0..<3 { all.append(Ref(key: i % 2, docID: String(format: "d%05d", i), n: n)) }
        }
        all.sort { ($0.key, $0.docID, $0.n) < ($1.key, $1.docID, $1.n) }
        return (v, all)
    }

    func rows(_ v: View, _ json: String) throws -> [Ref] {
        try v.query(QueryOptions(json: json)).allRows().map {
            Ref(key: Int($0.keyJSON)!, docID: $0.docID!, n: Int($0.valueJSON!)!)
        }
    }

    /// CouchDB's range: from (startkey, startkey_docid) to (endkey, endkey_docid) in scan
    /// order, the end included unless inclusive_end is false.
    func expected(_ all: [Ref], descending: Bool = false, start: (Int, String?)? = nil, end: (Int, String?)? = nil,
                  inclusiveEnd: Bool = true, skip: Int = 0, limit: Int? = nil) -> [Ref] {
        let ordered = descending ? all.reversed() : all
        func cmp(_ r: Ref, _ b: (Int, String?)) -> Int {     // r's place against the bound, in scan order
            var c = r.key < b.0 ? -1 : (r.key > b.0 ? 1 : 0)
            if c == 0, let d = b.1 { c = r.docID < d ? -1 : (r.docID > d ? 1 : 0) }
            return descending ? -c : c
        }
        let inRange = ordered.filter { r in
            if let start, cmp(r, start) < 0 { return false }
            if let end { let c = cmp(r, end); if c > 0 || (c == 0 && !inclusiveEnd) { return false } }
            return true
        }
        let skipped = Array(inRange.dropFirst(skip))
        return limit.map { Array(skipped.prefix($0)) } ?? skipped
    }

    func testRangesAcrossPageBoundariesInsideADocument() throws {
        let (v, all) = try populate()
        XCTAssertEqual(try rows(v, "{}"), all)
        XCTAssertEqual(try rows(v, "{\"descending\":true}"), expected(all, descending: true))
        XCTAssertEqual(try rows(v, "{\"key\":0}"), expected(all, start: (0, nil), end: (0, nil)))
        XCTAssertEqual(try rows(v, "{\"key\":1,\"descending\":true}"),
                       expected(all, descending: true, start: (1, nil), end: (1, nil)))
        XCTAssertEqual(try rows(v, "{\"startkey\":0,\"endkey\":1,\"inclusive_end\":false}"),
                       expected(all, start: (0, nil), end: (1, nil), inclusiveEnd: false))
        XCTAssertEqual(try rows(v, "{\"startkey\":0,\"endkey\":0,\"inclusive_end\":false}"), [])
        XCTAssertEqual(try rows(v, "{\"skip\":2040,\"limit\":20}"), expected(all, skip: 2040, limit: 20))
        XCTAssertEqual(try rows(v, "{\"skip\":2047,\"limit\":3000,\"descending\":true}"),
                       expected(all, descending: true, skip: 2047, limit: 3000))
        XCTAssertEqual(try rows(v, "{\"key\":1,\"skip\":2046,\"limit\":5}"),
                       expected(all, start: (1, nil), end: (1, nil), skip: 2046, limit: 5))
    }

    func testDocumentIDBoundsAcrossPageBoundaries() throws {
        let (v, all) = try populate()
        let cases: [(String, [Ref])] = [
            ("{\"startkey\":0,\"startkey_docid\":\"d00100\",\"endkey\":1,\"endkey_docid\":\"d01201\"}",
             expected(all, start: (0, "d00100"), end: (1, "d01201"))),
            ("{\"startkey\":0,\"startkey_docid\":\"d00100\",\"endkey\":1,\"endkey_docid\":\"d01201\",\"inclusive_end\":false}",
             expected(all, start: (0, "d00100"), end: (1, "d01201"), inclusiveEnd: false)),
            ("{\"startkey\":1,\"startkey_docid\":\"d01201\",\"endkey\":0,\"endkey_docid\":\"d00100\",\"descending\":true}",
             expected(all, descending: true, start: (1, "d01201"), end: (0, "d00100"))),
            ("{\"startkey\":1,\"startkey_docid\":\"d01201\",\"endkey\":0,\"endkey_docid\":\"d00100\",\"descending\":true,\"inclusive_end\":false}",
             expected(all, descending: true, start: (1, "d01201"), end: (0, "d00100"), inclusiveEnd: false)),
            ("{\"startkey\":1,\"startkey_docid\":\"d00003\"}", expected(all, start: (1, "d00003"))),
            ("{\"startkey\":0,\"startkey_docid\":\"d00000\",\"descending\":true}",
             expected(all, descending: true, start: (0, "d00000"))),
            ("{\"startkey\":0,\"startkey_docid\":\"d00301\",\"endkey\":0,\"endkey_docid\":\"d02999\"}",
             expected(all, start: (0, "d00301"), end: (0, "d02999"))),
            ("{\"endkey\":1,\"endkey_docid\":\"d00999\"}", expected(all, end: (1, "d00999"))),
            ("{\"endkey\":1,\"endkey_docid\":\"d00999\",\"descending\":true}",
             expected(all, descending: true, end: (1, "d00999"))),
            ("{\"startkey\":1,\"startkey_docid\":\"d00501\",\"endkey\":1,\"endkey_docid\":\"d00401\"}", []),
            ("{\"startkey\":0,\"startkey_docid\":\"d00400\",\"endkey\":0,\"endkey_docid\":\"d00400\",\"inclusive_end\":false}", []),
        ]
        for (json, want) in cases {
            XCTAssertEqual(try rows(v, json), want, json)
        }
        XCTAssertTrue(cases.dropLast(2).allSatisfy { !$0.1.isEmpty }, "only the last two ranges are empty")
        // Ranges over more than a page: the boundaries fall inside documents.
        XCTAssertGreaterThan(cases[0].1.count, MapScan.pageSize)
        XCTAssertGreaterThan(cases[2].1.count, MapScan.pageSize)
    }

    func testKeysAcrossPageBoundaries() throws {
        let (v, all) = try populate()
        let ones = all.filter { $0.key == 1 }, zeros = all.filter { $0.key == 0 }
        XCTAssertEqual(try rows(v, "{\"keys\":[1,0,1]}"), ones + zeros + ones)
        XCTAssertEqual(try rows(v, "{\"keys\":[0,1],\"descending\":true}"), zeros.reversed() + ones.reversed())
        XCTAssertEqual(try rows(v, "{\"keys\":[0,1],\"skip\":2047,\"limit\":4}"), Array((zeros + ones)[2047..<2051]))
    }
}
