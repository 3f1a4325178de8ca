import XCTest
@testable import CBLiteCore

/// The one-pass canonicalizer must agree byte for byte with parse-then-write, and fail
/// exactly where the parser fails: revision IDs depend on it.
final class JSONCanonicalizerTests: XCTestCase {
    private func viaTree(_ s: String) -> Result<[UInt8], CBLError> {
        var c = s
        return c.withUTF8 { buf in
            Result { JSONWriter.canonical(try JSONParser.parse(bytes: buf)) }.mapError { $0 as! CBLError }
        }
    }

    private func viaCanonicalizer(_ s: String) -> Result<[UInt8], CBLError> {
        var c = s
        return c.withUTF8 { buf in Result { try JSONCanonicalizer.canonicalize(buf) }.mapError { $0 as! CBLError } }
    }

    private func assertAgree(_ s: String, file: StaticString = #filePath, line: UInt = #line) {
        switch (viaTree(s), viaCanonicalizer(s)) {
        case (.success(let a), .success(let b)):
            XCTAssertEqual(String(decoding: b, as: UTF8.self), String(decoding: a, as: UTF8.self), "input: \(s)", file: file, line: line)
        case (.failure(let a), .failure(let b)):
            XCTAssertEqual(a.status, b.status, file: file, line: line)
        case (let a, let b):
            XCTFail("disagree on \(s): tree \(a), canonicalizer \(b)", file: file, line: line)
        }
    }

    func testTrickyInputsAgree() {
        let inputs = [
            #"{}"#, #"[]"#, #"{"b":1,"a":2}"#, #" { "z" : [ 1 , 2 ] , "a" : { "y" : null , "x" : true } } "#,
            #"{"a":-0}"#, #"{"a":1.0}"#, #"{"a":1e2}"#, #"{"a":-1.5e-7}"#, #"{"a":123456789012345678901234}"#,
            #"{"a":9223372036854775807}"#, #"{"a":-9223372036854775808}"#, #"{"a":0.1}"#,
            #"{"\u00e9":1,"e":2,"\u0065\u0301":3}"#, #"{"a\"b":"c\\d","a":"\n\t\u0001"}"#,
            #"{"emoji":"\ud83d\ude00","k":"é"}"#, #"{"a":1,"a":2}"#, #"{"b":1,"a":2,"b":3}"#,
            #"{"a":}"#, #"{"a":1,}"#, #"[1,]"#, #"{"a":"\ud800"}"#, #"{"a":01}"#, #"{"a":1e999}"#,
            #"{"a":tru}"#, #"{"a":[{"c":1,"b":[{"z":0,"y":1}]}]}"#, "{\"a\":\"\u{7}\"}", "{\"a\":1} x",
            #""just a string""#, #"42"#, #"{"":1," ":2}"#, #"{"a":"x\/y"}"#,
            // escaped and plain keys mixed, out of order; a duplicate spelled two ways
            #"{"b\u0062":1,"é":2,"a":3,"\u00e9x":4,"ab":5}"#, #"{"a":1,"\u0061":2}"#, #"{"\u0061":1,"b":2,"a":3}"#,
            #"{"z":{"é":"\u00e9","e":"é"},"y":["\"",""]}"#, "{\"\u{E9}\":1,\"e\":2}",
        ]
        for s in inputs { assertAgree(s) }
    }

