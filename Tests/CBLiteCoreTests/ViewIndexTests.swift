import XCTest
@testable import CBLiteCore

/// Helpers shared by the view tests.
extension CBLTestCase {
    /// A view emitting doc.k (when present) with value doc.v (absent value when missing).
    func keyView(_ coll: Collection, _ name: String = "byK", version: String = "1", reduce: Reducer? = nil,
                 calls: Locked<Int>? = nil) throws -> View {
        let v = try coll.view(named: name)
        v.setMapReduce(map: { doc, emit in
            calls?.with { $0 += 1 }
            let o = try doc.object
            if let k = o["k"] { emit.emit(k, o["v"]) }
        }, reduce: reduce, version: version)
        return v
    }

    func rows(_ v: View, _ options: String = "{}", file: StaticString = #filePath, line: UInt = #line) throws -> [QueryRow] {
        try v.query(QueryOptions(json: options)).allRows()
    }

    func keys(_ v: View, _ options: String = "{}") throws -> [String] { try rows(v, options).map(\.keyJSON) }
    func ids(_ v: View, _ options: String = "{}") throws -> [String] { try rows(v, options).map { $0.docID ?? "-" } }
}

final class ViewIndexTests: CBLTestCase {
    func testIndexesEveryDocumentInCollationOrder() throws {
        let db = try open()
        let c = try db.defaultCollection()
        // Stored documents are canonical (sorted members), so the map emits the sample
        // keys from their text, keeping object members in their given order.
        for (i, n) in Array(CollationTests.couchOrder.indices).shuffled().enumerated() {
            _ = try c.put(docID: "d\(i)", json: "{\"n\":\(n)}", parent: nil)
        }
        let v = try c.view(named: "sample")
        v.setMapReduce(map: { doc, e in
            let n = Int(try doc.object["n"]!.intValue!)
            try e.emit(keyJSON: CollationTests.couchOrder[n], valueJSON: nil)
        }, reduce: nil, version: "1")
        let got = try keys(v)
        XCTAssertEqual(got.count, CollationTests.couchOrder.count)
        XCTAssertEqual(got, CollationTests.couchOrder.map { $0 == "3.0" ? "3" : $0 })
        XCTAssertEqual(try v.totalRows, Int64(CollationTests.couchOrder.count))
        XCTAssertEqual(try v.lastSequenceIndexed, try c.lastSequence)
        assertSound(db)
    }

