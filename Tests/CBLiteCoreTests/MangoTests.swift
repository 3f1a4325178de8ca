import XCTest
@testable import CBLiteCore

/// Mango in the engine: each operator by CouchDB 3.5's rules, the normalization that
/// decides them, the views' collation in comparisons, errors with CouchDB's texts, json
/// indexes (incremental, partial, chosen as CouchDB chooses) and paging by bookmark.
final class MangoTests: CBLCollectionTestCase {
    var c: Collection { coll }

    override func setUp() {
        super.setUp()
        let docs = [
            "a": #"{"name":"Alice","age":31,"tags":["x","y"],"addr":{"city":"Paris"},"n":{"a.b":1},"m":{"k1":1}}"#,
            "b": #"{"name":"bob","age":25,"tags":["y"],"addr":{"city":"Berlin"},"f":1.0}"#,
            "c": #"{"name":"Carol","age":"old","tags":[],"addr":{"city":"Paris"},"scores":[9,12]}"#,
            "d": #"{"name":"Dave","age":null,"scores":[1,2,3]}"#,
            "e": #"{"kind":"thing","items":[{"sku":"a","q":0},{"sku":"b","q":2}]}"#,
        ]
        for (id, json) in docs { _ = try! c.put(docID: id, json: json, parent: nil) }
    }

    func ids(_ selector: String, _ extra: String = "", file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let cur = try c.find(json: "{\"selector\":\(selector)\(extra.isEmpty ? "" : "," + extra)}")
        var out: [String] = []
        while let d = try cur.next() { out.append(d.objectValue?["_id"]?.stringValue ?? "?") }
        return out
    }