    /// Decimals copied as written (the fast path) and those that are re-printed agree with
    /// the tree's canonical form on both sides of every bound of the fast path.
    func testDecimalsAgree() {
        let numbers = ["12.3", "0.5", "-0.5", "0.0001", "0.00012", "0.00001", "0.000123456789012345",
                       "0.0001234567890123456", "123456789012345.5", "12345678901234.5", "99999999999999.9",
                       "999999999999999.9", "12.30", "1.0", "-0.0", "0.0", "00.5", "1.5e3", "1.5E-3", "-12.34",
                       "100000000000000.1", "1.00000000000001", "0.1000", "9007199254740993.5", "3.14159265358979",
                       // zeros at the end of the fraction: the integer part, or the literal without them
                       "70.0", "-70.00", "12.50", "-0.500", "0.00010", "0.000010", "999999999999999.0",
                       "9999999999999999.0", "123456789012345.60", "1234567890123456.50", "1.0e0", "10.0E2", "-0.00", "5.000000"]
        for n in numbers { assertAgree(#"{"n":"# + n + "}") }
    }

    /// Decimals with zeros at the end of the fraction are cut, not parsed and re-printed.
    func testZerosEndingAFractionAreCut() {
        func prefix(_ s: String) -> String? {
            let bytes = Array(s.utf8)
            return bytes.withUnsafeBufferPointer { b in JSONCanonicalizer.canonicalPrefixLength(b).map { String(s.prefix($0)) } }
        }
        XCTAssertEqual(prefix("70.0"), "70")
        XCTAssertEqual(prefix("-70.00"), "-70")
        XCTAssertEqual(prefix("12.50"), "12.5")
        XCTAssertEqual(prefix("0.0"), "0")
        XCTAssertNil(prefix("-0.0"), "negative zero is written 0: the general path")
        XCTAssertNil(prefix("9999999999999999.0"), "16 digits: the general path")
        XCTAssertNil(prefix("1.0e0"))
        XCTAssertNil(prefix("12.5"), "no zeros to cut")
    }

    func testInvalidUTF8Agrees() throws {
        let bytes: [UInt8] = Array(#"{"a":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8)
        try bytes.withUnsafeBufferPointer { buf in
            XCTAssertThrowsError(try JSONCanonicalizer.canonicalize(buf))
            XCTAssertThrowsError(try JSONParser.parse(bytes: buf))
        }
    }

    func testDeepNestingIsRejectedNotCrashing() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        assertAgree(deep)
        let ok = String(repeating: "{\"a\":", count: 100) + "1" + String(repeating: "}", count: 100)
        assertAgree(ok)
    }

    /// Objects past the first 16 members at a level and escaped keys past the first 256
    /// bytes move the canonicalizer's stacks from its caller's frame to the heap.
    func testLargeObjectsAndLongEscapedKeysAgree() {
        let wide = "{" + (0..<40).reversed().map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + "}"
        assertAgree(wide)
        XCTAssertEqual(try viaCanonicalizer(wide).get().count, wide.utf8.count, "40 members, reordered")
        assertAgree("{\"z\":" + wide + ",\"a\":[" + wide + "," + wide + "]}")
        let longKey = String(repeating: "\\u00e9x", count: 200)      // 600 decoded bytes
        assertAgree("{\"b\":1,\"" + longKey + "\":2,\"" + longKey + "y\":{\"" + longKey + "\":3,\"a\":4},\"a\":5}")
        assertAgree("{\"" + longKey + "\":1,\"" + longKey + "\":2}")         // a duplicate: both fail alike
        assertAgree("{" + (0..<20).map { #""\u00e9\#(40 - $0)":\#($0)"# }.joined(separator: ",") + "}")
    }

    func testRandomDocumentsAgree() {
        var rng = SystemRandomNumberGenerator()
        func randomString() -> String {
            let pool: [String] = ["a", "b", "Z", "é", "\\n", "\\\"", "\\u00e9", "x y", "😀", "\\t", "_", "10", "ß"]
            return (0..<Int.random(in: 0...4, using: &rng)).map { _ in pool.randomElement(using: &rng)! }.joined()
        }
        func randomValue(_ depth: Int) -> String {
            let ws = [" ", "", "\n", "\t"].randomElement(using: &rng)!
            switch Int.random(in: 0..<(depth > 3 ? 6 : 8), using: &rng) {
            case 0: return "null"
            case 1: return Bool.random(using: &rng) ? "true" : "false"
            case 2: return String(Int64.random(in: -1_000_000...1_000_000, using: &rng))
            case 3: return ["1.5", "-0.25", "2e3", "1.0", "-0", "3.14159", "1E-3", "100000000000000000000"].randomElement(using: &rng)!
            case 4, 5: return "\"\(randomString())\""
            case 6: return "[" + (0..<Int.random(in: 0...3, using: &rng)).map { _ in ws + randomValue(depth + 1) }.joined(separator: ",") + "]"
            default:
                var keys = Set<String>()
                var members: [String] = []
                for _ in 0..<Int.random(in: 0...5, using: &rng) {
                    let k = randomString()
                    if keys.insert(k).inserted { members.append("\"\(k)\"\(ws):\(ws)\(randomValue(depth + 1))") }
                }
                return "{" + members.joined(separator: ",") + "}"
            }
        }
        for _ in 0..<2000 { assertAgree(randomValue(0)) }
    }

    func testObjectModeHandsMetadataToTheCaller() throws {
        var seen: [String] = []
        let text = #"{"_id":"x","b":1,"_attachments":{"f":{"stub":true}},"a":2,"_rev":"1-a"}"#
        var copy = text
        let out = try copy.withUTF8 { buf in
            try JSONCanonicalizer.canonicalizeObject(buf) { key, value in
                seen.append(key)
                if key == "_id" { XCTAssertEqual(value, .string("x")) }
                return key == "_attachments"
            }
        }
        XCTAssertEqual(seen, ["_id", "_attachments", "_rev"])
        var first = #"{"_id":"x","b":1}"#
        XCTAssertEqual(String(decoding: try first.withUTF8 { try JSONCanonicalizer.canonicalizeObject($0) { _, _ in false } }, as: UTF8.self),
                       #"{"b":1}"#, "a dropped first member leaves no stray comma")
        XCTAssertEqual(String(decoding: out, as: UTF8.self), #"{"_attachments":{"f":{"stub":true}},"a":2,"b":1}"#)
        var arr = "[1]"
        XCTAssertThrowsError(try arr.withUTF8 { try JSONCanonicalizer.canonicalizeObject($0) { _, _ in true } }) { e in
            XCTAssertEqual((e as? CBLError)?.message, "body must be a JSON object")
        }
    }
}

/// The hand-written UTF-8 validator must agree with the standard library's on every
/// input: all 1–3 byte sequences exhaustively, and random 4-byte ones.
final class UTF8ValidationTests: XCTestCase {
    private func agree(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { buf in
            XCTAssertEqual(UTF8Validation.isValid(buf), String(validating: buf, as: UTF8.self) != nil, "\(bytes)")
        }
    }

    func testAgreesWithTheStandardLibrary() {
        for a in 0...255 { agree([UInt8(a)]) }
        for a in 0x80...0xFF { for b in 0...255 { agree([UInt8(a), UInt8(b)]) } }
        for a in 0xE0...0xF4 { for b in stride(from: 0x70, through: 0xC5, by: 1) { for c in [0x41, 0x80, 0xBF, 0xC0] {
            agree([UInt8(a), UInt8(b), UInt8(c)])
        } } }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<200_000 {
            agree((0..<Int.random(in: 1...6, using: &rng)).map { _ in
                [UInt8.random(in: 0...255, using: &rng), UInt8.random(in: 0x80...0xBF, using: &rng),
                 UInt8.random(in: 0xE0...0xF5, using: &rng), UInt8(ascii: "a")].randomElement(using: &rng)!
            })
        }
        agree(Array("plain ascii".utf8))
        agree(Array("é😀€".utf8))
        agree([0xED, 0xA0, 0x80])          // a surrogate
        agree([0xF4, 0x90, 0x80, 0x80])    // above U+10FFFF
        agree([0xC0, 0x80])                // overlong NUL
    }
}
