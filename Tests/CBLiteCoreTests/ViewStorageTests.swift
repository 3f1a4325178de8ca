import CSQLCipher
import XCTest
@testable import CBLiteCore

/// How view indexes are stored and written: key formats and their rebuilds, indexes of
/// earlier versions, batched writes racing with document changes, the `_count` computed
/// by SQLite against the streamed reduction, and paging through equal keys.
final class ViewStorageTests: CBLCollectionTestCase {
    private func put(_ id: String, _ json: String) throws { _ = try coll.put(docID: id, json: json, parent: nil) }

    private func indexTables() throws -> [String] {
        try db.store.read { conn in
            let s = try conn.prepare("SELECT name FROM sqlite_master WHERE type='table' AND name GLOB 'view_*' ORDER BY name")
            defer { s.reset() }
            var out: [String] = []
            while try s.step() { out.append(s.string(0)!) }
            return out
        }
    }

    /// cblite 0.1 kept JSON keys under a custom collation (CBL_JSON) in `view_registry`
    /// and `view_<id>` tables; they cannot be read without that collation, so the first
    /// index write drops them and the view is rebuilt.
    func testIndexesOfTheEarlierFormatAreDroppedAndRebuilt() throws {
        for i in 0..<5 { try put("d\(i)", "{\"k\":\(i)}") }
        try db.store.write { conn, _ in
            let rc = sqlite3_create_collation_v2(conn.db, "CBL_JSON", SQLITE_UTF8, nil, { _, n1, p1, n2, p2 in
                let r = memcmp(p1!, p2!, Int(min(n1, n2)))
                return r != 0 ? r : n1 - n2
            }, nil)
            XCTAssertEqual(rc, SQLITE_OK)
            try conn.exec("""
            CREATE TABLE view_registry(id INTEGER PRIMARY KEY AUTOINCREMENT, coll INTEGER NOT NULL, name TEXT NOT NULL,
                version TEXT NOT NULL, last_seq INTEGER NOT NULL DEFAULT 0, total_rows INTEGER NOT NULL DEFAULT 0,
                generation INTEGER NOT NULL DEFAULT 0, UNIQUE(coll, name));
            INSERT INTO view_registry(id, coll, name, version, last_seq, total_rows) VALUES (1, 1, 'byK', '1', 5, 5);
            CREATE TABLE view_1(key TEXT NOT NULL COLLATE CBL_JSON, docid TEXT NOT NULL, n INTEGER NOT NULL, value TEXT,
                seq INTEGER NOT NULL, PRIMARY KEY(key, docid, n)) WITHOUT ROWID;
            INSERT INTO view_1 VALUES ('0','d0',0,NULL,1), ('1','d1',0,NULL,2);
            """)
        }
        try db.close()
        db = try open()                        // no CBL_JSON collation on these connections
        coll = try db.defaultCollection()
        let v = try keyView(coll)
        XCTAssertEqual(try keys(v, "{\"update\":false}"), [], "the old index is not read")
        XCTAssertEqual(try keys(v), ["0", "1", "2", "3", "4"])
        XCTAssertEqual(try indexTables(), ["view_counts_1", "view_index_1", "view_indexes"])
        try coll.purge(docID: "d2")          // the purge hook only touches current indexes
        XCTAssertEqual(try keys(v), ["0", "1", "3", "4"])
        assertSound(db)
    }

    /// An index whose keys were made by another ICU (or key encoding) is not read, and the
    /// next update rebuilds it.
    func testAnIndexOfAnotherKeyFormatIsRebuilt() throws {
        for s in ["b", "a", "C"] { try put(s, "{\"k\":\"\(s)\"}") }
        let v = try keyView(coll)
        XCTAssertEqual(try keys(v), ["\"a\"", "\"b\"", "\"C\""])
        let generation = try v.generation
        try db.store.write { conn, _ in try conn.exec("UPDATE view_indexes SET format = 'ix3/icu-0.0.0.0'") }
        XCTAssertTrue(try v.isStale)
        XCTAssertEqual(try keys(v, "{\"update\":false}"), [])
        XCTAssertEqual(try keys(v), ["\"a\"", "\"b\"", "\"C\""])
        XCTAssertGreaterThan(try v.generation, generation)
        XCTAssertEqual(try storedFormat(), IndexFormat.collated)
    }

    private func storedFormat() throws -> String? {
        try db.store.read { try $0.queryString("SELECT format FROM view_indexes") }
    }

