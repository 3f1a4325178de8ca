import XCTest
@testable import CBLiteCore

/// Reading a result a page of rows at a time (QueryEnumerator.nextRows): every row of a
/// page stays valid until the next call, across the index's own pages, for map, reduced,
/// grouped and all-docs results, mixed with reading row by row.
final class QueryPagesTests: CBLCollectionTestCase {
    var c: Collection { coll }

    /// `count` documents p00000... with k = i % mod, and the view "byK" over k.
    func populate(_ count: Int, mod: Int, reduce: Reducer? = nil) throws -> View {
        try db.inTransaction {
            for i in 0..<count {
                _ = try c.put(docID: String(format: "p%05d", i), json: "{\"k\":\(i % mod)}", parent: nil)
            }
            return true
        }
        let v = try c.view(named: "byK")
        v.setMapReduce(map: { doc, emit in
            if let k = try doc.object["k"] { emit.emit(k, nil) }
        }, reduce: reduce, version: "1")
        return v
    }

    /// The rows of `e` read in pages of `size`, each page checked only after the call that
    /// lent it returned (so a row overwritten by a later one of its page is caught).
    func pagedRows(_ e: QueryEnumerator, size: Int, file: StaticString = #filePath, line: UInt = #line) throws -> [QueryRow] {
        var out: [QueryRow] = []
        var shortPages = 0
        while true {
            var page: [QueryRowRef] = []
            let n = try e.nextRows(max: size) { first, run in
                XCTAssertEqual(first, page.count, file: file, line: line)
                XCTAssertGreaterThan(run.count, 0, file: file, line: line)
                page += run
            }
            XCTAssertEqual(n, page.count, file: file, line: line)
            if n == 0 { break }
            if n < size { shortPages += 1 }
            out += page.map { QueryRow($0) }
        }
        XCTAssertLessThanOrEqual(shortPages, 1, "only the last page may be short", file: file, line: line)
        XCTAssertEqual(try e.nextRows(max: size) { _, _ in }, 0, "the end stays the end", file: file, line: line)
        return out
    }

    func testMapPagesSpanTheIndexPages() throws {
        // 2,500 rows: two index pages (MapScan.pageSize 2,048); pages of 7 and 1,000 span both.
        let v = try populate(2500, mod: 2)
        let all = try v.query(QueryOptions(json: "{}")).allRows()
        XCTAssertEqual(all.count, 2500)
        for size in [1, 7, 1000, 2048, 5000] {
            XCTAssertEqual(try pagedRows(v.query(QueryOptions(json: "{}")), size: size), all, "pages of \(size)")
        }
        let key1 = try v.query(QueryOptions(json: "{\"key\":1}")).allRows()
        XCTAssertEqual(key1.count, 1250)
        XCTAssertEqual(try pagedRows(v.query(QueryOptions(json: "{\"key\":1}")), size: 64), key1)
        let opts = "{\"descending\":true,\"skip\":3,\"limit\":2100,\"include_docs\":true}"
        let docs = try v.query(QueryOptions(json: opts)).allRows()
        XCTAssertEqual(docs.count, 2100)
        XCTAssertNotNil(docs[0].doc)
        XCTAssertEqual(try pagedRows(v.query(QueryOptions(json: opts)), size: 300), docs)
    }

    func testKeysPagesSpanOneIndexPageAKey() throws {
        // With "keys" each key is an index page of its own: a page of 100 rows spans 100.
        let v = try populate(400, mod: 400)
        let keys = (0..<300).map { ($0 * 7) % 400 }
        let opts = "{\"keys\":[\(keys.map(String.init).joined(separator: ","))]}"
        let all = try v.query(QueryOptions(json: opts)).allRows()
        XCTAssertEqual(all.map(\.keyJSON), keys.map(String.init))
        XCTAssertEqual(try pagedRows(v.query(QueryOptions(json: opts)), size: 100), all)
        XCTAssertEqual(try pagedRows(v.query(QueryOptions(json: opts)), size: 7), all)
    }

    func testPagesAndSingleRowsContinueEachOther() throws {
        let v = try populate(2500, mod: 2)
        let all = try v.query(QueryOptions(json: "{}")).allRows()
        let e = try v.query(QueryOptions(json: "{}"))
        var got: [QueryRow] = []
        var turn = 0
        while true {
            if turn % 2 == 0 {
                guard let r = try e.next() else { break }
                got.append(r)
            } else {
                var page: [QueryRowRef] = []
                guard try e.nextRows(max: 333, { _, run in page += run }) > 0 else { break }
                got += page.map { QueryRow($0) }
            }
            turn += 1
        }
        XCTAssertEqual(got, all)
        XCTAssertGreaterThan(turn, 10)
    }

