import XCTest
@testable import CBLiteCore

/// CouchDB's collation: the published sample key order, Unicode strings through ICU,
/// the ASCII fast path against ICU, and the order SQLite keeps in a view's index.
final class CollationTests: CBLTestCase {
    /// CouchDB's "Collation Specification" sample keys, in their documented order.
    static let couchOrder = [
        "null", "false", "true",
        "1", "2", "3.0", "4",
        "\"a\"", "\"A\"", "\"aa\"", "\"b\"", "\"B\"", "\"ba\"", "\"bb\"",
        "[\"a\"]", "[\"b\"]", "[\"b\",\"c\"]", "[\"b\",\"c\",\"a\"]", "[\"b\",\"d\"]", "[\"b\",\"d\",\"e\"]",
        "{\"a\":1}", "{\"a\":2}", "{\"b\":1}", "{\"b\":2}", "{\"b\":2,\"a\":1}", "{\"b\":2,\"c\":2}",
    ]

    func testCouchDBSampleOrderPairwise() {
        let keys = CollationTests.couchOrder
        for i in keys.indices {
            XCTAssertEqual(Collation.compare(keys[i], keys[i]), 0, keys[i])
            for j in keys.indices where j != i {
                XCTAssertEqual(Collation.compare(keys[i], keys[j]), i < j ? -1 : 1, "\(keys[i]) vs \(keys[j])")
            }
        }
    }

    func testSortingShuffledSampleGivesTheSameList() {
        var shuffled = CollationTests.couchOrder
        var g = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            shuffled.shuffle(using: &g)
            let sorted = shuffled.sorted { Collation.compare($0, $1) < 0 }
            XCTAssertEqual(sorted, CollationTests.couchOrder)
        }
    }

    func testTypesNumbersAndWhitespace() {
        XCTAssertEqual(Collation.compare("null", "false"), -1)
        XCTAssertEqual(Collation.compare("true", "-1e300"), -1)
        XCTAssertEqual(Collation.compare("99999", "\"\""), -1)
        XCTAssertEqual(Collation.compare("\"zzz\"", "[]"), -1)
        XCTAssertEqual(Collation.compare("[{}]", "{}"), -1)
        XCTAssertEqual(Collation.compare("-2", "-1.5"), -1)
        XCTAssertEqual(Collation.compare("10", "9"), 1)               // by value, not text
        XCTAssertEqual(Collation.compare("1e2", "100"), 0)
        XCTAssertEqual(Collation.compare("0.1", "0.10"), 0)
        XCTAssertEqual(Collation.compare("12345678901234567890", "12345678901234567891e0"), 0)   // doubles
        XCTAssertEqual(Collation.compare("[1, 2]", "[1,2]"), 0)
        XCTAssertEqual(Collation.compare("[]", "[null]"), -1)
        XCTAssertEqual(Collation.compare("{}", "{\"a\":null}"), -1)
    }

    func testUnicodeStringsFollowUCA() {
        // Symbols sort before digits before letters; case is a tertiary difference.
        XCTAssertEqual(Collation.compareStrings("~", "0"), -1)
        XCTAssertEqual(Collation.compareStrings("0", "a"), -1)
        XCTAssertEqual(Collation.compareStrings("a", "B"), -1)        // bytes would say otherwise
        XCTAssertEqual(Collation.compareStrings("résumé", "resume"), 1)
        XCTAssertEqual(Collation.compareStrings("résumé", "resumf"), -1)  // accents are secondary
        XCTAssertEqual(Collation.compareStrings("Ärger", "Zebra"), -1)
        XCTAssertEqual(Collation.compareStrings("ß", "st"), -1)
        XCTAssertEqual(Collation.compareStrings("日本", "中国"), Collation.compareStrings("日本", "中国"))
        XCTAssertEqual(Collation.compareStrings("\u{00E9}", "e\u{0301}"), 0)  // canonical equivalence
        // Escapes are decoded before comparing.
        XCTAssertEqual(Collation.compare("\"\\u00e9\"", "\"é\""), 0)
        XCTAssertEqual(Collation.compare("\"a\\\"b\"", "\"a\\\"c\""), -1)
        XCTAssertEqual(Collation.compare("\"\\ud83d\\ude00\"", "\"😀\""), 0)
        // Prefix matching relies on U+FFFF sorting after every prefixed string.
        XCTAssertEqual(Collation.compareStrings("foo\u{FFFF}", "foolish"), 1)
        XCTAssertEqual(Collation.compareStrings("foo\u{FFFF}", "fooZZZ"), 1)
        XCTAssertEqual(Collation.compareStrings("foo\u{FFFF}", "fop"), -1)
        XCTAssertEqual(Collation.compareStrings("foo\u{FFFF}", "foo\u{00E9}t\u{00E9}"), 1)
    }

    /// The ASCII fast path gives exactly ICU's answer.
    func testASCIIFastPathMatchesICU() {
        let alphabet: [UInt8] = Array(0x20...0x7E) + [0x09, 0x0A]
        var g = SystemRandomNumberGenerator()
        func random() -> [UInt8] { (0..<Int.random(in: 0...6, using: &g)).map { _ in alphabet.randomElement(using: &g)! } }
        var checked = 0
        for _ in 0..<20000 {
            let a = random(), b = random()
            let t = ASCIICollation.shared
            let fast = a.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in t.compare(pa, pb) } }
            let icu = a.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in ICU.shared.compare(pa, pb) } }
            XCTAssertEqual(fast, icu, "\(String(decoding: a, as: UTF8.self)) vs \(String(decoding: b, as: UTF8.self))")
            checked += 1
            if fast != icu { break }
        }
        XCTAssertEqual(checked, 20000)
        // Every printable character takes the fast path.
        for c in UInt8(0x20)...UInt8(0x7E) { XCTAssertTrue(ASCIICollation.shared.isFast(c)) }
    }

    /// The SQLite collation keeps a table in this order (not only returned rows).
    func testSQLiteCollationOrdersAnIndex() throws {
        let conn = try Connection(path: ":memory:", create: true, busyTimeoutMs: 0)
        try conn.exec("CREATE TABLE t(k TEXT COLLATE CBL_JSON); CREATE INDEX t_k ON t(k)")
        let ins = try conn.prepare("INSERT INTO t(k) VALUES (?)")
        for k in CollationTests.couchOrder.shuffled() {
            ins.bind(1, k)
            try ins.run()
        }
        let plan = try conn.queryString("EXPLAIN QUERY PLAN SELECT k FROM t ORDER BY k") ?? ""
        _ = plan
        let s = try conn.prepare("SELECT k FROM t ORDER BY k")
        var out: [String] = []
        while try s.step() { out.append(s.string(0)!) }
        s.reset()
        XCTAssertEqual(out, CollationTests.couchOrder)
        XCTAssertEqual(try conn.queryInt("SELECT count(*) FROM t WHERE k > '\"B\"' AND k < '[]'"), 2)   // "ba", "bb"
        XCTAssertEqual(try conn.queryString("PRAGMA integrity_check"), "ok")
    }
}