    /// String keys are ICU's sort keys ("a" < "b" < "C"; code-point order would put "C"
    /// first), and the index names the collator they came from.
    func testStringKeysCollateByICUAndNameTheCollator() throws {
        for s in ["b", "a", "C"] { try put(s, "{\"k\":\"\(s)\"}") }
        let v = try keyView(coll)
        XCTAssertEqual(try keys(v), ["\"a\"", "\"b\"", "\"C\""])
        XCTAssertEqual(try storedFormat(), IndexFormat.collated)
        XCTAssertTrue(IndexFormat.collated.hasPrefix("ix6/icu-"))
        XCTAssertFalse(IndexFormat.collated.hasSuffix("none"), "ICU's collator is expected on this system")
    }

    /// An index whose keys never held a string or an object names no collator: it stays
    /// current (not rebuilt) whatever ICU there is, and reading it needs no collator.
    func testAnIndexOfNumberKeysNamesNoCollatorAndIsNotRebuilt() throws {
        for i in 0..<4 { try put("d\(i)", "{\"k\":\(i % 2 == 0 ? String(i) : "[\(i),null,true]")}") }
        let v = try keyView(coll)
        XCTAssertEqual(try keys(v), ["0", "2", "[1,null,true]", "[3,null,true]"])
        XCTAssertEqual(try storedFormat(), IndexFormat.withoutCollation)
        let generation = try v.generation
        try db.close()
        db = try open()
        coll = try db.defaultCollection()
        let again = try keyView(coll)
        XCTAssertFalse(try again.isStale)
        XCTAssertEqual(try keys(again, "{\"update\":false}"), ["0", "2", "[1,null,true]", "[3,null,true]"])
        XCTAssertEqual(try keys(again), ["0", "2", "[1,null,true]", "[3,null,true]"])
        XCTAssertEqual(try again.generation, generation, "not rebuilt")
        XCTAssertEqual(try storedFormat(), IndexFormat.withoutCollation)
        // A query key holding a string sorts after every number whatever the collator.
        XCTAssertEqual(try keys(again, "{\"startkey\":\"a\"}"), ["[1,null,true]", "[3,null,true]"])
        XCTAssertEqual(try keys(again, "{\"endkey\":\"a\"}"), ["0", "2"])
    }

    /// The update that writes an index's first string (or object) key records the
    /// collator with those rows; the keys then collate by ICU among the numbers.
    func testTheFirstStringKeyRecordsTheCollator() throws {
        for i in 0..<3 { try put("d\(i)", "{\"k\":\(i)}") }
        let v = try keyView(coll)
        XCTAssertEqual(try keys(v), ["0", "1", "2"])
        XCTAssertEqual(try storedFormat(), IndexFormat.withoutCollation)
        try put("s1", "{\"k\":\"b\"}")
        try put("s2", "{\"k\":\"C\"}")
        try put("s3", "{\"k\":[1,\"a\"]}")
        XCTAssertEqual(try keys(v), ["0", "1", "2", "\"b\"", "\"C\"", "[1,\"a\"]"])
        XCTAssertEqual(try storedFormat(), IndexFormat.collated)
        try put("o", "{\"k\":{\"x\":1}}")
        XCTAssertEqual(try keys(v).last, "{\"x\":1}")
        XCTAssertEqual(try storedFormat(), IndexFormat.collated, "it never goes back")
    }

    /// An index built while ICU could not open holds code-point "sort keys" and says
    /// "icu-none": with ICU available it is not read, and the next update rebuilds it in
    /// ICU's order.
    func testAnIndexBuiltWithoutICUIsRebuiltWhenICUOpens() throws {
        for s in ["b", "a", "C"] { try put(s, "{\"k\":\"\(s)\"}") }
        let v = try keyView(coll)
        XCTAssertEqual(try keys(v), ["\"a\"", "\"b\"", "\"C\""])
        let generation = try v.generation
        try db.store.write { conn, _ in
            // What the fallback stores: the UTF-8 bytes shifted up by one, then 0 ("C" first).
            try conn.exec("""
            UPDATE view_index_1 SET key = x'09' || CAST(CASE docid WHEN 'a' THEN 'b' WHEN 'b' THEN 'c' ELSE 'D' END AS BLOB) || x'00';
            UPDATE view_indexes SET format = '\(IndexFormat.layout)/icu-none';
            """)
        }
        XCTAssertTrue(try v.isStale)
        XCTAssertEqual(try keys(v, "{\"update\":false}"), [], "a fallback index is not read once ICU opens")
        XCTAssertEqual(try keys(v), ["\"a\"", "\"b\"", "\"C\""])
        XCTAssertGreaterThan(try v.generation, generation)
        XCTAssertEqual(try storedFormat(), IndexFormat.collated)
    }

