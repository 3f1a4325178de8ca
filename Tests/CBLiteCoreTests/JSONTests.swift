import XCTest
@testable import CBLiteCore

final class JSONTests: XCTestCase {
    private func parseBytes(_ bytes: [UInt8]) throws -> JSONValue {
        try bytes.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) }
    }

    private func canon(_ text: String) throws -> String { JSONWriter.canonicalString(try JSONParser.parse(text)) }

    // MARK: strictness

    /// The word-at-a-time scan for bytes that need an escape agrees with a byte loop on
    /// every special byte at every position of buffers of every length up to 40, and on
    /// random bytes (UTF-8 above 0x7F included).
    func testEscapeScanAgreesWithAByteLoop() {
        func naive(_ b: [UInt8]) -> Int { b.firstIndex { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 } ?? b.count }
        func fast(_ b: [UInt8]) -> Int { b.withUnsafeBufferPointer { JSONWriter.escapeFreePrefix($0) } }
        for length in 0...40 {
            let plain = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            XCTAssertEqual(fast(plain), length)
            for position in 0..<length {
                for special: UInt8 in [0x00, 0x01, 0x1F, 0x22, 0x5C, 0x20, 0x21, 0x5B, 0x5D, 0x7F, 0x80, 0xC3, 0xFF] {
                    var b = plain
                    b[position] = special
                    XCTAssertEqual(fast(b), naive(b), "length \(length), byte \(special) at \(position)")
                    if position + 1 < length { b[position + 1] = 0x00 }        // a second hit just after
                    XCTAssertEqual(fast(b), naive(b))
                }
            }
        }
        var g = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let b = (0..<Int.random(in: 0...64, using: &g)).map { _ in UInt8.random(in: 0x18...0xFF, using: &g) }
            XCTAssertEqual(fast(b), naive(b))
        }
    }

    func testIntegersAreWrittenAsTheirDecimalDigits() {
        var values: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, 12345, Int64.max, Int64.min, Int64.max - 1, Int64.min + 1]
        var g = SystemRandomNumberGenerator()
        for _ in 0..<200 { values.append(Int64.random(in: Int64.min...Int64.max, using: &g) >> Int64.random(in: 0...62, using: &g)) }
        for v in values {
            XCTAssertEqual(JSONWriter.canonicalString(.int(v)), String(v))
            var w = JSONWriter()
            w.appendInt(v)
            XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), String(v))
        }
        XCTAssertEqual(JSONWriter.canonicalString(.double(-3.0)), "-3", "integral doubles too")
    }

    func testInvalidJSONIsBadRequest() {
        let bad = [
            "", " ", "{", "}", "[", "[1,]", "[,1]", "{\"a\":1,}", "{'a':1}", "{a:1}", "{\"a\" 1}", "{\"a\":}",
            "tru", "nul", "falsey", "[1] x", "1 2", "\"unterminated", "\"bad \\x escape\"", "\"\\u12G4\"",
            "\"\\u12\"", "01", "-01", "1.", ".5", "+1", "1e", "1e+", "-", "NaN", "Infinity", "-Infinity",
            "0x10", "[1 2]", "{\"a\":1 \"b\":2}", "//c\n1", "/* c */ 1",
        ]
        for text in bad {
            assertStatus(.badRequest, try JSONParser.parse(text), "input: \(text.debugDescription)")
        }
    }

    func testRawControlCharacterInStringIsRejected() {
        for c in [0x00, 0x01, 0x0A, 0x09, 0x1F] as [UInt8] {
            assertStatus(.badRequest, try parseBytes([0x22, 0x61, c, 0x62, 0x22]), "control byte \(c)")
        }
    }

    func testInvalidUTF8IsRejected() {
        let q: UInt8 = 0x22
        let bad: [[UInt8]] = [
            [q, 0xFF, q],                         // never valid
            [q, 0x80, q],                         // lone continuation byte
            [q, 0xC0, 0xAF, q],                   // overlong '/'
            [q, 0xE0, 0x80, 0xAF, q],             // overlong
            [q, 0xED, 0xA0, 0x80, q],             // encoded surrogate D800
            [q, 0xF4, 0x90, 0x80, 0x80, q],       // above U+10FFFF
            [q, 0xE2, 0x82, q],                   // truncated sequence
            [q, 0x61, 0x5C, 0x6E, 0xFF, q],       // after an escape (slow path)
            Array("{\"".utf8) + [0xFE] + Array("\":1}".utf8),   // in a key
            [0xFF],                                // outside a string
            Array("[1,".utf8) + [0xC3] + Array("]".utf8),
        ]
        for b in bad { assertStatus(.badRequest, try parseBytes(b), "bytes \(b)") }
        // Valid multi-byte UTF-8 passes.
        XCTAssertEqual(try parseBytes([q, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, q]), .string("é€😀"))
    }

    func testDuplicateKeysAreRejected() {
        assertStatus(.badRequest, try JSONParser.parse(#"{"a":1,"a":2}"#))
        assertStatus(.badRequest, try JSONParser.parse(#"{"a":1,"b":{"x":1,"x":1}}"#))
        assertStatus(.badRequest, try JSONParser.parse(#"[{"k":null,"k":null}]"#))
        // Same key after an escape that decodes to it.
        assertStatus(.badRequest, try JSONParser.parse(#"{"a":1,"\u0061":2}"#))
        // Many members (beyond any small-object fast path), duplicate at the end or in the middle.
        for count in [31, 32, 33, 40, 200] {
            var members = (0..<count).map { "\"k\($0)\":\($0)" }
            XCTAssertNoThrow(try JSONParser.parse("{" + members.joined(separator: ",") + "}"), "count \(count)")
            members.append("\"k0\":0")
            assertStatus(.badRequest, try JSONParser.parse("{" + members.joined(separator: ",") + "}"), "dup at end of \(count)")
            members.removeLast()
            members.insert("\"k\(count - 1)\":9", at: count / 2)
            assertStatus(.badRequest, try JSONParser.parse("{" + members.joined(separator: ",") + "}"), "dup in middle of \(count)")
        }
        // Equal keys in different objects are fine.
        XCTAssertNoThrow(try JSONParser.parse(#"{"a":{"a":1},"b":{"a":2}}"#))
    }

    /// The parser and the canonicalizer take exactly `maxDepth` levels of arrays and of
    /// objects, and refuse one more with a message naming the limit.
    func testDepthLimit() throws {
        let n = JSONParser.maxDepth
        let arrays = { (d: Int) in String(repeating: "[", count: d) + String(repeating: "]", count: d) }
        let objects = { (d: Int) in String(repeating: "{\"a\":", count: d) + "1" + String(repeating: "}", count: d) }
        for text in [arrays(n), objects(n)] {
            XCTAssertNoThrow(try JSONParser.parse(text))
            var t = text
            XCTAssertEqual(try t.withUTF8 { try JSONCanonicalizer.canonicalize($0) }, Array(text.utf8))
        }
        for text in [arrays(n + 1), objects(n + 1)] {
            XCTAssertThrowsError(try JSONParser.parse(text)) {
                XCTAssertTrue("\($0)".contains("nesting deeper than \(n)"), "\($0)")
            }
            var t = text
            XCTAssertThrowsError(try t.withUTF8 { try JSONCanonicalizer.canonicalize($0) }) {
                XCTAssertTrue("\($0)".contains("nesting deeper than \(n)"), "\($0)")
            }
        }
    }

    func testVeryDeepNestingDoesNotCrash() {
        let n = 100_000
        assertStatus(.badRequest, try JSONParser.parse(String(repeating: "[", count: n) + String(repeating: "]", count: n)))
        assertStatus(.badRequest, try JSONParser.parse(String(repeating: "[", count: n)))   // unterminated too
        assertStatus(.badRequest, try JSONParser.parse(String(repeating: "{\"a\":", count: n) + "0" + String(repeating: "}", count: n)))
        assertStatus(.badRequest, try JSONParser.parse(String(repeating: "[{\"k\":", count: n / 2)))
    }

    // MARK: strings

    func testEscapesAndSurrogatePairs() throws {
        XCTAssertEqual(try JSONParser.parse(#""\ud83d\ude00""#), .string("😀"))
        XCTAssertEqual(try JSONParser.parse(#""\uD834\uDD1E""#), .string("\u{1D11E}"))
        XCTAssertEqual(try JSONParser.parse(#""\u00e9\u20AC\u0000""#), .string("é€\u{0}"))
        XCTAssertEqual(try JSONParser.parse(#""\"\\\/\b\f\n\r\t""#), .string("\"\\/\u{8}\u{C}\n\r\t"))
        XCTAssertEqual(try JSONParser.parse(#""x\ud83d\ude00y""#), .string("x😀y"))
        assertStatus(.badRequest, try JSONParser.parse(#""\ud83d""#))          // lone high
        assertStatus(.badRequest, try JSONParser.parse(#""\ude00""#))          // lone low
        assertStatus(.badRequest, try JSONParser.parse(#""\ud83d\u0041""#))    // high + non-low
        assertStatus(.badRequest, try JSONParser.parse(#""\ud83dx""#))
        assertStatus(.badRequest, try JSONParser.parse(#""\ud83d\ud83d""#))
    }

    // MARK: numbers

    func testNumbers() throws {
        XCTAssertEqual(try JSONParser.parse("0"), .int(0))
        XCTAssertEqual(try JSONParser.parse("-0"), .int(0))
        XCTAssertEqual(try JSONParser.parse("123"), .int(123))
        XCTAssertEqual(try JSONParser.parse("-42"), .int(-42))
        XCTAssertEqual(try JSONParser.parse("9223372036854775807"), .int(Int64.max))
        XCTAssertEqual(try JSONParser.parse("-9223372036854775808"), .int(Int64.min))
        XCTAssertEqual(try JSONParser.parse("1.5"), .double(1.5))
        XCTAssertEqual(try JSONParser.parse("-0.25"), .double(-0.25))
        XCTAssertEqual(try JSONParser.parse("1e2"), .double(100))
        XCTAssertEqual(try JSONParser.parse("1E-2"), .double(0.01))
        XCTAssertEqual(try JSONParser.parse("2.5e+3"), .double(2500))
        // Beyond Int64: kept exactly, as its digits (CouchDB keeps them; a double would lose them).
        XCTAssertEqual(try JSONParser.parse("9223372036854775808"), .bigInteger("9223372036854775808"))
        XCTAssertEqual(try JSONParser.parse("-9223372036854775809"), .bigInteger("-9223372036854775809"))
        XCTAssertEqual(try JSONParser.parse("18446744073709551617").doubleValue, 18446744073709551616.0)
        XCTAssertNil(try JSONParser.parse("18446744073709551617").intValue)
        // An integer with an exponent or a fraction is a double, as in CouchDB.
        XCTAssertEqual(try JSONParser.parse("1e19"), .double(1e19))
        // Non-finite is rejected.
        assertStatus(.badRequest, try JSONParser.parse("1e400"))
        assertStatus(.badRequest, try JSONParser.parse("-1e400"))
        XCTAssertEqual(try JSONParser.parse("1.0").intValue, 1)
        XCTAssertNil(try JSONParser.parse("1.5").intValue)
    }

    /// Integers beyond 64 bits keep every digit through the parser, the writer and the
    /// canonicalizer (both canonical paths give the same bytes).
    func testBigIntegersKeepEveryDigit() throws {
        let literals = ["18446744073709551617", "12345678901234567890123", "-12345678901234567890123",
                        "9223372036854775808", "-9223372036854775809", String(repeating: "9", count: 400)]
        for text in literals {
            let v = try JSONParser.parse(text)
            XCTAssertEqual(v, .bigInteger(text))
            XCTAssertEqual(JSONWriter.canonicalString(v), text)
            XCTAssertEqual(try canon(text), text)
            let doc = #"{"v":\#(text),"a":[\#(text),1.5]}"#
            XCTAssertEqual(try canon(doc), #"{"a":[\#(text),1.5],"v":\#(text)}"#)
            var copy = doc
            let onepass = try copy.withUTF8 { try JSONCanonicalizer.canonicalize($0) }
            XCTAssertEqual(String(decoding: onepass, as: UTF8.self), try canon(doc), "the canonicalizer agrees")
        }
        // The 19-digit integers that still fit keep their digits too (no detour through a double).
        XCTAssertEqual(try canon("9223372036854775807"), "9223372036854775807")
        XCTAssertEqual(try canon("-9223372036854775808"), "-9223372036854775808")
    }

    func testNumberCanonicalForms() throws {
        XCTAssertEqual(try canon("1.0"), "1")
        XCTAssertEqual(try canon("1"), "1")
        XCTAssertEqual(try canon("-2.000"), "-2")
        XCTAssertEqual(try canon("1e2"), "100")
        XCTAssertEqual(try canon("1.5E1"), "15")
        XCTAssertEqual(try canon("-0.0"), "0")
        XCTAssertEqual(try canon("0.5"), "0.5")
        XCTAssertEqual(try canon("[1.0,1,1e0,10E-1]"), "[1,1,1,1]")
        // Doubles that are not integral survive a round trip exactly.
        for text in ["0.1", "3.141592653589793", "-2.5e-8", "1.7976931348623157e308", "5e-324", "1e300", "123456.789"] {
            guard case .double(let d) = try JSONParser.parse(text) else { XCTFail(text); continue }
            let c = try canon(text)
            guard case .double(let back) = try JSONParser.parse(c) else { XCTFail("\(text) -> \(c)"); continue }
            XCTAssertEqual(back, d, "\(text) -> \(c)")
            XCTAssertEqual(try canon(c), c, "canonical form is a fixed point")
        }
        // Same value written differently: same canonical bytes.
        XCTAssertEqual(try canon(#"{"n":1.0}"#), try canon(#"{"n":1}"#))
        XCTAssertEqual(try canon(#"{"n":1e1}"#), try canon(#"{"n":10}"#))
    }

    // MARK: writer

    func testCanonicalWriterSortsKeysByUTF8Bytes() throws {
        let text = #"{"b":1,"a":2,"B":3,"aa":4,"":5,"é":6,"z":7,"_":8,"😀":9,"ｱ":10}"#
        // UTF-8 byte order: "" < "B" < "_" < "a" < "aa" < "b" < "z" < "é"(C3) < "ｱ"(EF) < "😀"(F0)
        // (UTF-16 order would put the surrogate pair of 😀 before U+FF71.)
        XCTAssertEqual(try canon(text), #"{"":5,"B":3,"_":8,"a":2,"aa":4,"b":1,"z":7,"é":6,"ｱ":10,"😀":9}"#)
        // Nested objects are sorted too; arrays keep their order.
        XCTAssertEqual(try canon(#"{"y":{"d":1,"c":[3,{"f":0,"e":0}]},"x":null}"#),
                       #"{"x":null,"y":{"c":[3,{"e":0,"f":0}],"d":1}}"#)
        // Whitespace disappears.
        XCTAssertEqual(try canon(" { \"a\" : [ 1 , true , false , null ] } \n"), #"{"a":[1,true,false,null]}"#)
    }

    func testWriterEscapesControlCharacters() throws {
        let s = JSONWriter.canonicalString(.string("a\"b\\c\n\r\t\u{8}\u{C}\u{1}\u{1F}\u{0}/é😀\u{7F}"))
        XCTAssertEqual(s, #""a\"b\\c\n\r\t\b\f\u0001\u001f\u0000/é😀"# + "\u{7F}\"")
        for b in s.utf8 where b < 0x20 { XCTFail("raw control byte \(b) in output") }
        XCTAssertEqual(try JSONParser.parse(s), .string("a\"b\\c\n\r\t\u{8}\u{C}\u{1}\u{1F}\u{0}/é😀\u{7F}"))
        // Keys are escaped as well.
        XCTAssertEqual(JSONWriter.canonicalString(.object(JSONObject([("k\n", .int(1))]))), #"{"k\n":1}"#)
    }

    func testRoundTrip() throws {
        let text = #"{"name":"Zoë \"Z\" \\ \u0007","tags":["a",1,-2.5,true,null,{"deep":[[[]]]}],"n":{"int":9007199254740993,"neg":-1,"e":1.25e-5},"empty":{},"list":[],"uni":"\ud83d\ude00 中文"}"#
        let v = try JSONParser.parse(text)
        let once = JSONWriter.canonicalString(v)
        let v2 = try JSONParser.parse(once)
        XCTAssertEqual(v2, v)
        XCTAssertEqual(JSONWriter.canonicalString(v2), once, "canonical output is stable")
        XCTAssertEqual(v.objectValue?["n"]?.objectValue?["int"], .int(9007199254740993), "large ints stay exact")
    }

    func testObjectEqualityIgnoresMemberOrder() throws {
        XCTAssertEqual(try JSONParser.parse(#"{"a":1,"b":2}"#), try JSONParser.parse(#"{"b":2,"a":1}"#))
        XCTAssertNotEqual(try JSONParser.parse(#"{"a":1,"b":2}"#), try JSONParser.parse(#"{"a":1,"b":3}"#))
        XCTAssertNotEqual(try JSONParser.parse(#"{"a":1}"#), try JSONParser.parse(#"{"a":1,"b":2}"#))
    }

    func testParseObjectRequiresAnObject() {
        for text in ["[]", "1", "\"s\"", "null", "true"] {
            XCTAssertNoThrow(try JSONParser.parse(text))
            assertStatus(.badRequest, try JSONParser.parseObject(text))
        }
        XCTAssertNoThrow(try JSONParser.parseObject("{}"))
    }
}
