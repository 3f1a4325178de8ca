import XCTest
@testable import CBLiteCore

/// CouchDB's collation: the published sample key order, Unicode strings through ICU,
/// sort keys against ICU's own comparison, and the order SQLite keeps in a view's index.
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

    /// Sort keys order strings exactly as ICU's comparison does (random strings over
    /// ASCII, Latin-1, combining marks, other scripts and astral characters).
    func testSortKeysMatchICUComparison() {
        let alphabet: [String] = (0x20...0x7E).map { String(UnicodeScalar(UInt8($0))) } + ["\t", "\n"]
            + ["é", "e\u{0301}", "ß", "Æ", "ø", "ñ", "Ω", "日", "中", "😀", "\u{FFFF}", "\u{0000}", "\u{00A0}"]
        var g = SystemRandomNumberGenerator()
        func random() -> String { (0..<Int.random(in: 0...6, using: &g)).map { _ in alphabet.randomElement(using: &g)! }.joined() }
        var checked = 0
        for _ in 0..<20000 {
            let a = random(), b = random()
            let byKeys = Collation.compareStrings(a, b)
            var x = a, y = b
            let byICU = x.withUTF8 { pa in y.withUTF8 { pb in ICU.shared.compare(pa, pb) } }
            XCTAssertEqual(byKeys, byICU, "\(a.debugDescription) vs \(b.debugDescription)")
            if byKeys != byICU { break }
            checked += 1
        }
        XCTAssertEqual(checked, 20000)
    }

    /// Keys inside arrays and objects keep the order: a string's sort key ends before the
    /// next item, so "a" then 2 sorts before "ab" then 1.
    func testNestedKeysAreSelfDelimiting() {
        XCTAssertEqual(Collation.compare("[\"a\",2]", "[\"ab\",1]"), -1)
        XCTAssertEqual(Collation.compare("[\"\",9]", "[\"a\"]"), -1)
        XCTAssertEqual(Collation.compare("{\"a\":2}", "{\"ab\":1}"), -1)
        XCTAssertEqual(Collation.compare("[[1],2]", "[[1,0]]"), -1)
        XCTAssertEqual(Collation.compare("[-0.0]", "[0]"), 0)
        XCTAssertEqual(Collation.compare("[-1e-300]", "[0]"), -1)
        XCTAssertEqual(Collation.compare("[1e300]", "[\"\"]"), -1)
    }

    /// Group levels cut array keys at item boundaries: [1,2] and [1,2,3] share a group at
    /// level 2; a non-array key is its own group at level 1 and left out above.
    func testGroupPrefix() {
        func g(_ json: String, _ level: Int) -> [UInt8]? {
            let k = CollatableKey.encode(try! JSONParser.parse(json))
            return k.withUnsafeBufferPointer { CollatableKey.groupPrefix($0, level: level) }
        }
        XCTAssertEqual(g("[1,2]", 2), g("[1,2,3]", 2))
        XCTAssertEqual(g("[1,2,3]", 2), CollatableKey.encode(try! JSONParser.parse("[1,2]")))
        XCTAssertNotEqual(g("[1,2]", 2), g("[1,3]", 2))
        XCTAssertEqual(g("[\"a\",{\"x\":[1]},3]", 2), CollatableKey.encode(try! JSONParser.parse("[\"a\",{\"x\":[1]}]")))
        XCTAssertEqual(g("7", 1), CollatableKey.encode(.int(7)))
        XCTAssertNil(g("7", 2))
        XCTAssertEqual(g("[]", 3), CollatableKey.encode(.array([])))
        // a trimmed last number, however deep (its end markers outnumber its dropped zeros)
        let deep = "[[[[[[[[[42]]]]]]]]]"
        XCTAssertEqual(g(deep, 1), CollatableKey.encode(try! JSONParser.parse(deep)))
        XCTAssertEqual(g("[1,[[[[[[[[42]]]]]]]],3]", 2), CollatableKey.encode(try! JSONParser.parse("[1,[[[[[[[[42]]]]]]]]]")))
    }

    /// A Mango key filter's item comparison: an item of an array key against an operand's
    /// 8-byte encoding, whether the key's number was trimmed or not, at any depth.
    func testItemsOfTrimmedKeysCompareWithTheirOperands() throws {
        for (key, column, operand, want) in [("[42]", 0, "42", 0), ("[42]", 0, "41", 1), ("[42]", 0, "42.5", -1),
                                             ("[1,42]", 1, "42", 0), ("[42,1]", 0, "42", 0), ("[1,[[[[[[[[42]]]]]]]]]", 1, "[[[[[[[[42]]]]]]]]", 0),
                                             ("[1,[[[[[[[[42]]]]]]]]]", 1, "[[[[[[[[43]]]]]]]]", -1), ("[1,[42]]", 1, "[42,0]", -1),
                                             ("[\"a\",0]", 1, "0", 0), ("[\"a\",0]", 1, "-0.5", 1)] {
            let k = CollatableKey.encode(try JSONParser.parse(key))
            let item = CollatableKey.encodeItem(try JSONParser.parse(operand))
            let r = k.withUnsafeBufferPointer { kb -> Int? in
                guard let start = CollatableKey.itemStart(kb, at: column) else { return nil }
                return item.withUnsafeBufferPointer { CollatableKey.compareItem(kb, at: start, $0) }
            }
            XCTAssertEqual(r, want, "\(key)[\(column)] vs \(operand)")
        }
    }

    /// An index of CollatableKeys under SQLite's plain BINARY order is in CouchDB's order.
    func testBinaryIndexOrderIsCouchOrder() throws {
        let conn = try Connection(path: ":memory:", create: true, busyTimeoutMs: 0)
        try conn.exec("CREATE TABLE t(k BLOB PRIMARY KEY, json TEXT) WITHOUT ROWID")
        let ins = try conn.prepare("INSERT INTO t(k, json) VALUES (?, ?)")
        for k in CollationTests.couchOrder.shuffled() {
            ins.bindBlob(1, CollatableKey.encode(try JSONParser.parse(k))).bind(2, k)
            try ins.run()
        }
        let s = try conn.prepare("SELECT json FROM t ORDER BY k")
        var out: [String] = []
        while try s.step() { out.append(s.string(0)!) }
        s.reset()
        XCTAssertEqual(out, CollationTests.couchOrder)
        let lo = CollatableKey.encode(.string("B")), hi = CollatableKey.encode(.array([]))
        let q = try conn.prepare("SELECT count(*) FROM t WHERE k > ? AND k < ?")
        q.bindBlob(1, lo).bindBlob(2, hi)
        XCTAssertTrue(try q.step())
        XCTAssertEqual(q.int(0), 2)    // "ba", "bb"
        q.reset()
    }

    /// A number alone is stored without the trailing zero bytes of its double (42 takes 3
    /// bytes, not 9), and still sorts as a number among every other key, alone or in
    /// arrays; so is a key's last number followed only by end markers (`[42]` in 5 bytes).
    func testNumbersAloneAreTrimmedAndKeepTheirOrder() {
        XCTAssertEqual(CollatableKey.encode(.int(42)), [0x08, 0xC0, 0x45])
        XCTAssertEqual(CollatableKey.encode(.int(0)), [0x08, 0x80])
        XCTAssertEqual(CollatableKey.encode(.double(-0.0)), CollatableKey.encode(.int(0)))
        XCTAssertEqual(CollatableKey.encode(.array([.int(42)])), [0x0A, 0x08, 0xC0, 0x45, 0x00])
        let numbers: [Double] = [-1e300, -4097, -42.5, -42, -1, -0.5, -1e-300, 0, 1e-300, 0.5, 1, 2, 3, 42, 42.5, 43,
                                 255, 256, 257, 4096, 65536, 1e15, 9007199254740993, 1e300]
        var keys: [JSONValue] = numbers.map { $0.rounded() == $0 && abs($0) < 1e15 ? .int(Int64($0)) : .double($0) }
        keys += [.null, .bool(false), .bool(true), .string(""), .string("a"), .array([]), .array([.int(42)]),
                 .array([.int(42), .int(1)]), .array([.double(42.5)]), .object(JSONObject([("a", .int(1))]))]
        let ordered = keys.sorted { Collation.compare(JSONWriter.ordered($0), JSONWriter.ordered($1)) < 0 }
        for (i, a) in ordered.enumerated() {
            for (j, b) in ordered.enumerated() {
                let c = CollatableKey.compare(CollatableKey.encode(a), CollatableKey.encode(b))
                XCTAssertEqual(c, i == j ? 0 : (i < j ? -1 : 1), "\(a) vs \(b)")
            }
        }
        // by value, not by the sorted list alone
        for (x, y) in zip(numbers, numbers.dropFirst()) {
            XCTAssertEqual(CollatableKey.compare(CollatableKey.encode(.double(x)), CollatableKey.encode(.double(y))), -1, "\(x) < \(y)")
        }
    }

    /// Random keys (nested arrays and objects of numbers — integers, negatives, -0, large,
    /// doubles whose bytes end in zeros and ones that do not — strings, null, booleans):
    /// memcmp of their CollatableKeys orders them as the JSON collation does (a reference
    /// comparator over the values, numbers as doubles), equal keys have equal bytes, and
    /// only a key's last number, followed by end markers alone, is trimmed.
    func testTrimmedKeysKeepTheCollationOrder() throws {
        var g = SystemRandomNumberGenerator()
        let numbers: [Double] = [0, -0.0, 1, -1, 2, 42, -42, 42.5, 0.5, 1e-300, -1e-300, 1e300, -1e300, 255, 256, 65536,
                                 9007199254740993, 1.0000000000000002, 0.1, -0.1, 3, 4]
        func number() -> JSONValue {
            let d = Bool.random(using: &g) ? numbers.randomElement(using: &g)! : Double(Int.random(in: -5...5, using: &g))
            return d.rounded() == d && abs(d) < 1e15 && !(d == 0 && d.sign == .minus) ? .int(Int64(d)) : .double(d)
        }
        func value(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth < 3 ? 8 : 5), using: &g) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &g))
            case 2, 3: return number()
            case 4: return .string(["", "a", "B", "ab"].randomElement(using: &g)!)
            case 5, 6: return .array((0..<Int.random(in: 0...3, using: &g)).map { _ in value(depth + 1) })
            default:
                return .object(JSONObject((0..<Int.random(in: 0...2, using: &g)).map { _ in (["a", "b"].randomElement(using: &g)!, value(depth + 1)) }))
            }
        }
        func rank(_ v: JSONValue) -> Int {
            switch v {
            case .null: return 0
            case .bool(let b): return b ? 2 : 1
            case .int, .double, .bigInteger: return 3
            case .string: return 4
            case .array: return 5
            case .object: return 6
            }
        }
        func sign(_ c: Int) -> Int { c < 0 ? -1 : (c > 0 ? 1 : 0) }
        // The collation, independent of CollatableKey's byte layout (strings by ICU).
        func reference(_ a: JSONValue, _ b: JSONValue) -> Int {
            if rank(a) != rank(b) { return rank(a) < rank(b) ? -1 : 1 }
            switch (a, b) {
            case (.string(let x), .string(let y)): return sign(Collation.compareStrings(x, y))
            case (.array(let x), .array(let y)):
                for (p, q) in zip(x, y) { let c = reference(p, q); if c != 0 { return c } }
                return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
            case (.object(let x), .object(let y)):
                for (p, q) in zip(x.members, y.members) {
                    let n = sign(Collation.compareStrings(p.0, q.0)); if n != 0 { return n }
                    let c = reference(p.1, q.1); if c != 0 { return c }
                }
                return x.members.count == y.members.count ? 0 : (x.members.count < y.members.count ? -1 : 1)
            case (.bool, .bool), (.null, .null): return 0
            default:
                let x = a.doubleValue!, y = b.doubleValue!
                return x < y ? -1 : (x > y ? 1 : 0)
            }
        }
        func text(_ v: JSONValue) -> String { String(decoding: JSONWriter.ordered(v), as: UTF8.self) }
        var keys: [JSONValue] = (0..<400).map { _ in value(0) }
        keys += [.array([.int(42)]), .array([.int(42), .null]), .array([.double(42.0000001)]), .array([.array([.int(1)])]),
                 .array([.int(1), .int(0)]), .array([.int(1)]), .object(JSONObject([("a", .array([.int(7)]))]))]
        var checked = 0
        for a in keys {
            let ka = CollatableKey.encode(a)
            for b in keys {
                let want = reference(a, b)
                let got = CollatableKey.compare(ka, CollatableKey.encode(b))
                XCTAssertEqual(got, want, "\(text(a)) vs \(text(b))")
                if want == 0 { XCTAssertEqual(ka, CollatableKey.encode(b)) }
                if got != want { return }
                checked += 1
            }
        }
        XCTAssertEqual(checked, keys.count * keys.count)
        // Each key is its full form (every number in 8 bytes) less trailing zeros; its
        // decoders read it: items compare equal to their own encodings, group prefixes are
        // the keys of the first items, JSON comes back.
        for a in keys {
            let ka = CollatableKey.encode(a), full = CollatableKey.encodePrefix(a)
            XCTAssertEqual(Array(full.prefix(ka.count)), ka, "\(text(a))")
            XCTAssertTrue(full.dropFirst(ka.count).allSatisfy { $0 == 0 }, "\(text(a))")
            if CollatableKey.jsonIsRecoverable(a) {
                var w = JSONWriter(canonical: false)
                XCTAssertTrue(ka.withUnsafeBufferPointer { CollatableKey.appendJSON($0, to: &w) }, "\(text(a))")
                XCTAssertEqual(w.bytes, Collation.compactJSON(a))
            }
            guard case .array(let items) = a else { continue }
            ka.withUnsafeBufferPointer { kb in
                for (i, item) in items.enumerated() {
                    let start = CollatableKey.itemStart(kb, at: i)
                    XCTAssertNotNil(start, "\(text(a))[\(i)]")
                    let c = CollatableKey.encodeItem(item).withUnsafeBufferPointer { CollatableKey.compareItem(kb, at: start ?? 0, $0) }
                    XCTAssertEqual(c, 0, "\(text(a))[\(i)]")
                    XCTAssertEqual(CollatableKey.groupPrefix(kb, level: i + 1), CollatableKey.encode(.array(Array(items.prefix(i + 1)))),
                                   "\(text(a)) at level \(i + 1)")
                }
                XCTAssertNil(CollatableKey.itemStart(kb, at: items.count))
            }
        }
        XCTAssertEqual(Array(CollatableKey.encode(.array([.string("a"), .int(7)])).suffix(4)), [0x08, 0xC0, 0x1C, 0x00])
        XCTAssertEqual(CollatableKey.encode(.array([.int(7), .null])).count, 1 + 9 + 1 + 1, "a number followed by an item keeps its bytes")
        XCTAssertEqual(CollatableKey.encode(.array([.array([.int(7)])])), [0x0A, 0x0A, 0x08, 0xC0, 0x1C, 0x00, 0x00])
    }

    /// Keys whose JSON the CollatableKey gives back (and so is not stored): made again
    /// byte for byte as the compact JSON the index would have stored; others are refused.
    func testKeyJSONMadeFromTheKeyIsTheStoredJSON() throws {
        let recoverable = ["null", "true", "false", "0", "-0", "42", "-42", "1.0", "1e3", "-1e15", "9007199254740991",
                           "[]", "[1,[2,null],true]", "[[]]", "[-0.0,3]", "[42]", "[1,[2,3]]", "[[[[[[[[[42]]]]]]]]]", "[0]",
                           "[-1e15]"]
        let kept = ["1.5", "-42.5", "1e300", "9007199254740993", "123456789012345678", "\"a\"", "[1,\"a\"]", "{\"x\":1}", "[{}]"]
        for text in recoverable + kept {
            let value = try JSONParser.parse(text)
            let key = CollatableKey.encode(value)
            var w = JSONWriter(canonical: false)
            let made = key.withUnsafeBufferPointer { CollatableKey.appendJSON($0, to: &w) }
            XCTAssertEqual(CollatableKey.jsonIsRecoverable(value), recoverable.contains(text), text)
            if CollatableKey.jsonIsRecoverable(value) {
                XCTAssertTrue(made, text)
                XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), String(decoding: Collation.compactJSON(value), as: UTF8.self), text)
            }
        }
    }

    /// The key format names the collator's version, so an ICU upgrade rebuilds indexes.
    func testFormatTagNamesCollatorVersion() {
        XCTAssertTrue(IndexFormat.collated.hasPrefix("ix6/icu-"))
        XCTAssertFalse(IndexFormat.collated.hasSuffix("none"), "ICU's collator is expected on this system")
        XCTAssertTrue(IndexFormat.isCurrent(IndexFormat.withoutCollation))
        XCTAssertFalse(IndexFormat.isCurrent("ix6/icu-none"))
    }
}