    /// An index in the row layout of the previous format (ix3: the document ID and the key
    /// JSON inside every row blob, numbers in 9 bytes), made by the same ICU, is not read
    /// and is rebuilt in the current layout by the next update.
    func testAnIndexInThePreviousRowLayoutIsRebuilt() throws {
        for i in 0..<3 { try put("d\(i)", "{\"k\":\(i)}") }
        let v = try keyView(coll)
        XCTAssertEqual(try keys(v), ["0", "1", "2"])
        let generation = try v.generation
        let old = "ix3/icu-" + String(IndexFormat.collated.dropFirst("ix6/icu-".count))
        try db.store.write { conn, _ in
            // ix3 rows: varints sequence, n, ID length, key JSON length; ID, 0, key JSON, 0.
            try conn.exec("""
            DELETE FROM view_index_1;
            INSERT INTO view_index_1(key, docid, n, row) VALUES
                (x'08bff0000000000000', 'd1', 0, x'02000201' || CAST('d1' AS BLOB) || x'00' || CAST('1' AS BLOB) || x'00'),
                (x'08c000000000000000', 'd2', 0, x'03000201' || CAST('d2' AS BLOB) || x'00' || CAST('2' AS BLOB) || x'00');
            UPDATE view_indexes SET format = '\(old)';
            """)
        }
        XCTAssertTrue(try v.isStale)
        XCTAssertEqual(try keys(v, "{\"update\":false}"), [], "an index of the previous layout is not read")
        XCTAssertEqual(try keys(v), ["0", "1", "2"])
        XCTAssertEqual(try ids(v, "{\"key\":1}"), ["d1"])
        XCTAssertGreaterThan(try v.generation, generation)
        let stored = try db.store.read { conn in
            (try conn.queryString("SELECT format FROM view_indexes"), try conn.queryInt("SELECT max(length(key)) FROM view_index_1"))
        }
        XCTAssertEqual(stored.0, IndexFormat.withoutCollation)
        XCTAssertEqual(stored.1, 3, "numbers alone in 3 bytes, not 9")
    }

    /// An ix5 index (a number in an array key kept its 8 bytes: `[1]` in 11 bytes) is not
    /// read, and the next update rebuilds it with the number trimmed (`[1]` in 5 bytes).
    func testAnIndexWithUntrimmedArrayNumbersIsRebuilt() throws {
        for i in 0..<3 { try put("d\(i)", "{\"k\":[\(i)]}") }
        let v = try keyView(coll)
        XCTAssertEqual(try keys(v), ["[0]", "[1]", "[2]"])
        let generation = try v.generation
        try db.store.write { conn, _ in
            // the ix5 key of [1]: 0A, 08 and the double's 8 ordered bytes, 00
            try conn.exec("""
            UPDATE view_index_1 SET key = x'0a08bff000000000000000' WHERE docid = 'd1';
            UPDATE view_indexes SET format = 'ix5/no-collation';
            """)
        }
        XCTAssertTrue(try v.isStale)
        XCTAssertEqual(try keys(v, "{\"update\":false}"), [], "an ix5 index is not read")
        XCTAssertEqual(try keys(v), ["[0]", "[1]", "[2]"])
        XCTAssertEqual(try ids(v, "{\"key\":[1]}"), ["d1"])
        XCTAssertGreaterThan(try v.generation, generation)
        let stored = try db.store.read { conn in
            (try conn.queryString("SELECT format FROM view_indexes"),
             try conn.queryInt("SELECT length(key) FROM view_index_1 WHERE docid = 'd1'"))
        }
        XCTAssertEqual(stored.0, IndexFormat.withoutCollation)
        XCTAssertEqual(stored.1, 5)
    }

