import XCTest
import Glibc
@testable import CBLiteCore

/// Full-text indexes in the engine: ranking, snippets, the query syntax, analyzers
/// (Unicode folding, stemming, stop words), incremental updates, deletes and purges,
/// rebuilds on a definition change, selectors, paging, and the index's place in
/// `language: "query"` design documents.
final class FullTextTests: CBLCollectionTestCase {
    var c: Collection { coll }

    func put(_ id: String, _ json: String) throws {
        let rev = try? c.get(docID: id).withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }["_rev"]?.stringValue
        _ = try c.put(docID: id, json: json, parent: rev)
    }

    func index(_ fields: [String] = ["title", "body"], _ analyzer: FullTextAnalyzer = FullTextAnalyzer(), name: String = "t") throws {
        try c.createTextIndex(FullTextIndex(ddoc: "fts", name: name, fields: fields, analyzer: analyzer))
    }

    func ids(_ q: String, name: String = "t", _ configure: (inout FullTextSearchRequest) -> Void = { _ in }) throws -> [String] {
        var r = FullTextSearchRequest(query: q)
        configure(&r)
        return try c.search(index: name, r).hits.map(\.docID)
    }

    func coffeeCorpus() throws {
        try put("r1", #"{"title":"Coffee","body":"coffee coffee coffee beans"}"#)
        try put("r2", #"{"title":"Breakfast","body":"coffee and tea with milk"}"#)
        try put("r3", #"{"title":"Travel notes","body":"We walked along the river, looked at boats, bought bread and cheese, and later had a coffee near the old bridge before the train home"}"#)
        try put("r4", #"{"title":"Tea","body":"green tea and black tea"}"#)
    }

    func testRankingFollowsRelevance() throws {
        try coffeeCorpus()
        try index()
        let hits = try c.search(index: "t", FullTextSearchRequest(query: "coffee")).hits
        XCTAssertEqual(hits.map(\.docID), ["r1", "r2", "r3"])
        XCTAssertTrue(hits[0].score > hits[1].score && hits[1].score > hits[2].score, "\(hits.map(\.score))")
        XCTAssertTrue(hits.allSatisfy { $0.score > 0 })
    }

    func testSnippetsHighlightMatchedFieldsOnly() throws {
        try coffeeCorpus()
        try index()
        let hit = try c.search(index: "t", FullTextSearchRequest(query: "milk OR breakfast")).hits.first { $0.docID == "r2" }!
        XCTAssertEqual(hit.snippets.map(\.field), ["title", "body"])
        XCTAssertEqual(hit.snippets[0].text, "<b>Breakfast</b>")
        XCTAssertEqual(hit.snippets[1].text, "coffee and tea with <b>milk</b>")
        var r = FullTextSearchRequest(query: "river")
        r.snippets = FullTextSnippetStyle(open: "[", close: "]", ellipsis: "...", tokens: 5)
        let long = try c.search(index: "t", r).hits[0]
        XCTAssertEqual(long.snippets.map(\.field), ["body"])
        XCTAssertEqual(long.snippets[0].text, "We walked along the [river]...")
        r.snippets = nil
        XCTAssertEqual(try c.search(index: "t", r).hits[0].snippets.count, 0)
    }

    func testPhrasePrefixNearNotAndFields() throws {
        try put("a", #"{"title":"Flat white","body":"a flat white is espresso with steamed milk"}"#)
        try put("b", #"{"title":"Cortado","body":"white coffee, flat bread, milk on the side of a long table far away from the espresso"}"#)
        try put("c", #"{"title":"Database notes","body":"data, databases and datasets"}"#)
        try index()
        XCTAssertEqual(Set(try ids("flat white")), ["a", "b"])                 // both terms, anywhere
        XCTAssertEqual(try ids("\"flat white\""), ["a"])                         // the phrase
        XCTAssertEqual(try ids("data*"), ["c"])
        XCTAssertEqual(try ids("\"database no\"*"), ["c"])
        XCTAssertEqual(try ids("espresso NEAR milk"), ["a"])                  // 11 terms apart in b
        XCTAssertEqual(try ids("espresso NEAR/3 milk"), ["a"])
        XCTAssertEqual(try ids("NEAR(espresso milk, 3)"), ["a"])
        XCTAssertEqual(Set(try ids("espresso NEAR/20 milk")), ["a", "b"])
        XCTAssertEqual(try ids("milk NOT cortado"), ["a"])
        XCTAssertEqual(try ids("milk -cortado"), ["a"])
        XCTAssertEqual(Set(try ids("cortado OR datasets")), ["b", "c"])
        XCTAssertEqual(try ids("title:white"), ["a"])
        XCTAssertEqual(Set(try ids("white")), ["a", "b"])
        XCTAssertEqual(try ids("white") { $0.fields = ["title"] }, ["a"])
        XCTAssertEqual(try ids("body:(bread OR datasets) AND title:notes"), ["c"])
        XCTAssertEqual(try ids("milk AND (cortado OR flat) NOT title:flat"), ["b"])
    }

    func testMalformedQueriesNameThePosition() throws {
        try index()
        func error(_ q: String) -> String {
            do { _ = try c.search(index: "t", FullTextSearchRequest(query: q)); return "no error" } catch { return "\(error)" }
        }
        let cases: [(String, String)] = [
            ("", "the query is empty at position 0"),
            ("coffee AND", "AND needs a term after it at position 7"),
            ("OR milk", "OR needs a term before it at position 0"),
            ("NOT milk", "NOT needs a term before it at position 0"),
            ("(coffee milk", "unbalanced '(' at position 0"),
            ("coffee milk)", "unbalanced ')' at position 11"),
            ("\"flat white", "unterminated phrase at position 0"),
            ("author:smith", "unknown field 'author' (the index has title, body) at position 0"),
            ("coffee *", "unexpected '*' at position 7"),
            ("NEAR(coffee)", "NEAR needs at least two terms at position 0"),
            ("NEAR(a b, x)", "NEAR needs a distance (a whole number) after ',' at position 10"),
            ("-coffee", "a query cannot only exclude terms at position 0"),
            ("a ()", "empty group at position 2"),
        ]
        for (q, want) in cases { XCTAssertTrue(error(q).hasSuffix(want), "\(q): \(error(q))") }
        XCTAssertThrowsError(try FullTextQuery("title:", fields: ["title"])) { e in
            XCTAssertEqual(e as? FullTextQueryError, FullTextQueryError("'title:' needs a term right after it", at: 5))
        }
        assertStatus(.badRequest, try self.c.search(index: "t", FullTextSearchRequest(query: "coffee AND")))
        // Lucene's delimiters are word characters in this syntax: "[coffee]" is the word.
        for q in ["[coffee]", "{coffee}", "coffee~", "coffee^2"] {
            XCTAssertNoThrow(try FullTextQuery(q, fields: ["title"]), q)
        }
    }

    func testUnicodeFoldingAndScripts() throws {
        try put("fr", #"{"title":"Café crème","body":"un CAFÉ à Besançon"}"#)
        try put("de", #"{"title":"Straße","body":"Grüße aus München"}"#)
        try put("ru", #"{"title":"Кофе","body":"чёрный кофе с молоком"}"#)
        try put("el", #"{"title":"Καφές","body":"ελληνικός καφές"}"#)
        try index()
        XCTAssertEqual(try ids("cafe"), ["fr"])
        XCTAssertEqual(try ids("CAFÉ"), ["fr"])
        XCTAssertEqual(try ids("besancon"), ["fr"])
        XCTAssertEqual(try ids("grusse OR grüße"), ["de"])
        XCTAssertEqual(try ids("munchen"), ["de"])
        XCTAssertEqual(try ids("КОФЕ"), ["ru"])
        XCTAssertEqual(try ids("молок*"), ["ru"])
        XCTAssertEqual(try ids("καφές"), ["el"])                               // unicode61 folds Latin diacritics only
        XCTAssertEqual(try ids("ΕΛΛΗΝΙΚΌΣ"), ["el"])
        let hit = try c.search(index: "t", FullTextSearchRequest(query: "cafe")).hits[0]
        XCTAssertEqual(hit.snippets.first?.text, "<b>Café</b> crème")   // the text as written
        // Without diacritic folding, accents tell words apart.
        try index(["title", "body"], FullTextAnalyzer(foldDiacritics: false), name: "exact")
        XCTAssertEqual(try ids("cafe", name: "exact"), [])
        XCTAssertEqual(try ids("café", name: "exact"), ["fr"])
    }

    func testStemmingOnAndOff() throws {
        try put("1", #"{"title":"Running","body":"she runs every morning"}"#)
        try put("2", #"{"title":"Connections","body":"connected and connecting"}"#)
        try index()
        try index(["title", "body"], FullTextAnalyzer(stemming: true), name: "stem")
        XCTAssertEqual(try ids("run"), [])
        XCTAssertEqual(try ids("run", name: "stem"), ["1"])
        XCTAssertEqual(try ids("connect", name: "stem"), ["2"])
        XCTAssertEqual(try ids("connection", name: "stem"), ["2"])
    }

    func testStopWords() throws {
        try put("1", #"{"title":"The Cat","body":"the cat sat on the mat"}"#)
        try put("2", #"{"title":"Dogs","body":"dogs bark"}"#)
        try index(["title", "body"], FullTextAnalyzer(stopWords: ["THE", "on"]), name: "stop")
        XCTAssertEqual(try ids("the", name: "stop"), [])
        XCTAssertEqual(try ids("cat", name: "stop"), ["1"])
        XCTAssertEqual(try ids("\"cat sat the mat\"", name: "stop"), ["1"])   // stop words leave no gap
        XCTAssertEqual(try ids("the AND cat", name: "stop"), [])               // an AND with a stop word matches nothing
        try index(["title", "body"], FullTextAnalyzer(stemming: true, stopWords: FullTextAnalyzer.englishStopWords), name: "en")
        XCTAssertEqual(try ids("barking", name: "en"), ["2"])
        XCTAssertEqual(try ids("this", name: "en"), [])
        assertStatus(.badRequest, try FullTextIndex(ddoc: "x", name: "y", fields: ["a"], analyzer: FullTextAnalyzer(stopWords: ["it's"])))
    }

    func testIncrementalUpdatesDeletesAndPurges() throws {
        try coffeeCorpus()
        try index()
        XCTAssertEqual(try ids("coffee").count, 3)
        try put("r4", #"{"title":"Tea","body":"tea, then coffee"}"#)
        try put("r5", #"{"title":"Mocha","body":"chocolate and coffee"}"#)
        XCTAssertEqual(Set(try ids("coffee")), ["r1", "r2", "r3", "r4", "r5"])
        try put("r1", #"{"title":"Water","body":"still water"}"#)           // changed: its old terms go
        XCTAssertEqual(Set(try ids("coffee")), ["r2", "r3", "r4", "r5"])
        XCTAssertEqual(try ids("water"), ["r1"])
        let rev = try c.get(docID: "r2").withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }["_rev"]!.stringValue!
        _ = try c.delete(docID: "r2", parent: rev)
        try c.purge(docID: "r3")
        XCTAssertEqual(Set(try ids("coffee")), ["r4", "r5"])
        // A purge while the index is behind: the purged document is not indexed later either.
        try put("r6", #"{"title":"Latte","body":"coffee"}"#)
        try c.purge(docID: "r6")
        try c.purge(docID: "r5")
        XCTAssertEqual(try ids("coffee"), ["r4"])
        // A document that loses its fields leaves the index.
        try put("r4", #"{"other":"coffee"}"#)
        XCTAssertEqual(try ids("coffee"), [])
        // Arrays of strings, nested fields.
        try put("arr", #"{"title":["iced","coffee"],"body":{"x":1},"meta":{"note":"nested coffee"}}"#)
        XCTAssertEqual(try ids("iced"), ["arr"])
        try index(["meta.note"], name: "nested")
        XCTAssertEqual(try ids("nested", name: "nested"), ["arr"])
    }

    func testDefinitionChangeRebuildsAndDeleteDropsStorage() throws {
        try coffeeCorpus()
        try index(["title"])
        XCTAssertEqual(try ids("coffee"), ["r1"])
        XCTAssertEqual(try c.createTextIndex(FullTextIndex(ddoc: "fts", name: "t", fields: ["title"])), "exists")
        try index(["title", "body"])
        XCTAssertEqual(Set(try ids("coffee")), ["r1", "r2", "r3"])
        XCTAssertEqual(try c.textIndexes().map(\.fields), [["title", "body"]])
        try c.deleteTextIndex(name: "t")
        XCTAssertEqual(try c.textIndexes(), [])
        assertStatus(.notFound, try self.c.search(index: "t", FullTextSearchRequest(query: "coffee")))
        XCTAssertEqual(try c.store.read { try FullTextStorage.indexes($0, collectionID: self.c.id) }.count, 0)
        XCTAssertThrowsError(try c.get(docID: "_design/fts"))             // nothing else was in it
        // A definition deleted by a document write: its storage goes at the next search.
        try index(["title"], name: "a")
        try index(["body"], name: "b")
        XCTAssertEqual(try ids("coffee", name: "a"), ["r1"])
        XCTAssertEqual(try ids("coffee", name: "b").count, 3)
        try put("_design/fts", #"{"language":"query","indexes":{"b":{"index":{"fields":["body"]}}}}"#)
        XCTAssertEqual(try ids("coffee", name: "b").count, 3)
        XCTAssertEqual(try c.store.read { try FullTextStorage.indexes($0, collectionID: self.c.id) }.map(\.name),
                       ["\u{1}text/_design/fts/b"])
    }

    func testDesignDocumentShapeAndCollectionDrop() throws {
        let other = try db.createCollection(scope: nil, name: "notes")
        _ = try other.put(docID: "n", json: #"{"title":"coffee"}"#, parent: nil)
        try other.createTextIndex(FullTextIndex(ddoc: "_design/x", name: "n", fields: ["title"],
                                                analyzer: FullTextAnalyzer(stemming: true), partialFilter: try Selector(json: #"{"title":{"$exists":true}}"#)))
        let ddoc = try other.get(docID: "_design/x").withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
        XCTAssertEqual(ddoc["language"], .string("query"))
        let def = ddoc["indexes"]?.objectValue?["n"]?.objectValue
        XCTAssertEqual(def?["index"]?.objectValue?["fields"], try JSONParser.parse(#"[{"name":"title","type":"string"}]"#))
        XCTAssertEqual(def?["analyzer"]?.objectValue?["stemming"], .bool(true))
        XCTAssertEqual(try other.search(index: "n", FullTextSearchRequest(query: "coffee")).hits.map(\.docID), ["n"])
        // CouchDB's own text-index design document (its default analyzer) is read too.
        _ = try other.put(docID: "_design/couch", json: #"{"language":"query","indexes":{"c":{"index":{"fields":[{"name":"title","type":"string"}],"default_field":{},"selector":{}},"analyzer":{"name":"perfield","default":"keyword","fields":{"$default":"standard"}}}}}"#, parent: nil)
        XCTAssertEqual(try other.textIndexes().map(\.name), ["c", "n"])
        XCTAssertEqual(try other.search(index: "c", FullTextSearchRequest(query: "coffee")).hits.map(\.docID), ["n"])
        // Json and text indexes share the design document.
        _ = try other.createMangoIndex(try JSONParser.parse(#"{"index":{"fields":["title"]},"ddoc":"x","name":"byTitle"}"#))
        XCTAssertEqual(try other.textIndexes().map(\.name), ["c", "n"])
        XCTAssertEqual(try other.mangoIndexes().map(\.name), ["byTitle"])
        try db.deleteCollection(scope: nil, name: "notes")
        XCTAssertEqual(try db.store.read { try FullTextStorage.indexes($0, collectionID: other.id) }.count, 0)
    }

    func testSelectorPagingAndDocuments() throws {
        for i in 0..<30 {
            try put(String(format: "d%02d", i), #"{"title":"coffee \#(String(repeating: "word ", count: i))","body":"x","year":\#(2000 + i)}"#)
        }
        try index()
        let all = try ids("coffee")
        XCTAssertEqual(all.count, 30)
        XCTAssertEqual(Array(all.prefix(3)), ["d00", "d01", "d02"])           // shorter titles rank higher
        XCTAssertEqual(try ids("coffee") { $0.limit = 5; $0.skip = 2 }, Array(all[2..<7]))
        var r = FullTextSearchRequest(query: "coffee", limit: 7)
        var pages: [String] = []
        while true {
            let page = try c.search(index: "t", r)
            if page.hits.isEmpty { break }
            pages += page.hits.map(\.docID)
            r.bookmark = page.bookmark
        }
        XCTAssertEqual(pages, all)
        let sel = try Selector(json: #"{"year":{"$gte":2025}}"#)
        XCTAssertEqual(try ids("coffee") { $0.selector = sel }, ["d25", "d26", "d27", "d28", "d29"])
        XCTAssertEqual(try ids("coffee") { $0.selector = sel; $0.limit = 2; $0.skip = 1 }, ["d26", "d27"])
        let withDoc = try c.search(index: "t", FullTextSearchRequest(query: "coffee", limit: 1, includeDocs: true)).hits[0]
        let doc = try withDoc.document!.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
        XCTAssertEqual(doc["_id"], .string("d00"))
        XCTAssertNil(try c.search(index: "t", FullTextSearchRequest(query: "coffee")).hits[0].document)
        assertStatus(.badRequest, try self.c.search(index: "t", FullTextSearchRequest(query: "coffee", bookmark: "nope")))
        assertStatus(.badRequest, try self.c.search(index: "t", FullTextSearchRequest(query: "coffee", fields: ["year"])))
    }

    func testEncryptedDatabaseKeepsNoPlaintextTerms() throws {
        var o = OpenOptions()
        o.encryptionKey = try EncryptionKey(jsonText: #"{"password":"fts secret"}"#)
        let edb = try Database.open(name: "enc", directory: dir, options: o)
        let ec = try edb.defaultCollection()
        let marker = "zebraquokkamarker"
        for i in 0..<50 { _ = try ec.put(docID: "d\(i)", json: #"{"title":"\#(marker) \#(i)"}"#, parent: nil) }
        try ec.createTextIndex(FullTextIndex(ddoc: "s", name: "s", fields: ["title"]))
        XCTAssertEqual(try ec.search(index: "s", FullTextSearchRequest(query: marker)).hits.count, 50)
        try edb.close()
        XCTAssertGreaterThan(try bytes(of: "enc").count, 4096)
        XCTAssertFalse(try holds("enc", marker), "a term is on disk in plaintext")
        // Unencrypted, the same index does hold it in plaintext (the check can fail).
        let pdb = try Database.open(name: "plain", directory: dir, options: OpenOptions())
        let pc = try pdb.defaultCollection()
        _ = try pc.put(docID: "d", json: #"{"title":"\#(marker)"}"#, parent: nil)
        try pc.createTextIndex(FullTextIndex(ddoc: "s", name: "s", fields: ["title"]))
        XCTAssertEqual(try pc.search(index: "s", FullTextSearchRequest(query: marker)).hits.count, 1)
        try pdb.close()
        XCTAssertTrue(try holds("plain", marker))
    }

    /// The bytes of a database's files.
    private func bytes(of name: String) throws -> [UInt8] {
        try allBytes(under: dir + "/" + name + ".cblite2")
    }

    private func holds(_ name: String, _ text: String) throws -> Bool {
        let b = try bytes(of: name), n = Array(text.utf8)
        guard b.count >= n.count else { return false }
        return (0...(b.count - n.count)).contains { b[$0] == n[0] && Array(b[$0..<$0 + n.count]) == n }
    }
}