    func testIncrementalUpdatesMapOnlyChangedDocuments() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let calls = Locked(0)
        let v = try keyView(c, calls: calls)
        for i in 0..<10 { _ = try c.put(docID: "d\(i)", json: "{\"k\":\(i)}", parent: nil) }
        XCTAssertEqual(try keys(v).count, 10)
        XCTAssertEqual(calls.get(), 10)
        // Nothing changed: no map calls.
        XCTAssertEqual(try keys(v).count, 10)
        XCTAssertEqual(calls.get(), 10)
        // Update one, delete one, insert one: three documents mapped (a deletion is not).
        let d3 = try c.doc("d3")
        _ = try c.put(docID: "d3", json: "{\"k\":33}", parent: d3["_rev"]!.stringValue)
        _ = try c.delete(docID: "d5", parent: nil)
        _ = try c.put(docID: "d10", json: "{\"k\":-1}", parent: nil)
        XCTAssertEqual(try keys(v), ["-1", "0", "1", "2", "4", "6", "7", "8", "9", "33"])
        XCTAssertEqual(calls.get(), 12)
        XCTAssertEqual(try v.totalRows, 10)
        // A document that stops emitting leaves the index.
        let d7 = try c.doc("d7")
        _ = try c.put(docID: "d7", json: "{\"other\":1}", parent: d7["_rev"]!.stringValue)
        XCTAssertFalse(try keys(v).contains("7"))
        XCTAssertEqual(try v.totalRows, 9)
    }

    func testPurgedDocumentsLeaveTheIndex() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let v = try keyView(c)
        for i in 0..<5 { _ = try c.put(docID: "d\(i)", json: "{\"k\":\(i)}", parent: nil) }
        XCTAssertEqual(try keys(v).count, 5)
        let gen = try v.generation
        try c.purge(docID: "d2")
        // Even reading the index as it is (no update) shows the purge.
        XCTAssertEqual(try keys(v, "{\"update\":false}"), ["0", "1", "3", "4"])
        XCTAssertNotEqual(try v.generation, gen)
        XCTAssertEqual(try keys(v), ["0", "1", "3", "4"])
        XCTAssertEqual(try v.totalRows, 4)
        // A purged deleted document too; and purge inside a transaction.
        try db.begin()
        try c.purge(docID: "d0")
        try db.commit()
        XCTAssertEqual(try keys(v), ["1", "3", "4"])
    }

    func testConflictedDocumentsAreIndexedByTheirWinner() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let v = try keyView(c)
        try c.putExisting(docID: "doc", json: "{\"k\":\"base\"}", history: ["1-a"])
        try c.putExisting(docID: "doc", json: "{\"k\":\"low\"}", history: ["2-b", "1-a"])
        try c.putExisting(docID: "doc", json: "{\"k\":\"high\"}", history: ["2-c", "1-a"])
        XCTAssertEqual(try keys(v), ["\"high\""])         // 2-c wins (higher revid)
        // Deleting the winning branch makes the other leaf current.
        _ = try c.delete(docID: "doc", parent: "2-c")
        XCTAssertEqual(try keys(v), ["\"low\""])
        // All leaves deleted: the document leaves the index.
        _ = try c.delete(docID: "doc", parent: "2-b")
        XCTAssertEqual(try keys(v), [])
    }

    func testVersionChangeRebuildsTheIndex() throws {
        let db = try open()
        let c = try db.defaultCollection()
        for i in 0..<4 { _ = try c.put(docID: "d\(i)", json: "{\"k\":\(i),\"v\":\(i * 10)}", parent: nil) }
        let v = try keyView(c)
        XCTAssertEqual(try keys(v), ["0", "1", "2", "3"])
        // Same version, different function: the index is not rebuilt (the seeds' rule).
        v.setMapReduce(map: { doc, e in e.emit(.string("x"), nil) }, reduce: nil, version: "1")
        XCTAssertEqual(try keys(v), ["0", "1", "2", "3"])
        // New version: rebuilt from scratch.
        v.setMapReduce(map: { doc, e in let o = try doc.object; e.emit(o["v"]!, nil) }, reduce: nil, version: "2")
        XCTAssertEqual(try keys(v), ["0", "10", "20", "30"])
        XCTAssertEqual(try v.totalRows, 4)
        // The version survives reopening: another handle with version "2" does not rebuild.
        let calls = Locked(0)
        let db2 = try open()
        let v2 = try db2.defaultCollection().view(named: "byK")
        v2.setMapReduce(map: { _, e in calls.with { $0 += 1 }; e.emit(.null, nil) }, reduce: nil, version: "2")
        XCTAssertEqual(try keys(v2), ["0", "10", "20", "30"])
        XCTAssertEqual(calls.get(), 0)
    }

    func testDeletingAViewDeletesItsIndex() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "a", json: "{\"k\":1}", parent: nil)
        let v = try keyView(c)
        XCTAssertEqual(try keys(v), ["1"])
        XCTAssertEqual(try c.viewNames(), ["byK"])
        try v.delete()
        XCTAssertEqual(try c.viewNames(), [])
        XCTAssertEqual(try keys(v, "{\"update\":false}"), [])
        assertStatus(.notFound, try v.delete())
        XCTAssertEqual(try keys(v), ["1"])                // re-created on demand
        assertSound(db)
    }

    func testDeletingACollectionDropsItsViews() throws {
        let db = try open()
        let c = try db.createCollection(scope: nil, name: "things")
        _ = try c.put(docID: "a", json: "{\"k\":1}", parent: nil)
        let v = try keyView(c)
        XCTAssertEqual(try keys(v), ["1"])
        try db.deleteCollection(scope: nil, name: "things")
        assertStatus(.notFound, try v.query())
        let c2 = try db.createCollection(scope: nil, name: "things")
        XCTAssertEqual(try c2.viewNames(), [])
        let tables = try db.store.read { try $0.queryInt("SELECT count(*) FROM sqlite_master WHERE name GLOB 'view_index_[0-9]*' AND type='table'") }
        XCTAssertEqual(tables, 0)
    }

    func testEmittingNullKeysAbsentValuesAndRedirects() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "post1", json: "{\"title\":\"hello\"}", parent: nil)
        _ = try c.put(docID: "like1", json: "{\"post\":\"post1\",\"who\":\"ann\"}", parent: nil)
        _ = try c.put(docID: "n", json: "{\"x\":1}", parent: nil)
        let v = try c.view(named: "likes")
        v.setMapReduce(map: { doc, e in
            let o = try doc.object
            if let p = o["post"]?.stringValue {
                e.emit(o["who"]!, .object(JSONObject([("_id", .string(p))])))
            } else if o["x"] != nil {
                e.emit(.null, nil)
            }
        }, reduce: nil, version: "1")
        let r = try rows(v, "{\"include_docs\":true}")
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r[0].keyJSON, "null")             // null sorts first
        XCTAssertNil(r[0].value)
        XCTAssertEqual(r[0].docID, "n")
        XCTAssertEqual(r[1].docID, "post1")              // redirected
        XCTAssertEqual(r[1].sourceDocID, "like1")
        XCTAssertEqual(obj(r[1].doc!)["title"], .string("hello"))
        let json = String(decoding: try v.query(QueryOptions(json: "{\"include_docs\":true}")).json(), as: UTF8.self)
        XCTAssertTrue(json.contains("\"source_id\":\"like1\""), json)
        XCTAssertTrue(json.contains("\"value\":null"), json)
    }

    func testMapErrorsFailTheQueryAndLeaveTheIndexConsistent() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "a", json: "{\"k\":1}", parent: nil)
        let v = try c.view(named: "bad")
        v.setMapReduce(map: { doc, e in try e.emit(keyJSON: "{not json", valueJSON: nil) }, reduce: nil, version: "1")
        assertStatus(.badRequest, try v.query())
        XCTAssertEqual(try v.lastSequenceIndexed, 0)
        let unset = try c.view(named: "unset")
        assertStatus(.notAcceptable, try unset.query())
        XCTAssertEqual(try unset.query(QueryOptions(json: "{\"update\":false}")).allRows().count, 0)
        assertStatus(.badRequest, try c.view(named: ""))
    }

    func testLargeIndexAcrossManyChunksAndPages() throws {
        let db = try open()
        let c = try db.defaultCollection()
        try db.begin()
        for i in 0..<2000 { _ = try c.put(docID: String(format: "d%05d", i), json: "{\"k\":\(i % 100),\"v\":1}", parent: nil) }
        try db.commit()
        let v = try keyView(c, reduce: .count)
        let all = try rows(v, "{\"reduce\":false}")
        XCTAssertEqual(all.count, 2000)
        for (a, b) in zip(all, all.dropFirst()) {
            let k = Collation.compare(a.key, b.key)
            XCTAssertTrue(k < 0 || (k == 0 && a.docID! < b.docID!))
        }
        XCTAssertEqual(try rows(v).first?.valueJSON, "2000")
        XCTAssertEqual(try rows(v, "{\"reduce\":false,\"descending\":true}").map { $0.docID! }, all.reversed().map { $0.docID! })
    }

    /// Rows are read page by page as they are consumed, not all at once: rows removed
    /// from the index after the first page was read are not returned.
    func testEnumeratorStreamsPageByPage() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let page = MapScan.pageSize
        try db.begin()
        for i in 0..<(3 * page) { _ = try c.put(docID: String(format: "d%05d", i), json: "{\"k\":\(i)}", parent: nil) }
        try db.commit()
        let v = try keyView(c)
        let e = try v.query()
        XCTAssertEqual(try e.next()?.keyJSON, "0")
        try db.begin()
        for i in (2 * page)..<(3 * page) { try c.purge(docID: String(format: "d%05d", i)) }
        try db.commit()
        var n = 1
        while try e.next() != nil { n += 1 }
        XCTAssertEqual(n, 2 * page)
        XCTAssertTrue(try e.isStale)
    }

    func testStaleResultSets() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let v = try keyView(c)
        _ = try c.put(docID: "a", json: "{\"k\":1}", parent: nil)
        let e = try v.query()
        XCTAssertFalse(try e.isStale)
        _ = try c.put(docID: "b", json: "{\"k\":2}", parent: nil)
        XCTAssertTrue(try e.isStale)                       // the index is behind
        let e2 = try v.query()
        XCTAssertFalse(try e2.isStale)
        _ = try c.put(docID: "c", json: "{\"nokey\":2}", parent: nil)
        XCTAssertTrue(try e2.isStale)                      // conservative until indexed
        try v.updateIndex()
        XCTAssertFalse(try e2.isStale)                     // indexed, and no row changed
        try c.purge(docID: "a")
        XCTAssertTrue(try e2.isStale)                      // the index changed
        let all = try c.allDocsQuery()
        XCTAssertFalse(try all.isStale)
        _ = try c.put(docID: "z", json: "{}", parent: nil)
        XCTAssertTrue(try all.isStale)
    }

    func testUpdateAfterReturnsStaleRowsThenUpdates() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let v = try keyView(c)
        _ = try c.put(docID: "a", json: "{\"k\":1}", parent: nil)
        XCTAssertEqual(try keys(v), ["1"])
        _ = try c.put(docID: "b", json: "{\"k\":2}", parent: nil)
        XCTAssertEqual(try keys(v, "{\"update\":false}"), ["1"])
        XCTAssertEqual(try keys(v, "{\"stale\":\"ok\"}"), ["1"])
        XCTAssertEqual(try keys(v, "{\"update\":\"after\"}"), ["1"])
        v.waitForBackgroundUpdates()
        XCTAssertEqual(try keys(v, "{\"update\":false}"), ["1", "2"])
    }

    /// Every connection has the collation: compaction (VACUUM rebuilds the index) and
    /// re-keying (sqlcipher_export re-creates it) keep the view working.
    func testIndexSurvivesCompactionAndReKeyingAndReopening() throws {
        let db = try open("enc", options: "{\"encryption_key\":{\"password\":\"s3cret\"}}")
        let c = try db.defaultCollection()
        for (i, k) in ["\"b\"", "\"A\"", "\"a\"", "null", "[1]"].enumerated() {
            _ = try c.put(docID: "d\(i)", json: "{\"k\":\(k)}", parent: nil)
        }
        let v = try keyView(c)
        let want = ["null", "\"a\"", "\"A\"", "\"b\"", "[1]"]
        XCTAssertEqual(try keys(v), want)
        try db.compact()
        XCTAssertEqual(try keys(v, "{\"update\":false}"), want)
        try db.changeEncryptionKey(.password("other"))
        XCTAssertEqual(try keys(v, "{\"update\":false}"), want)
        XCTAssertEqual(try keys(v, "{\"startkey\":\"a\",\"endkey\":\"b\",\"inclusive_end\":false}"), ["\"a\"", "\"A\""])
        assertSound(db)
        try db.close()
        let again = try open("enc", options: "{\"encryption_key\":{\"password\":\"other\"}}")
        let v2 = try keyView(try again.defaultCollection())
        XCTAssertEqual(try keys(v2, "{\"update\":false}"), want)
        XCTAssertEqual(try v2.lastSequenceIndexed, 5)
    }

    /// The map function sees each document as a read renders it (IDs and revisions that
    /// need escaping, bodies with and without members), and never a deleted one.
    func testTheMapFunctionSeesDocumentsAsAReadRendersThem() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let docIDs = ["plain", "quo\"te", "back\\slash", "unicodé", "sl/ash"]
        for (i, id) in docIDs.enumerated() { _ = try c.put(docID: id, json: i == 0 ? "{}" : "{\"k\":\(i),\"s\":\"x\\\"y\"}", parent: nil) }
        let gone = try c.put(docID: "gone", json: "{\"k\":9}", parent: nil)
        _ = try c.put(docID: "gone", json: "{\"_deleted\":true}", parent: gone.revID)
        let seen = Locked<[String: [UInt8]]>([:])
        let v = try c.view(named: "seen")
        v.setMapReduce(map: { doc, emit in
            seen.with { $0[doc.docID] = doc.json }
            XCTAssertEqual(doc.withCString { String(cString: $0) }, String(decoding: doc.json, as: UTF8.self))
            let o = try doc.object
            XCTAssertEqual(o["_id"]?.stringValue, doc.docID)
            XCTAssertEqual(o["_rev"]?.stringValue, doc.revID)
            emit.emit(.string(doc.docID), nil)
        }, reduce: nil, version: "1")
        XCTAssertEqual(try ids(v).sorted(), docIDs.sorted())
        let got = seen.with { $0 }
        XCTAssertEqual(Set(got.keys), Set(docIDs))
        for id in docIDs { XCTAssertEqual(got[id].map { String(decoding: $0, as: UTF8.self) }, String(decoding: try c.get(docID: id), as: UTF8.self), id) }
    }

    func testViewsInCollectionsAreSeparate() throws {
        let db = try open()
        let a = try db.defaultCollection()
        let b = try db.createCollection(scope: "s", name: "b")
        _ = try a.put(docID: "x", json: "{\"k\":\"in a\"}", parent: nil)
        _ = try b.put(docID: "x", json: "{\"k\":\"in b\"}", parent: nil)
        XCTAssertEqual(try keys(try keyView(a)), ["\"in a\""])
        XCTAssertEqual(try keys(try keyView(b)), ["\"in b\""])
        try b.purge(docID: "x")
        XCTAssertEqual(try keys(try keyView(a), "{\"update\":false}"), ["\"in a\""])
    }
}