    /// A row stores neither its document ID (the docid column has it) nor its key's JSON
    /// when the key gives it back; keys whose JSON it does not give back keep it, and every
    /// key's JSON comes back as emitted (compact), through scans, groups, `_count` and
    /// the incremental update's comparison with old rows.
    func testRowsStoreTheKeyJSONOnlyWhenTheKeyCannotGiveItBack() throws {
        let texts = ["7", "1.0", "-0", "1.5", "9007199254740993", "\"s\"", "[1,[2,null],true]", "[1,\"a\"]", "{\"x\":1}",
                     "null", "false"]
        for (i, t) in texts.enumerated() { try put(String(format: "d%02d", i), "{\"k\":\(t),\"v\":\(i)}") }
        let v = try keyView(coll, reduce: .count)
        let want = try texts.map { Collation.compactJSON(try JSONParser.parse($0)) }
            .sorted { Collation.compare($0, $1) < 0 }.map { String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(try keys(v, "{\"reduce\":false}"), want)
        XCTAssertEqual(try keys(v, "{\"group\":true}"), want)
        let custom = try keyView(coll, "custom", reduce: .custom({ keys, values, _ in Array(String(values.count).utf8) }))
        XCTAssertEqual(try keys(custom, "{\"group\":true}"), want)
        let lengths = try db.store.read { conn -> [String: Int64] in
            let s = try conn.prepare("SELECT docid, length(row) FROM view_index_1")
            defer { s.reset() }
            var out: [String: Int64] = [:]
            while try s.step() { out[s.string(0)!] = s.int(1) }
            return out
        }
        XCTAssertEqual(lengths.count, texts.count)
        for (i, t) in texts.enumerated() {
            let id = String(format: "d%02d", i)
            let json = Collation.compactJSON(try JSONParser.parse(t))
            let keyStored = !CollatableKey.jsonIsRecoverable(try JSONParser.parse(t))
            // sequence and n|flags (one byte each here), [length, key JSON, 0], value JSON, 0
            let expected = 2 + (keyStored ? 1 + json.count + 1 : 0) + String(i).utf8.count + 1
            XCTAssertEqual(lengths[id], Int64(expected), "\(id): \(t)")
        }
        // An update that emits the same key again is not a change; another key is.
        let generation = try v.generation
        let rev = try coll.doc("d00")["_rev"]!.stringValue!
        _ = try coll.put(docID: "d00", json: "{\"k\":7,\"v\":0,\"other\":1}", parent: rev)
        _ = try keys(v, "{\"reduce\":false}")
        XCTAssertEqual(try v.generation, generation, "the same rows again")
        let rev2 = try coll.doc("d00")["_rev"]!.stringValue!
        _ = try coll.put(docID: "d00", json: "{\"k\":8,\"v\":0}", parent: rev2)
        XCTAssertEqual(try keys(v, "{\"key\":8,\"reduce\":false}"), ["8"])
        XCTAssertEqual(try keys(v, "{\"key\":7,\"reduce\":false}"), [])
        XCTAssertGreaterThan(try v.generation, generation)
    }

    /// A page whose rows outgrow the scan's buffer (values of 100 KB, the buffer starts at
    /// 64 KB) is copied whole: the row that did not fit is copied after the buffer grows,
    /// with nothing lost or repeated, and the rows after it are read as well.
    func testRowsLargerThanTheScanBufferAreCopiedWhole() throws {
        let big = String(repeating: "x", count: 100_000)
        for i in 0..<6 { try put("d\(i)", "{\"k\":\(i % 2),\"v\":\"\(i)\(big)\"}") }
        let v = try keyView(coll)
        for query in ["{}", "{\"key\":1}", "{\"keys\":[1,0]}", "{\"descending\":true}"] {
            let r = try rows(v, query)
            let want = query == "{\"key\":1}" ? 3 : 6
            XCTAssertEqual(r.count, want, query)
            for row in r {
                let n = Int(row.docID!.dropFirst())!
                XCTAssertEqual(row.keyJSON, String(n % 2), query)
                XCTAssertEqual(row.valueJSON, "\"\(n)\(big)\"", query)
            }
        }
        XCTAssertEqual(try ids(v, "{\"keys\":[1,0]}"), ["d1", "d3", "d5", "d0", "d2", "d4"])
    }

    /// Documents changed or purged while a batch is being mapped are not indexed from the
    /// stale read: a purged one stays out, an updated one is indexed by its new revision.
    func testChangesDuringMappingAreNotIndexedFromTheStaleRead() throws {
        for i in 0..<20 { try put(String(format: "d%02d", i), "{\"k\":\(i)}") }
        let interfered = Locked(false)
        let v = try coll.view(named: "racing")
        let c = coll!
        v.setMapReduce(map: { doc, e in
            if doc.docID == "d00" && !interfered.get() {
                interfered.set(true)
                try c.purge(docID: "d05")
                let rev = try c.doc("d07")["_rev"]!.stringValue!
                _ = try c.put(docID: "d07", json: "{\"k\":700}", parent: rev)
            }
            if let k = try doc.object["k"] { e.emit(k, nil) }
        }, reduce: nil, version: "1")
        let got = try keys(v)
        XCTAssertTrue(interfered.get())
        var want = (0..<20).filter { $0 != 5 && $0 != 7 }.map(String.init)
        want.append("700")
        XCTAssertEqual(got, want)
        XCTAssertEqual(try v.totalRows, 19)
        XCTAssertEqual(try v.lastSequenceIndexed, try coll.lastSequence)
    }

    /// A live document purged while a batch is mapped, with nothing else saved (the
    /// collection's last sequence does not move, only its live count), stays out: in a
    /// build from an empty index and in an incremental update.
    func testLiveDocumentPurgedAloneDuringMappingIsNotIndexed() throws {
        for i in 0..<20 { try put(String(format: "d%02d", i), "{\"k\":\(i)}") }
        let c = coll!
        let purgeNext = Locked<String?>("d05")
        let v = try coll.view(named: "purging")
        v.setMapReduce(map: { doc, e in
            if let victim = purgeNext.get(), doc.docID != victim {
                purgeNext.set(nil)
                try c.purge(docID: victim)
            }
            if let k = try doc.object["k"] { e.emit(k, nil) }
        }, reduce: nil, version: "1")
        let lastBefore = try coll.lastSequence
        XCTAssertEqual(try keys(v), (0..<20).filter { $0 != 5 }.map(String.init))
        XCTAssertNil(purgeNext.get())
        XCTAssertEqual(try coll.lastSequence, lastBefore, "the purge took no sequence")
        XCTAssertEqual(try v.totalRows, 19)

        // Incremental: two documents change, and one of them is purged while they are mapped.
        for id in ["d08", "d09"] {
            let rev = try c.doc(id)["_rev"]!.stringValue!
            _ = try c.put(docID: id, json: "{\"k\":\(id == "d08" ? 800 : 900)}", parent: rev)
        }
        purgeNext.set("d09")
        XCTAssertEqual(try keys(v), (0..<20).filter { ![5, 8, 9].contains($0) }.map(String.init) + ["800"])
        XCTAssertEqual(try v.totalRows, 18)
        XCTAssertEqual(try v.lastSequenceIndexed, try coll.lastSequence)
    }

    /// Two views of doc.k: one reduced by `_count`, one by a custom reducer that counts
    /// (streamed through a Reduction).
    private func countingViews() throws -> (counting: View, custom: View) {
        let counting = try keyView(coll, "counting", reduce: .count)
        let custom = try keyView(coll, "custom", reduce: .custom({ keys, values, rereduce in
            if rereduce {
                return Array(String(values.map { Int(String(decoding: $0, as: UTF8.self))! }.reduce(0, +)).utf8)
            }
            return Array(String(keys!.count).utf8)
        }))
        return (counting, custom)
    }

    /// The per-key counts stay exact through every change to the index — its build,
    /// documents whose keys change, deleted, purged and re-added documents, documents that
    /// stop emitting, compaction, another build after the map changes — checked after each
    /// step against the rows themselves and against the count streamed over them.
    func testPerKeyCountsStayExactThroughEveryChange() throws {
        var revs: [String: String] = [:]
        func save(_ id: String, _ json: String) throws { revs[id] = try coll.put(docID: id, json: json, parent: revs[id]).revID }
        let keys = ["0", "1", "2.5", "\"s\"", "\"S\"", "[1,2]", "null"]
        for i in 0..<210 { try save(String(format: "d%03d", i), "{\"k\":\(keys[i % keys.count])}") }
        let (counting, custom) = try countingViews()
        func check(_ step: String) throws {
            for q in ["{\"group\":true}", "{}", "{\"startkey\":1,\"endkey\":\"s\",\"group\":true}",
                      "{\"group\":true,\"descending\":true}", "{\"key\":\"s\"}"] {
                let a = try rows(counting, q), b = try rows(custom, q)
                XCTAssertEqual(a.map { [$0.keyJSON, $0.valueJSON ?? "-"] }, b.map { [$0.keyJSON, $0.valueJSON ?? "-"] }, "\(step) \(q)")
            }
            let (stored, counted) = try db.store.read { conn -> (String?, String?) in
                let id = try XCTUnwrap(conn.queryInt("SELECT id FROM view_indexes WHERE name = 'counting'"))
                return (try conn.queryString("SELECT group_concat(hex(key) || ':' || n, ' ') FROM "
                                             + "(SELECT key, n FROM view_counts_\(id) ORDER BY key)"),
                        try conn.queryString("SELECT group_concat(hex(key) || ':' || c, ' ') FROM "
                                             + "(SELECT key, count(*) AS c FROM view_index_\(id) GROUP BY key ORDER BY key)"))
            }
            XCTAssertEqual(stored, counted, step)
        }
        try check("build")
        for i in stride(from: 0, to: 60, by: 2) { try save(String(format: "d%03d", i), "{\"k\":\"moved\(i % 3)\"}") }
        try check("keys changed")
        for i in stride(from: 1, to: 41, by: 2) {
            let id = String(format: "d%03d", i)
            revs[id] = try coll.delete(docID: id, parent: revs[id])
        }
        try check("deleted")
        for i in 100..<120 { try coll.purge(docID: String(format: "d%03d", i)); revs[String(format: "d%03d", i)] = nil }
        try check("purged")
        for i in 100..<110 { try save(String(format: "d%03d", i), "{\"k\":\"back\"}") }
        try check("re-added")
        for i in 150..<170 { try save(String(format: "d%03d", i), "{\"other\":1}") }
        try check("no longer emitting")
        try db.compact()
        try check("compacted")
        for i in 170..<180 { try save(String(format: "d%03d", i), "{\"k\":\(keys[i % keys.count])}") }   // the same rows again
        try check("saved with the same key")
        let again = try keyView(coll, "counting", version: "2", reduce: .count)          // a new map version: rebuilt
        XCTAssertEqual(try rows(again, "{\"group\":true}").map(\.valueJSON), try rows(custom, "{\"group\":true}").map(\.valueJSON))
        try check("rebuilt")
    }

    /// `_count` (computed by SQLite) and a custom reducer that counts (streamed through a
    /// Reduction) agree on every range, direction and grouping.
    func testCountInSQLMatchesTheStreamedReduction() throws {
        let keys = ["1", "1.0", "2", "\"a\"", "\"A\"", "\"\\u00e9\"", "\"e\\u0301\"", "null", "[1,2]", "[1,2,3]", "{\"x\":1}", "true"]
        for i in 0..<300 { try put(String(format: "d%03d", i), "{\"k\":\(keys[i % keys.count])}") }
        let (counting, custom) = try countingViews()
        let queries = ["{}", "{\"group\":true}", "{\"group\":true,\"descending\":true}",
                       "{\"startkey\":1,\"endkey\":\"a\"}", "{\"startkey\":1,\"endkey\":\"a\",\"group\":true}",
                       "{\"startkey\":\"z\",\"endkey\":1,\"descending\":true,\"group\":true}",
                       "{\"startkey\":1,\"endkey\":2,\"inclusive_end\":false,\"group\":true}",
                       "{\"key\":1,\"group\":true}", "{\"key\":\"e\\u0301\"}",
                       "{\"startkey\":1,\"startkey_docid\":\"d100\",\"group\":true}",
                       "{\"group\":true,\"limit\":3,\"skip\":2}", "{\"startkey\":[],\"group\":true}"]
        for q in queries {
            let a = try rows(counting, q), b = try rows(custom, q)
            XCTAssertEqual(a.map(\.valueJSON), b.map(\.valueJSON), q)
            XCTAssertEqual(a.count, b.count, q)
            for (x, y) in zip(a, b) { XCTAssertEqual(Collation.compare(x.key, y.key), 0, "\(q): \(x.keyJSON) vs \(y.keyJSON)") }
            XCTAssertFalse(a.isEmpty, q)
        }
        // 1 and 1.0 are one group; so are the two spellings of é.
        let groups = try rows(counting, "{\"group\":true}")
        XCTAssertEqual(groups.count, keys.count - 2)
        XCTAssertEqual(try rows(counting, "{\"key\":1}").first?.valueJSON, "50")
    }

    /// Paging through many rows with equal keys keeps document-ID order and bounds, in
    /// both directions, across page boundaries.
    func testPagingThroughEqualKeysWithDocumentIDBounds() throws {
        for i in 0..<1300 { try put(String(format: "d%04d", i), "{\"k\":\(i % 2)}") }
        let v = try keyView(coll)
        let all = try ids(v, "{\"key\":0}")
        XCTAssertEqual(all, (0..<650).map { String(format: "d%04d", $0 * 2) })
        XCTAssertEqual(try ids(v, "{\"key\":0,\"descending\":true}"), all.reversed())
        let bounded = try ids(v, "{\"startkey\":0,\"startkey_docid\":\"d0101\",\"endkey\":0,\"endkey_docid\":\"d1201\"}")
        XCTAssertEqual(bounded, all.filter { $0 >= "d0101" && $0 <= "d1201" })
        let down = try ids(v, "{\"startkey\":1,\"startkey_docid\":\"d0999\",\"endkey\":0,\"endkey_docid\":\"d1100\",\"descending\":true}")
        let want = (0..<1300).map { String(format: "d%04d", $0) }
            .filter { id in let n = Int(id.dropFirst())!; return n % 2 == 1 ? id <= "d0999" : id >= "d1100" }
            .sorted { a, b in
                let ka = Int(a.dropFirst())! % 2, kb = Int(b.dropFirst())! % 2
                return ka != kb ? ka > kb : a > b
            }
        XCTAssertEqual(down, want)
        XCTAssertEqual(try ids(v, "{\"keys\":[1,0],\"skip\":600,\"limit\":100}"),
                       Array(((0..<650).map { String(format: "d%04d", $0 * 2 + 1) } + all)[600..<700]))
    }

    /// A damaged index row (written by something else than cblite) fails the query with a
    /// 500 that says how to recover, and deleting the index recovers.
    func testADamagedIndexRowFailsCleanly() throws {
        for i in 0..<3 { try put("d\(i)", "{\"k\":\(i)}") }
        let v = try keyView(coll)
        XCTAssertEqual(try keys(v), ["0", "1", "2"])
        try db.store.write { conn, _ in try conn.exec("UPDATE view_index_1 SET row = x'ff' WHERE docid = 'd1'") }
        assertStatus(.internalError, try rows(v, "{\"update\":false}"))
        assertStatus(.internalError, try rows(v, "{\"group\":true,\"update\":false}"))
        // A grouped _count reads the per-key counts, not the rows: a damaged count row
        // fails it the same way.
        let reducing = try keyView(coll, reduce: .count)
        XCTAssertEqual(try rows(reducing, "{\"group\":true,\"update\":false}").map(\.valueJSON), ["1", "1", "1"])
        try db.store.write { conn, _ in
            try conn.exec("UPDATE view_counts_1 SET row = x'ff' WHERE key = (SELECT key FROM view_index_1 WHERE docid = 'd1')")
        }
        assertStatus(.internalError, try rows(reducing, "{\"group\":true,\"update\":false}"))
        try v.delete()
        XCTAssertEqual(try keys(v), ["0", "1", "2"])
    }

    private func docIndexExists(_ v: View) throws -> Bool {
        try db.store.read { conn in
            try conn.queryInt("SELECT count(*) FROM sqlite_master WHERE type='index' AND name GLOB 'view_index_*_doc'") ?? 0 > 0
        }
    }

    /// A build from an empty index in several batches (each written in its own
    /// transaction) gives the rows of a build in one, with the document-ID index made at
    /// its end; a document changed between two batches (it had rows from an earlier one)
    /// keeps only its new rows.
    func testABuildInSeveralBatchesReplacesRowsOfDocumentsChangedBetweenThem() throws {
        let n = 3 * View.chunkSize - 36                        // three batches of one chunk each
        try db.begin()
        for i in 0..<n { try put(String(format: "d%04d", i), "{\"k\":\(i % 10)}") }
        try db.commit()
        let changedOnce = Locked(false)
        let c = coll!
        let v = try coll.view(named: "batches")
        v.maxBatchRows = 1
        v.setMapReduce(map: { doc, e in
            if doc.docID == String(format: "d%04d", n - 100) && !changedOnce.get() {   // in the last batch
                changedOnce.set(true)
                let rev = try c.doc("d0003")["_rev"]!.stringValue!                       // indexed by the first
                _ = try c.put(docID: "d0003", json: "{\"k\":77}", parent: rev)
            }
            if let k = try doc.object["k"] { e.emit(k, nil) }
        }, reduce: nil, version: "1")
        let got = try rows(v)
        XCTAssertTrue(changedOnce.get())
        XCTAssertEqual(got.count, n)
        XCTAssertEqual(got.filter { $0.docID == "d0003" }.map(\.keyJSON), ["77"])
        XCTAssertEqual(try v.totalRows, Int64(n))
        XCTAssertEqual(try v.lastSequenceIndexed, try coll.lastSequence)
        XCTAssertTrue(try docIndexExists(v))
        // The same rows as a build in one batch.
        let one = try keyView(coll, "oneBatch")
        let oneRows = try rows(one).map { "\($0.keyJSON) \($0.docID!)" }
        XCTAssertTrue(oneRows == got.map { "\($0.keyJSON) \($0.docID!)" }, "the rows of a build in one batch differ")
        assertSound(db)
    }

    /// A build interrupted between batches (its map fails) leaves the batches written so
    /// far; the next update goes on from there, makes the document-ID index, and later
    /// updates replace rows as usual.
    func testAnInterruptedBuildGoesOnAndMakesItsDocumentIndex() throws {
        let n = 2 * View.chunkSize + 100
        try db.begin()
        for i in 0..<n { try put(String(format: "d%04d", i), "{\"k\":\(i % 7)}") }
        try db.commit()
        let failing = Locked(true)
        let v = try coll.view(named: "interrupted")
        v.maxBatchRows = 1
        v.setMapReduce(map: { doc, e in
            if doc.docID == String(format: "d%04d", View.chunkSize + 10) && failing.get() {
                throw CBLError.badRequest("map failed")
            }
            if let k = try doc.object["k"] { e.emit(k, nil) }
        }, reduce: nil, version: "1")
        assertStatus(.badRequest, try v.query())
        XCTAssertEqual(try v.lastSequenceIndexed, Int64(View.chunkSize))
        XCTAssertEqual(try v.totalRows, Int64(View.chunkSize))
        XCTAssertFalse(try docIndexExists(v), "made at the end of the build")
        failing.set(false)
        XCTAssertEqual(try rows(v).count, n)
        XCTAssertTrue(try docIndexExists(v))
        let rev = try coll.doc("d0001")["_rev"]!.stringValue!
        _ = try coll.put(docID: "d0001", json: "{\"k\":100}", parent: rev)
        try coll.purge(docID: "d0002")
        let after = try rows(v)
        XCTAssertEqual(after.count, n - 1)
        XCTAssertEqual(after.last.map { "\($0.keyJSON) \($0.docID!)" }, "100 d0001")
        XCTAssertEqual(try v.totalRows, Int64(n - 1))
        assertSound(db)
    }

    /// Making the document-ID index lets its sort spill to a file (temporary storage in
    /// memory would hold every entry) and puts the connection's setting back; no file is
    /// ever memory-mapped (the sort's spilled runs would count in the resident set).
    func testTheDocumentIndexSortSpillsAndRestoresTemporaryStorage() throws {
        for i in 0..<50 { try put(String(format: "d%02d", i), "{\"k\":\(i)}") }
        let v = try keyView(coll)
        XCTAssertEqual(try rows(v).count, 50)
        XCTAssertTrue(try docIndexExists(v))
        try db.store.write { conn, _ in
            XCTAssertEqual(try conn.queryInt("PRAGMA temp_store"), 0, "back to the build's default")
            _ = try conn.queryInt("PRAGMA mmap_size = 1048576")
            XCTAssertEqual(try conn.queryInt("PRAGMA mmap_size"), 0, "memory-mapping is off process-wide")
        }
    }

    /// Plain integer keys skip the JSON parser; anything else takes it (and errors stay).
    func testPlainIntegerFastPath() {
        func p(_ s: String) -> Int64? { var t = s; return t.withUTF8 { MappedBatch.plainInteger($0) } }
        XCTAssertEqual(p("42"), 42)
        XCTAssertEqual(p("-7"), -7)
        XCTAssertEqual(p("0"), 0)
        XCTAssertEqual(p("999999999999999"), 999_999_999_999_999)
        for s in ["", "-", "-0", "042", "1.0", "1e3", "9999999999999999", " 1", "1 ", "+1", "0x1"] { XCTAssertNil(p(s), s) }
    }
}
