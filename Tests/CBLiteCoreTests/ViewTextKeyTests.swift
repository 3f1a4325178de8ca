import XCTest
@testable import CBLiteCore

/// Couchbase Lite 1.x's text keys in views: a map function emits a text key, a query with
/// `full_text_query` answers the matching ones ranked, with their matches and snippets;
/// the texts follow the view's rows through updates, deletes, purges and rebuilds.
final class ViewTextKeyTests: CBLCollectionTestCase {
    var c: Collection { coll }

    func put(_ id: String, _ json: String) throws {
        let rev = try? c.get(docID: id).withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }["_rev"]?.stringValue
        _ = try c.put(docID: id, json: json, parent: rev)
    }

    /// Emits "text" as a text key with "tag" as value, each of "more" as a text key with
    /// value "more", and "key" as an ordinary key.
    func textView(_ coll: Collection? = nil, version: String = "1", analyzer: FullTextAnalyzer? = nil) throws -> View {
        let v = try (coll ?? c).view(named: "texts")
        v.setMapReduce(map: { doc, emit in
            let o = try doc.object
            if case .string(let t)? = o["text"] { emit.emit(text: t, o["tag"]) }
            if case .array(let a)? = o["more"] { for x in a { if case .string(let t) = x { emit.emit(text: t, .string("more")) } } }
            if case .string(let k)? = o["key"] { emit.emit(.string(k), nil) }
        }, reduce: nil, version: version)
        if let analyzer { v.textAnalyzer = analyzer }
        return v
    }

    func search(_ v: View, _ q: String, _ extra: String = "") throws -> [(id: String, hit: TextKeyHit, row: QueryRow)] {
        var o = try QueryOptions(json: extra.isEmpty ? "{}" : extra)
        o.fullTextQuery = q
        return try v.query(o).allRows().map { ($0.docID ?? "", try TextKeyHit(row: $0), $0) }
    }

    func hitIDs(_ v: View, _ q: String, _ extra: String = "") throws -> [String] { try search(v, q, extra).map(\.id) }

    func coffeeCorpus() throws {
        try put("r1", #"{"text":"coffee coffee coffee beans","tag":1}"#)
        try put("r2", #"{"text":"coffee and tea with milk","tag":2}"#)
        try put("r3", #"{"text":"We walked along the river, looked at boats, bought bread and cheese, and later had a coffee near the old bridge before the train home","tag":3}"#)
        try put("r4", #"{"text":"green tea and black tea","tag":4}"#)
    }

    /// Rows of the view's text tables (each text key's text and its entry), and of key-null index rows.
    func storedTexts(_ v: View) throws -> (texts: Int64, entries: Int64) {
        guard let id = try v.state()?.id else { return (0, 0) }
        return try c.store.read { conn in
            guard try ViewStorage.hasTextTables(conn, id) else { return (0, 0) }
            return (try conn.queryInt("SELECT count(*) FROM \(ViewStorage.textTable(id))") ?? -1,
                    try conn.queryInt("SELECT count(*) FROM \(ViewStorage.textMapTable(id))") ?? -1)
        }
    }

    func textTableNames() throws -> [String] {
        try c.store.read { conn in
            let s = try conn.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'view_text%' ORDER BY name")
            defer { s.reset() }
            var out: [String] = []
            while try s.step() { out.append(s.string(0) ?? "") }
            return out
        }
    }

    func testRankingOrderAndIndexOrder() throws {
        try coffeeCorpus()
        let v = try textView()
        let found = try search(v, "coffee")
        XCTAssertEqual(found.map(\.id), ["r1", "r2", "r3"])
        XCTAssertTrue(found[0].hit.score > found[1].hit.score && found[1].hit.score > found[2].hit.score, "\(found.map(\.hit.score))")
        XCTAssertEqual(found.map { $0.row.valueJSON }, ["1", "2", "3"])
        XCTAssertEqual(found[0].hit.text, "coffee coffee coffee beans")
        XCTAssertEqual(found.map(\.row.sequence), [1, 2, 3])
        XCTAssertEqual(try hitIDs(v, "coffee", #"{"descending":true}"#), ["r3", "r2", "r1"])
        // limit and skip apply to the matches.
        XCTAssertEqual(try hitIDs(v, "coffee", #"{"skip":1,"limit":2}"#), ["r2", "r3"])
        // Without ranking: index order (document ID, then emit order), reversed by descending.
        try put("a0", #"{"text":"a coffee"}"#)
        XCTAssertEqual(try hitIDs(v, "coffee", #"{"full_text_ranking":false}"#), ["a0", "r1", "r2", "r3"])
        XCTAssertEqual(try hitIDs(v, "coffee", #"{"full_text_ranking":false,"descending":true}"#), ["r3", "r2", "r1", "a0"])
        // include_docs adds each document.
        let withDoc = try v.query(QueryOptions(json: #"{"full_text_query":"beans","include_docs":true}"#)).allRows()
        XCTAssertEqual(withDoc.count, 1)
        XCTAssertTrue(String(decoding: withDoc[0].doc ?? [], as: UTF8.self).contains("\"_id\":\"r1\""))
    }

    func testPagesOfManyMatchesKeepTheirOrder() throws {
        for i in 0..<600 { try put(String(format: "d%04d", i), #"{"text":"tea \#(String(repeating: "coffee ", count: 1 + i % 7))"}"#) }
        let v = try textView()
        let ranked = try search(v, "coffee")
        XCTAssertEqual(ranked.count, 600)
        XCTAssertEqual(Set(ranked.map(\.id)).count, 600)
        XCTAssertEqual(ranked.map(\.hit.score), ranked.map(\.hit.score).sorted(by: >))
        XCTAssertEqual(try hitIDs(v, "coffee", #"{"full_text_ranking":false}"#), (0..<600).map { String(format: "d%04d", $0) })
        XCTAssertEqual(try hitIDs(v, "coffee", #"{"descending":true}"#), ranked.map(\.id).reversed())
    }

    func testSnippetsMatchesAndTermIndexes() throws {
        try put("fr", #"{"text":"Un café crème, then coffee: café!"}"#)
        let v = try textView()
        let plain = try search(v, "cafe coffee")[0].hit
        XCTAssertNil(plain.snippet)
        // Every occurrence is a match, in text order; ranges are UTF-8 byte offsets.
        XCTAssertEqual(plain.matches.map(\.term), [0, 1, 0])
        XCTAssertEqual((0..<plain.matchCount).map { plain.matchedText($0) }, ["café", "coffee", "café"])
        XCTAssertEqual(plain.matches[0].range, 3..<8)
        let marked = try search(v, "coffee", #"{"full_text_snippets":{"open":"[","close":"]","ellipsis":"...","tokens":3}}"#)[0].hit
        XCTAssertEqual(marked.snippet, "...crème, then [coffee]: café!")   // 3 tokens: "then" is a stop word
        XCTAssertEqual(try search(v, "coffee", #"{"full_text_snippets":true}"#)[0].hit.snippet, "Un café crème, then <b>coffee</b>: café!")
        // The JSON form (a row's key) reads back.
        XCTAssertEqual(try TextKeyHit(json: marked.json), marked)
    }

    func testStemmingStopWordsAndWords() throws {
        try put("cats", #"{"text":"The cats were typing"}"#)
        try put("dog", #"{"text":"a dog"}"#)
        let v = try textView()
        XCTAssertEqual(try hitIDs(v, "cat"), ["cats"])
        XCTAssertEqual(try hitIDs(v, "type"), ["cats"])
        XCTAssertEqual(try hitIDs(v, "the cat"), ["cats"])             // stop words are ignored
        // Words: duplicates keep their first number, stop words have none.
        let hit = try search(v, "the cats OR cat OR typed")[0].hit
        XCTAssertEqual(hit.matches.map(\.term), [0, 1])
        XCTAssertEqual((0..<hit.matchCount).map { hit.matchedText($0) }, ["cats", "typing"])
        // Another analyzer rebuilds the index: without stemming "cat" no longer finds "cats".
        let exact = try textView(analyzer: FullTextAnalyzer())
        XCTAssertEqual(try hitIDs(exact, "cat"), [])
        XCTAssertEqual(try hitIDs(exact, "the"), ["cats"])
        XCTAssertEqual(try hitIDs(try textView(), "cat"), ["cats"])
    }

    func testPhrasePrefixNotThroughTheSharedParser() throws {
        try put("a", #"{"text":"a flat white is espresso with steamed milk"}"#)
        try put("b", #"{"text":"white flat bread"}"#)
        try put("c", #"{"text":"database design"}"#)
        let v = try textView()
        XCTAssertEqual(Set(try hitIDs(v, "flat white")), ["a", "b"])
        XCTAssertEqual(try hitIDs(v, "\"flat white\""), ["a"])
        let phrase = try search(v, "\"flat white\"")[0].hit
        XCTAssertEqual(phrase.matches.map(\.term), [0, 1])
        XCTAssertEqual(try hitIDs(v, "data*"), ["c"])
        XCTAssertEqual(try hitIDs(v, "flat NOT espresso"), ["b"])
        XCTAssertEqual(Set(try hitIDs(v, "espresso OR bread")), ["a", "b"])
        XCTAssertEqual(try hitIDs(v, "flat NEAR/1 bread"), ["b"])
    }

    func testMultipleTextKeysAndOrdinaryQueries() throws {
        try put("m", #"{"text":"first coffee","more":["second coffee","tea only"],"key":"k"}"#)
        let v = try textView()
        let found = try search(v, "coffee", #"{"full_text_ranking":false}"#)
        XCTAssertEqual(found.map(\.hit.text), ["first coffee", "second coffee"])
        XCTAssertEqual(found.map { $0.row.valueJSON }, [nil, "\"more\""])
        XCTAssertEqual(try hitIDs(v, "tea"), ["m"])
        // An ordinary query shows text keys' rows with the key null (as 1.x did), values as emitted.
        let rows = try v.query().allRows()
        XCTAssertEqual(rows.map(\.keyJSON), ["null", "null", "null", "\"k\""])
        XCTAssertEqual(rows.map { $0.valueJSON ?? "-" }, ["-", "\"more\"", "\"more\"", "-"])
        XCTAssertEqual(try v.totalRows, 4)
        XCTAssertEqual(try v.query(QueryOptions(json: #"{"key":null}"#)).allRows().count, 3)
        XCTAssertEqual(try storedTexts(v).texts, 3)
    }

    func testUpdatesDeletesAndPurgesLeaveNoStaleTexts() throws {
        try coffeeCorpus()
        let v = try textView()
        XCTAssertEqual(try hitIDs(v, "coffee").count, 3)
        try put("r1", #"{"text":"still water","tag":1}"#)          // same value, new text: a change
        XCTAssertEqual(Set(try hitIDs(v, "coffee")), ["r2", "r3"])
        XCTAssertEqual(try hitIDs(v, "water"), ["r1"])
        let rev = try c.get(docID: "r2").withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }["_rev"]!.stringValue!
        _ = try c.delete(docID: "r2", parent: rev)
        try c.purge(docID: "r3")
        XCTAssertEqual(try hitIDs(v, "coffee"), [])
        // Purged while the index is behind: not indexed later either.
        try put("r5", #"{"text":"coffee"}"#)
        try c.purge(docID: "r5")
        try put("r4", #"{"text":"green tea","more":["more coffee"]}"#)
        XCTAssertEqual(try hitIDs(v, "coffee"), ["r4"])
        try put("r4", #"{"key":"no text now"}"#)
        XCTAssertEqual(try hitIDs(v, "coffee OR tea OR green"), [])
        XCTAssertEqual(try hitIDs(v, "water"), ["r1"])
        // The same rows emitted again (a new revision, same text) stay found.
        try put("r1", #"{"text":"still water","tag":1,"other":true}"#)
        XCTAssertEqual(try hitIDs(v, "water"), ["r1"])
        let stored = try storedTexts(v)
        XCTAssertEqual(stored.texts, 1)
        XCTAssertEqual(stored.entries, 1)
    }

    func testVersionChangeRebuildsAndDeletionsDropTheTexts() throws {
        try coffeeCorpus()
        var v = try textView()
        XCTAssertEqual(try hitIDs(v, "coffee").count, 3)
        XCTAssertEqual(try textTableNames().count, 2 + 5)      // the FTS5 table's shadow tables too
        v = try c.view(named: "texts")
        v.setMapReduce(map: { doc, emit in
            if case .string(let t)? = try doc.object["text"] { emit.emit(text: t.uppercased() + " EXTRA", nil) }
        }, reduce: nil, version: "2")
        XCTAssertEqual(try hitIDs(v, "extra").count, 4)
        XCTAssertEqual(try storedTexts(v).texts, 4)
        try v.delete()
        XCTAssertEqual(try textTableNames(), [])
        XCTAssertEqual(try hitIDs(v, "extra").count, 4)           // rebuilt on demand
        let other = try db.createCollection(scope: nil, name: "other")
        _ = try other.put(docID: "x", json: #"{"text":"coffee"}"#, parent: nil)
        XCTAssertEqual(try hitIDs(try textView(other), "coffee"), ["x"])
        let before = try textTableNames().count
        try db.deleteCollection(scope: nil, name: "other")
        XCTAssertEqual(try textTableNames().count, before - 7)
    }

    func testQueriesThatDoNotApply() throws {
        try coffeeCorpus()
        let v = try textView()
        var e = assertStatus(.badRequest, try self.v(v, #"{"full_text_query":"coffee AND"}"#))
        XCTAssertTrue(e?.message.hasSuffix("AND needs a term after it at position 7") == true, "\(String(describing: e))")
        e = assertStatus(.badRequest, try self.v(v, #"{"full_text_query":"text:coffee"}"#))
        XCTAssertTrue(e?.message.contains("at position 0") == true, "\(String(describing: e))")
        for bad in [#""key":"a""#, #""keys":["a"]"#, #""startkey":"a""#, #""endkey_docid":"a""#, #""group":true"#,
                    #""group_level":1"#, #""reduce":true"#, #""prefix_match_level":1"#] {
            assertStatus(.badRequest, try self.v(v, #"{"full_text_query":"coffee",\#(bad)}"#), bad)
        }
        assertStatus(.badRequest, try QueryOptions(json: #"{"full_text_snippets":"yes"}"#))
        assertStatus(.badRequest, try self.c.allDocsQuery(QueryOptions(json: #"{"full_text_query":"coffee"}"#)))
        // A view with a reduce function answers a full-text query with its map rows.
        let r = try c.view(named: "reduced")
        r.setMapReduce(map: { doc, emit in
            if case .string(let t)? = try doc.object["text"] { emit.emit(text: t, .int(1)) }
        }, reduce: Reducer(builtin: "_count")!, version: "1")
        XCTAssertEqual(try hitIDs(r, "coffee").count, 3)
        // A view without text keys answers none.
        let plain = try c.view(named: "plain")
        plain.setMapReduce(map: { _, emit in emit.emit(.null, nil) }, reduce: nil, version: "1")
        XCTAssertEqual(try hitIDs(plain, "coffee"), [])
    }

    func testLiveFullTextQueryFollowsTheTexts() throws {
        try coffeeCorpus()
        let v = try textView()
        let got = Locked<[[String]]>([])
        let lq = LiveQuery(view: v, options: try QueryOptions(json: #"{"full_text_query":"coffee","full_text_ranking":false}"#)) { e in
            let ids = (try? e.allRows().map { $0.docID ?? "-" }) ?? ["error"]
            got.with { $0.append(ids) }
        }
        try lq.start()
        XCTAssertTrue(lq.waitIdle())
        XCTAssertEqual(got.get().last, ["r1", "r2", "r3"])
        try put("r4", #"{"text":"iced coffee","tag":4}"#)             // a new match
        lq.waitIdle()
        XCTAssertEqual(got.get().last, ["r1", "r2", "r3", "r4"])
        try put("r1", #"{"text":"still water","tag":1}"#)             // same value, the text no longer matches
        lq.waitIdle()
        XCTAssertEqual(got.get().last, ["r2", "r3", "r4"])
        lq.stop()
    }

    private func v(_ view: View, _ options: String) throws -> [QueryRow] { try view.query(QueryOptions(json: options)).allRows() }

    func testEncryptedDatabaseKeepsNoPlaintextTerms() throws {
        var o = OpenOptions()
        o.encryptionKey = try EncryptionKey(jsonText: #"{"password":"text key secret"}"#)
        let marker = "zebraquokkamarker"
        func fill(_ name: String, _ options: OpenOptions) throws {
            let d = try Database.open(name: name, directory: dir, options: options)
            let dc = try d.defaultCollection()
            for i in 0..<50 { _ = try dc.put(docID: "d\(i)", json: #"{"n":\#(i)}"#, parent: nil) }
            let v = try dc.view(named: "t")
            // The marker is only ever in the text keys (not in the documents).
            v.setMapReduce(map: { doc, emit in emit.emit(text: marker + " " + doc.docID, nil) }, reduce: nil, version: "1")
            XCTAssertEqual(try v.query(QueryOptions(json: #"{"full_text_query":"\#(marker)"}"#)).allRows().count, 50)
            try d.close()
        }
        try fill("enc", o)
        XCTAssertGreaterThan(try allBytes(under: dir + "/enc.cblite2").count, 4096)
        XCTAssertFalse(try holds("enc", marker), "a text key is on disk in plaintext")
        // Unencrypted, the same view does hold it in plaintext (the check can fail).
        try fill("plain", OpenOptions())
        XCTAssertTrue(try holds("plain", marker))
    }

    private func holds(_ name: String, _ text: String) throws -> Bool {
        let b = try allBytes(under: dir + "/" + name + ".cblite2"), n = Array(text.utf8)
        guard b.count >= n.count else { return false }
        return (0...(b.count - n.count)).contains { b[$0] == n[0] && Array(b[$0..<$0 + n.count]) == n }
    }
}