    func testReducedGroupedAndAllDocsPages() throws {
        // A custom reduce goes through ReduceSource (not CountSource's SQL).
        let count = Reducer.custom { _, values, rereduce in
            var n = values.count
            if rereduce {
                n = 0
                for v in values { n += Int(String(decoding: v, as: UTF8.self)) ?? 0 }
            }
            return Array(String(n).utf8)
        }
        let v = try populate(600, mod: 5, reduce: count)
        let groups = try v.query(QueryOptions(json: "{\"group\":true}")).allRows()
        XCTAssertEqual(groups.map(\.keyJSON), ["0", "1", "2", "3", "4"])
        XCTAssertEqual(groups.map { $0.valueJSON }, ["120", "120", "120", "120", "120"])
        XCTAssertEqual(try pagedRows(v.query(QueryOptions(json: "{\"group\":true}")), size: 2), groups)
        XCTAssertEqual(try pagedRows(v.query(QueryOptions(json: "{}")), size: 3).map { $0.valueJSON }, ["600"])
        // All-docs results are read 256 documents at a time inside.
        let allDocs = try c.allDocsQuery(QueryOptions(json: "{\"include_docs\":true}")).allRows()
        XCTAssertEqual(allDocs.count, 600)
        XCTAssertEqual(try pagedRows(c.allDocsQuery(QueryOptions(json: "{\"include_docs\":true}")), size: 7), allDocs)
        let keys = "{\"keys\":[\"p00002\",\"nope\",\"p00001\"]}"
        let some = try pagedRows(c.allDocsQuery(QueryOptions(json: keys)), size: 2)
        XCTAssertEqual(some.map { $0.docID ?? $0.error ?? "-" }, ["p00002", "not_found", "p00001"])
    }

    /// A damaged index row in the middle of a page: the page ends before it with the rows
    /// read so far (their texts intact), the next call fails with 500, and the rows after
    /// it follow, in pages and row by row.
    func testADamagedRowEndsItsPageAndFailsTheNextCall() throws {
        let v = try populate(50, mod: 1)                     // one key: rows in document-ID order
        let all = try v.query(QueryOptions(json: "{}")).allRows()
        try db.store.write { conn, _ in try conn.exec("UPDATE view_index_1 SET row = x'ff' WHERE docid = 'p00020'") }
        for size in [7, 64] {
            let e = try v.query(QueryOptions(json: "{\"update\":false}"))
            var got: [QueryRow] = []
            var failures = 0
            while true {
                var page: [QueryRowRef] = []
                do {
                    guard try e.nextRows(max: size, { _, run in page += run }) > 0 else { break }
                } catch let err as CBLError {
                    XCTAssertEqual(err.status, .internalError)
                    failures += 1
                    continue
                }
                got += page.map { QueryRow($0) }
            }
            XCTAssertEqual(failures, 1, "pages of \(size)")
            XCTAssertEqual(got, all.filter { $0.docID != "p00020" }, "pages of \(size)")
        }
        let e = try v.query(QueryOptions(json: "{\"update\":false}"))
        var ids: [String] = []
        while true {
            do {
                guard let r = try e.next() else { break }
                ids.append(r.docID!)
            } catch let err as CBLError {
                XCTAssertEqual(err.status, .internalError)
                ids.append("error")
            }
        }
        XCTAssertEqual(ids, all.map { $0.docID == "p00020" ? "error" : $0.docID! })
    }

    /// Texts stored before the arena grows keep their place until it is reset.
    func testArenaTextsSurviveGrowthUntilReset() {
        let arena = RowArena(capacity: 16)
        var lent: [(UnsafeBufferPointer<UInt8>, String)] = []
        for i in 0..<500 {
            let text = "text number \(i)"
            lent.append((arena.buffer(arena.store(text))!, text))
        }
        for (buffer, text) in lent {
            XCTAssertEqual(String(decoding: buffer, as: UTF8.self), text)
            XCTAssertEqual(buffer.baseAddress![buffer.count], 0)     // C strings
        }
        arena.reset()
        XCTAssertEqual(String(decoding: arena.buffer(arena.store("again"))!, as: UTF8.self), "again")
    }

    func testRedirectedRowsGrowingTheArenaAmongPlainRows() throws {
        // MapScan lends plain rows from the arena's base read once a run and re-reads it
        // after each row with a value: here every other row is redirected to a long
        // document ID, which the arena stores as it lends, growing it many times a page.
        let long = String(repeating: "x", count: 200)
        try db.inTransaction {
            for i in 0..<3000 {
                let body = i % 2 == 0 ? "{\"k\":\(i),\"to\":\"\(long)-\(i)\"}" : "{\"k\":\(i)}"
                _ = try c.put(docID: String(format: "r%05d", i), json: body, parent: nil)
            }
            return true
        }
        let v = try c.view(named: "redirects")
        v.setMapReduce(map: { doc, emit in
            let o = try doc.object
            guard let k = o["k"] else { return }
            if let to = o["to"]?.stringValue { emit.emit(k, .object(JSONObject([("_id", .string(to))]))) } else { emit.emit(k, nil) }
        }, reduce: nil, version: "1")
        for size in [1, 500, 3000] {
            let rows = try pagedRows(v.query(QueryOptions(json: "{}")), size: size)
            XCTAssertEqual(rows.count, 3000)
            for (i, r) in rows.enumerated() {
                let source = String(format: "r%05d", i)
                XCTAssertEqual(r.keyJSON, String(i))
                XCTAssertEqual(r.sourceDocID, source)
                XCTAssertEqual(r.docID, i % 2 == 0 ? "\(long)-\(i)" : source, "row \(i), pages of \(size)")
                XCTAssertEqual(r.value == nil, i % 2 == 1)
            }
        }
    }
}