    func assertMango(_ error: String, _ reason: String, _ body: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try c.find(json: body), file: file, line: line) { e in
            XCTAssertEqual(e as? MangoError, MangoError(400, error, reason), file: file, line: line)
        }
    }

    func testComparisonsUseTheViewCollation() throws {
        XCTAssertEqual(try ids(#"{"name":"Alice"}"#), ["a"])
        XCTAssertEqual(try ids(#"{"name":{"$gt":"Bob"}}"#), ["c", "d"])       // "bob" < "Bob" < "Carol"
        XCTAssertEqual(try ids(#"{"age":{"$gt":30}}"#), ["a", "c"])          // strings sort after numbers
        XCTAssertEqual(try ids(#"{"age":{"$lt":30}}"#), ["b", "d"])          // null before numbers
        XCTAssertEqual(try ids(#"{"age":{"$gte":25,"$lte":31}}"#), ["a", "b"])
        XCTAssertEqual(try ids(#"{"f":1}"#), ["b"])                          // 1 and 1.0 collate equal
        XCTAssertEqual(try ids(#"{"age":{"$ne":25}}"#), ["a", "c", "d"])     // a missing field fails $ne
        XCTAssertEqual(try ids(#"{"_id":{"$gt":"c"}}"#), ["d", "e"])
    }

    func testEveryOperator() throws {
        XCTAssertEqual(try ids(#"{"age":{"$exists":false}}"#), ["e"])
        XCTAssertEqual(try ids(#"{"age":{"$type":"null"}}"#), ["d"])
        XCTAssertEqual(try ids(#"{"age":{"$type":"string"}}"#), ["c"])
        XCTAssertEqual(try ids(#"{"name":{"$in":["bob","Dave","x"]}}"#), ["b", "d"])
        XCTAssertEqual(try ids(#"{"tags":{"$in":["x"]}}"#), ["a"])            // an array: any of its items
        XCTAssertEqual(try ids(#"{"name":{"$nin":["bob","Dave"]}}"#), ["a", "c"])
        XCTAssertEqual(try ids(#"{"tags":{"$size":0}}"#), ["c"])
        XCTAssertEqual(try ids(#"{"age":{"$mod":[5,0]}}"#), ["b"])
        XCTAssertEqual(try ids(#"{"name":{"$regex":"^[A-C]"}}"#), ["a", "c"])
        XCTAssertEqual(try ids(#"{"name":{"$regex":"o"}}"#), ["b", "c"])      // unanchored
        XCTAssertEqual(try ids(#"{"name":{"$beginsWith":"Da"}}"#), ["d"])
        XCTAssertEqual(try ids(#"{"tags":{"$all":["y","x"]}}"#), ["a"])
        XCTAssertEqual(try ids(#"{"scores":{"$elemMatch":{"$gt":10}}}"#), ["c"])
        XCTAssertEqual(try ids(#"{"items":{"$elemMatch":{"sku":"b","q":{"$gt":1}}}}"#), ["e"])
        XCTAssertEqual(try ids(#"{"scores":{"$allMatch":{"$lt":5}}}"#), ["d"])
        XCTAssertEqual(try ids(#"{"m":{"$keyMapMatch":{"$eq":"k1"}}}"#), ["a"])
        XCTAssertEqual(try ids(#"{"$or":[{"name":"bob"},{"kind":"thing"}]}"#), ["b", "e"])
        XCTAssertEqual(try ids(#"{"name":{"$exists":true},"$nor":[{"addr.city":"Paris"},{"age":null}]}"#), ["b"])
        XCTAssertEqual(try ids(#"{"$and":[{"addr.city":"Paris"},{"age":{"$gt":0}}]}"#), ["a", "c"])
        XCTAssertEqual(try ids(#"{"addr":{"city":"Berlin"}}"#), ["b"])       // nested object: its fields
        XCTAssertEqual(try ids(#"{"n.a\\.b":1}"#), ["a"])                    // an escaped dot
        XCTAssertEqual(try ids(#"{"scores.1":12}"#), ["c"])                  // an array position
    }

    func testNegationIsPushedDownAsCouchDBDoes() throws {
        // {$not: {age: {$gt: 30}}} is {age: {$lte: 30}}: it needs age to exist (e has none).
        XCTAssertEqual(try ids(#"{"$not":{"age":{"$gt":30}}}"#), ["b", "d"])
        XCTAssertEqual(try ids(#"{"$not":{"age":{"$exists":true}}}"#), ["e"])
        // $regex cannot be negated into another operator: the field must still exist.
        XCTAssertEqual(try ids(#"{"name":{"$not":{"$regex":"^[A-C]"}}}"#), ["b", "d"])
        let s = try Selector(jsonValue(#"{"$nor":[{"a":1}],"b":{"c":{"$gt":2,"$lt":5}}}"#))
        XCTAssertEqual(s.json, try jsonValue(#"{"$and":[{"$and":[{"a":{"$ne":1}}]},{"$and":[{"b.c":{"$gt":2}},{"b.c":{"$lt":5}}]}]}"#))
    }

    func testErrorsHaveCouchDBsTexts() throws {
        assertMango("invalid_operator", "Invalid operator: $foo", #"{"selector":{"age":{"$foo":1}}}"#)
        assertMango("bad_arg", "Bad argument for operator $in: 5", #"{"selector":{"age":{"$in":5}}}"#)
        assertMango("bad_arg", "Bad argument for operator $size: <<116,119,111>>", #"{"selector":{"tags":{"$size":"two"}}}"#)
        assertMango("bad_arg", "Bad argument for operator $regex: <<40>>", #"{"selector":{"name":{"$regex":"("}}}"#)
        assertMango("invalid_selector_json", "Selector must be a JSON object, not: <<110,111>>", #"{"selector":"no"}"#)
        assertMango("missing_required_key", "Missing required key: selector", #"{"limit":1}"#)
        assertMango("invalid_key", "Invalid key bogus for this request.", #"{"selector":{},"bogus":1}"#)
        assertMango("invalid_non_neg_integer", "-1 is not an integer greater than or equal to zero", #"{"selector":{},"limit":-1}"#)
        assertMango("unsupported_mixed_sort", "Sorts currently only support a single direction for all fields.",
                    #"{"selector":{"age":{"$gt":0}},"sort":[{"age":"asc"},{"name":"desc"}]}"#)
        assertMango("no_usable_index", "No index exists for this sort, try indexing by the sort fields.",
                    #"{"selector":{"age":{"$gt":0}},"sort":["age"]}"#)
        assertMango("invalid_bookmark", #"Invalid bookmark value: "xyz""#, #"{"selector":{},"bookmark":"xyz"}"#)
    }

    func testProjectionSkipLimitAndBookmarks() throws {
        let cur = try c.find(json: #"{"selector":{"addr.city":{"$exists":true}},"fields":["_id","addr.city","zz"],"limit":2}"#)
        XCTAssertEqual(try cur.next(), try jsonValue(#"{"_id":"a","addr":{"city":"Paris"}}"#))
        XCTAssertEqual(try cur.next(), try jsonValue(#"{"_id":"b","addr":{"city":"Berlin"}}"#))
        XCTAssertNil(try cur.next())
        XCTAssertEqual(try ids(#"{"addr.city":{"$exists":true}}"#, #""bookmark":"\#(cur.bookmark)""#), ["c"])
        XCTAssertEqual(try ids(#"{}"#, #""skip":1,"limit":2"#), ["b", "c"])
        XCTAssertEqual(cur.warning, "No matching index found, create an index to optimize query time.")
    }

    func testIndexesAreIncrementalPartialAndChosenLikeCouchDB() throws {
        let r = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["age"]},"ddoc":"by-age","name":"age"}"#))
        XCTAssertEqual(r.result, "created")
        XCTAssertEqual(try c.createMangoIndex(jsonValue(#"{"index":{"fields":["age"]},"ddoc":"by-age","name":"age"}"#)).result, "exists")
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["name"],"partial_filter_selector":{"age":{"$type":"number"}}},"ddoc":"p","name":"p"}"#))
        // The index's order: by age in the collation, then document ID.
        XCTAssertEqual(try ids(#"{"age":{"$gt":null}}"#), ["b", "a", "c"])
        XCTAssertEqual(try ids(#"{"age":{"$gt":null}}"#, #""sort":[{"age":"desc"}]"#), ["c", "a", "b"])
        var cur = try c.find(json: #"{"selector":{"age":{"$gt":26}}}"#)
        XCTAssertEqual(cur.plan.index.name, "age")
        XCTAssertEqual(try cur.next()?.objectValue?["_id"], .string("a"))
        // A query sees its own writes.
        _ = try c.put(docID: "f", json: #"{"age":26.5}"#, parent: nil)
        XCTAssertEqual(try ids(#"{"age":{"$gt":26}}"#), ["f", "a", "c"])
        _ = try c.delete(docID: "f", parent: try c.doc("f")["_rev"]?.stringValue)
        XCTAssertEqual(try ids(#"{"age":{"$gt":26}}"#), ["a", "c"])
        // A partial index serves only queries that name it.
        cur = try c.find(json: #"{"selector":{"name":{"$gt":null}}}"#)
        XCTAssertTrue(cur.plan.index.isSpecial)
        XCTAssertEqual(try ids(#"{"name":{"$gt":null}}"#, #""use_index":["p","p"]"#), ["a", "b"])
        // Listed with the special index first; deleted with its design document.
        let list = try c.mangoIndexListJSON()
        XCTAssertEqual(list.objectValue?["total_rows"], .int(3))
        try c.deleteMangoIndex(ddoc: "p", type: "json", name: "p")
        XCTAssertThrowsError(try c.get(docID: "_design/p"))
        XCTAssertThrowsError(try c.deleteMangoIndex(ddoc: "p", type: "json", name: "p")) { e in
            XCTAssertEqual((e as? MangoError)?.status, 404)
        }
        XCTAssertEqual(try c.viewNames(), [])      // Mango's views are not the API's views
    }

    func testADesignDocumentWrittenAnyWayDefinesAnIndex() throws {
        _ = try c.put(docID: "_design/q", json: #"{"language":"query","views":{"n":{"map":{"fields":{"name":"asc"},"partial_filter_selector":{}},"reduce":"_count","options":{"def":{"fields":["name"]}}}}}"#, parent: nil)
        let cur = try c.find(json: #"{"selector":{"name":{"$gt":null}},"sort":["name"]}"#)
        XCTAssertEqual(cur.plan.index.ddoc, "_design/q")
        var names: [String] = []
        while let d = try cur.next() { names.append(d.objectValue?["name"]?.stringValue ?? "") }
        XCTAssertEqual(names, ["Alice", "bob", "Carol", "Dave"])
    }

    /// The conditions an index row's key decides are not checked again on its document
    /// (KeyFilter) — exact only at the revision the row was made from: a document changed
    /// since (an index not brought up to date: "update": false) is checked whole.
    func testKeyDecidedConditionsHoldOnlyForTheIndexedRevision() throws {
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["age","name"]},"ddoc":"an","name":"an"}"#))
        XCTAssertEqual(try ids(#"{"age":{"$gte":25,"$lt":31}}"#), ["b"])
        XCTAssertEqual(try ids(#"{"age":{"$gte":25},"name":{"$ne":"bob"}}"#), ["a", "c"])     // a second column's key
        XCTAssertEqual(try ids(#"{"age":{"$gt":null},"name":{"$regex":"^[ab]"}}"#), ["b"])   // and a residual condition
        XCTAssertEqual(try ids(#"{"age":{"$gte":31,"$lte":31},"name":"Alice"}"#), ["a"])
        // b moves out of the range and a into it; the index is not updated. b's row (25)
        // passes the key conditions, a's (31, in the scan's range up to [31, <MAX>]) fails
        // them: as CouchDB, both documents are read as they are now and checked whole.
        _ = try c.put(docID: "b", json: #"{"name":"bob","age":99}"#, parent: try c.doc("b")["_rev"]?.stringValue)
        _ = try c.put(docID: "a", json: #"{"name":"Alice","age":26}"#, parent: try c.doc("a")["_rev"]?.stringValue)
        XCTAssertEqual(try ids(#"{"age":{"$gte":25,"$lt":31}}"#, #""update":false"#), ["a"])
        XCTAssertEqual(try ids(#"{"age":{"$gte":25,"$lt":31}}"#), ["a"])
        XCTAssertEqual(try ids(#"{"age":{"$gte":25},"name":{"$ne":"bob"}}"#), ["a", "c"])
    }

    /// A scan range split by the key filter's bounds (KeyFilter.split): every key of the
    /// range is in exactly one part; the filter rejects every key below or above; it
    /// accepts only keys within, and every one of them when its bounds decide. Over ranges
    /// from none to a strict condition's own (a find's rows `[40]` of `$lt 40`).
    func testKeyFilterSplitsARangeIntoRejectedAndReadRows() throws {
        let values = ["null", "false", "0", "-1", "1", "7", "7.5", "40", "1e300", "\"a\"", "\"b\"", "[]", "[7]", "{}"]
        let ops = ["$lt", "$lte", "$eq", "$gte", "$gt", "$ne", "$exists"]
        var keys: [[UInt8]] = []
        for v in values {
            let x = try JSONParser.parse(v)
            keys.append(CollatableKey.encode(.array([x])))
            keys.append(CollatableKey.encode(.array([x, .int(3)])))
            keys.append(CollatableKey.encode(.array([x, .string("z")])))
        }
        // (A json index's keys hold an item a column: never `[]`.)
        func contains(_ r: QueryOptions.Range?, _ k: [UInt8]) -> Bool {
            guard let r else { return false }
            XCTAssertNil(r.lowerDocID); XCTAssertNil(r.upperDocID)
            if let lo = r.lower, CollatableKey.compare(k, lo) < (r.lowerInclusive ? 0 : 1) { return false }
            if let hi = r.upper, CollatableKey.compare(k, hi) > (r.upperInclusive ? 0 : -1) { return false }
            return true
        }
        let seven = try JSONParser.parse("7")
        let ranges: [QueryOptions.Range] = [
            QueryOptions.Range(),
            QueryOptions.Range(lower: CollatableKey.encode(.array([seven])), upper: IndexKeys.encode([.int(40)], open: true)),
            QueryOptions.Range(lower: CollatableKey.encode(.array([seven])), upper: CollatableKey.encode(.array([.int(40)]))),
            QueryOptions.Range(lower: IndexKeys.encode([seven], open: true), lowerInclusive: false,
                               upper: CollatableKey.encode(.array([.string("a")])), upperInclusive: false)]
        var split = 0, decided = 0
        for op1 in ops { for v1 in values { for (op2, v2) in [("", "")] + ops.map { ($0, "7") } {
            var sel = "{\"age\":{\"\(op1)\":\(op1 == "$exists" ? "true" : v1)"
            if op2 != "", op2 != op1 { sel += ",\"\(op2)\":\(op2 == "$exists" ? "true" : v2)" }
            sel += "}}"
            guard let f = KeyFilter(try Selector(json: sel), columns: ["age", "name"]) else { continue }
            if f.boundsDecide { decided += 1 }
            for range in ranges {
                let (below, within, above) = f.split(range)
                if below != nil || above != nil { split += 1 }
                for k in keys {
                    let parts = [below, within, above].filter { contains($0, k) }.count
                    XCTAssertEqual(parts, contains(range, k) ? 1 : 0, "\(sel): \(k) in \(parts) parts")
                    let accepted = k.withUnsafeBufferPointer(f.accepts)
                    if contains(below, k) || contains(above, k) { XCTAssertFalse(accepted, "\(sel): \(k) outside, accepted") }
                    if contains(within, k) && f.boundsDecide { XCTAssertTrue(accepted, "\(sel): \(k) within, rejected") }
                }
            }
        } } }
        XCTAssertGreaterThan(split, 300)
        XCTAssertGreaterThan(decided, 100)
        // `$lt 40` over its find's range: the rows of [40] are above, none within.
        let f = try XCTUnwrap(KeyFilter(try Selector(json: #"{"age":{"$gt":20,"$lt":40}}"#), columns: ["age"]))
        XCTAssertTrue(f.boundsDecide)
        let parts = f.split(QueryOptions.Range(lower: CollatableKey.encode(.array([.int(20)])), upper: IndexKeys.encode([.int(40)], open: true)))
        XCTAssertTrue(contains(parts.below, CollatableKey.encode(.array([.int(20), .int(9)]))))
        XCTAssertTrue(contains(parts.above, CollatableKey.encode(.array([.int(40)]))))
        XCTAssertFalse(contains(parts.within, CollatableKey.encode(.array([.int(40)]))))
        XCTAssertFalse(try XCTUnwrap(KeyFilter(try Selector(json: #"{"age":{"$gt":20,"$ne":30}}"#), columns: ["age"])).boundsDecide)
        XCTAssertFalse(try XCTUnwrap(KeyFilter(try Selector(json: #"{"age":20,"name":"x"}"#), columns: ["age", "name"])).boundsDecide)
    }

    /// A find examines every row of its index range, as CouchDB does, whether it reads the
    /// row's document or rejects it by the key filter's bounds unread (KeyFilter.split):
    /// the rows below a `$gt`'s value first, the rows of a `$lt`'s value last — these only
    /// when the scan gets that far (a limit met before them leaves them unexamined).
    func testAFindExaminesTheRowsOutsideTheKeyBoundsWithoutReadingThem() throws {
        for v in 0..<10 { for copy in 0..<2 { _ = try c.put(docID: "v\(v)-\(copy)", json: "{\"v\":\(v)}", parent: nil) } }
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["v"]},"ddoc":"v","name":"v"}"#))
        func stats(_ query: String) throws -> (ids: [String], keys: Int64, docs: Int64) {
            let cur = try c.find(json: query)
            var ids: [String] = []
            while let d = try cur.next() { ids.append(d.objectValue?["_id"]?.stringValue ?? "?") }
            return (ids, cur.keysExamined, cur.docsExamined)
        }
        // The range [3] to [7, <MAX>]: two rows of 3 below, six read, two of 7 above.
        var r = try stats(#"{"selector":{"v":{"$gt":3,"$lt":7}}}"#)
        XCTAssertEqual(r.ids, ["v4-0", "v4-1", "v5-0", "v5-1", "v6-0", "v6-1"])
        XCTAssertEqual(r.keys, 10)
        XCTAssertEqual(r.docs, 10)
        r = try stats(#"{"selector":{"v":{"$gt":3,"$lt":7}},"limit":2}"#)
        XCTAssertEqual(r.ids, ["v4-0", "v4-1"])
        XCTAssertEqual(r.keys, 4)                        // the rows of 3, then two read
        r = try stats(#"{"selector":{"v":{"$gt":3,"$lt":7}},"sort":[{"v":"desc"}],"limit":2}"#)
        XCTAssertEqual(r.ids, ["v6-1", "v6-0"])
        XCTAssertEqual(r.keys, 4)                        // descending: the rows of 7 first
        r = try stats(#"{"selector":{"v":{"$gt":3,"$lt":7}},"sort":[{"v":"desc"}]}"#)
        XCTAssertEqual(r.keys, 10)
        r = try stats(#"{"selector":{"v":{"$gt":3,"$lt":7}},"skip":6}"#)
        XCTAssertEqual(r.ids, [])
        XCTAssertEqual(r.keys, 10)
        // Bounds that admit nothing: every row of the range examined, none read.
        r = try stats(#"{"selector":{"v":{"$gt":5,"$lt":5}}}"#)
        XCTAssertEqual(r.ids, [])
        XCTAssertEqual(r.keys, r.docs)
        // The same with the filter's checks (update false reads every row's document).
        r = try stats(#"{"selector":{"v":{"$gt":3,"$lt":7}},"update":false}"#)
        XCTAssertEqual(r.ids.count, 6)
        XCTAssertEqual(r.keys, 10)
        XCTAssertEqual(r.docs, 10)
    }

    /// A live find runs its query again after each change and delivers its documents
    /// when they differ (LiveQuery's mechanism, as for views).
    func testALiveFindDeliversItsDocumentsWhenTheyChange() throws {
        let seen = LockedValue<[[String]]>([])
        let lq = LiveQuery(collection: c, find: try FindRequest(json: #"{"selector":{"age":{"$gt":30}}}"#)) { e in
            let ids = ((try? e.allRows()) ?? []).compactMap { $0.docID }
            seen.withLock { $0.append(ids) }
        }
        try lq.start()
        defer { lq.stop() }
        XCTAssertTrue(lq.waitIdle())
        XCTAssertEqual(seen.withLock { $0 }, [["a", "c"]])                   // "old": strings sort after numbers
        _ = try c.put(docID: "g", json: #"{"age":40}"#, parent: nil)
        _ = try c.put(docID: "h", json: #"{"age":3}"#, parent: nil)         // not found: nothing delivered
        XCTAssertTrue(lq.waitIdle())
        XCTAssertEqual(seen.withLock { $0 }, [["a", "c"], ["a", "c", "g"]])
        try lq.setFind(try FindRequest(json: #"{"selector":{"age":{"$lt":4}}}"#))
        XCTAssertTrue(lq.waitIdle())
        XCTAssertEqual(seen.withLock { $0 }.last, ["d", "h"])                // null sorts before numbers
        let unusable = LiveQuery(collection: c, find: try FindRequest(json: #"{"selector":{"x":1},"sort":["x"]}"#)) { _ in }
        XCTAssertThrowsError(try unusable.start())
    }

    /// `_explain`'s other indexes as CouchDB 3.5 ranks them (mango_cursor): the usable
    /// json indexes by their place after the chosen one, then `_all_docs`, then the
    /// unusable, then the partial ones; listed by design document, descending.
    func testExplainRanksTheOtherIndexesAsCouchDB() throws {
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["age"]},"ddoc":"a1","name":"age"}"#))
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["age","name"]},"ddoc":"a2","name":"age-name"}"#))
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["name"]},"ddoc":"n","name":"name"}"#))
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["age"],"partial_filter_selector":{"x":1}},"ddoc":"p","name":"p"}"#))
        func candidates(_ selector: String) throws -> [String] {
            let plan = try c.explain(try FindRequest(json: "{\"selector\":\(selector)}"), databaseName: "db")
            return (plan.objectValue?["index_candidates"]?.arrayValue ?? []).map { cand -> String in
                let i = cand.objectValue?["index"]?.objectValue, a = cand.objectValue?["analysis"]?.objectValue
                let reason = a?["reasons"]?.arrayValue?.first?.objectValue?["name"]?.stringValue ?? "?"
                return "\(i?["name"]?.stringValue ?? "?") \(a?["usable"]?.boolValue ?? false) \(reason) \(a?["ranking"]?.intValue ?? -1)"
            }
        }
        XCTAssertEqual(try candidates(#"{"age":{"$gt":1}}"#),             // age-name needs both fields
                       ["p false is_partial 3", "name false field_mismatch 2", "age-name false field_mismatch 2",
                        "_all_docs true unfavored_type 1"])
        XCTAssertEqual(try candidates(#"{"age":{"$gt":1},"name":{"$gt":null}}"#),    // age-name chosen: no field left out
                       ["p false is_partial 4", "name true less_overlap 2", "age true less_overlap 1",
                        "_all_docs true unfavored_type 3"])
    }

    /// A find longer than its scan's pages (256 rows with their documents) reads every row
    /// once, in index order, across the pages: within one key (the rest of its documents)
    /// and across keys, ascending and descending.
    func testAFindReadsEveryRowOnceAcrossItsPages() throws {
        let n = 1_300
        for i in 0..<n { _ = try c.put(docID: String(format: "k%04d", i), json: "{\"v\":\(i % 3)}", parent: nil) }
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["v"]}}"#))
        let ids = (0..<n).map { String(format: "k%04d", $0) }
        func byValue(_ values: [Int]) -> [String] { values.flatMap { v in ids.enumerated().filter { $0.offset % 3 == v }.map(\.element) } }
        XCTAssertEqual(try self.ids(#"{"v":1}"#, #""limit":5000"#), byValue([1]))
        XCTAssertEqual(try self.ids(#"{"v":{"$gte":1}}"#, #""limit":5000"#), byValue([1, 2]))
        XCTAssertEqual(try self.ids(#"{"v":{"$gte":1}}"#, #""limit":5000,"sort":[{"v":"desc"}]"#),
                       Array(byValue([1, 2]).reversed()))
        XCTAssertEqual(try self.ids(#"{"v":{"$gt":0,"$lt":2}}"#, #""limit":5000,"skip":300"#), Array(byValue([1]).dropFirst(300)))
    }

    /// A find's page ends at its byte budget (FindCursor.pageBytes) as well as at its rows:
    /// large documents take several pages, each row read once, in order.
    func testAFindOfLargeDocumentsReadsThemAcrossPagesBoundedInBytes() throws {
        let filler = String(repeating: "x", count: 10_000)
        for i in 0..<400 { _ = try c.put(docID: String(format: "L%03d", i), json: "{\"v\":\(i % 2),\"f\":\"\(filler)\"}", parent: nil) }
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["v"]}}"#))
        let want = (0..<400).filter { $0 % 2 == 1 }.map { String(format: "L%03d", $0) }     // 2 MB: three pages
        XCTAssertEqual(try ids(#"{"v":1}"#, #""limit":1000"#), want)
        XCTAssertEqual(try ids(#"{"v":1}"#, #""limit":150,"skip":20"#), Array(want[20..<170]))
        XCTAssertEqual(try ids(#"{"v":{"$gte":0}}"#, #""limit":1000,"sort":[{"v":"desc"}]"#).count, 400)
    }

    func testPagingAnIndexByBookmarkCoversEveryResultOnce() throws {
        for i in 0..<600 { _ = try c.put(docID: String(format: "k%04d", i), json: "{\"v\":\(i % 7)}", parent: nil) }
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["v"]}}"#))
        var seen: [String] = [], bookmark = "nil"
        while true {
            let cur = try c.find(json: #"{"selector":{"v":{"$gte":2}},"limit":100,"bookmark":"\#(bookmark)"}"#)
            var n = 0
            while let d = try cur.next() { seen.append(d.objectValue?["_id"]?.stringValue ?? ""); n += 1 }
            if n == 0 { break }
            bookmark = cur.bookmark
        }
        XCTAssertEqual(seen.count, (0..<600).filter { $0 % 7 >= 2 }.count)
        XCTAssertEqual(Set(seen).count, seen.count)
    }
}

/// FieldPath's lookup over JSON text (what find and the index build read documents with)
/// gives what its lookup over the parsed value gives, for members past values of every
/// kind, escaped names, array positions and paths that go nowhere.
final class FieldPathScanTests: XCTestCase {
    func testTheTextLookupAgreesWithTheTreeLookup() throws {
        let doc = #"{"s":"a\"}]b,","bs":"\\","q\\":"\\\"","n":-1.5e3,"t":true,"z":null,"o":{"x":[1,{"y":"}"}],"e":{}},"#
            + #""a":[[],{"k":[2,3]},"q"],"es\u0063":{"d.e":7},"\u00e9":1,"u":"é","pre":1,"prefix":2,"say\"hi":3,"last":[ 1 , 2 ]}"#
        let paths = ["s", "bs", "q\\", "n", "t", "z", "o", "o.x", "o.x.1.y", "o.x.0", "o.x.2", "o.e", "o.e.q", "a.0", "a.1.k.1", "a.1.k.2",
                     "a.2", "a.3", "a.+1", "a.-1", "a.x", "esc", "esc.d\\.e", "esc.d", "é", "u", "u.0", "t.x", "missing",
                     "last.1", "last", "pre", "pref", "prefix", "prefixes", "say\"hi", "say", "las"]
        let tree = try JSONParser.parse(doc)
        var text = Array(doc.utf8)
        for p in paths {
            let path = try FieldPath(p)
            let want = path.lookup(in: tree)
            let got = try text.withUnsafeMutableBufferPointer { try path.lookup(inJSON: UnsafeBufferPointer($0)) }
            switch (want, got) {
            case (.found(let a), .found(let b)): XCTAssertEqual(a, b, p)
            case (.notFound, .notFound), (.badPath, .badPath): break
            default: XCTFail("\(p): \(want) != \(got)")
            }
        }
    }
}
