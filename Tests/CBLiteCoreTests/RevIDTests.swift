import XCTest
@testable import CBLiteCore

final class RevIDTests: XCTestCase {
    func testParseValid() throws {
        let r = try XCTUnwrap(RevID("1-abc"))
        XCTAssertEqual(r.generation, 1)
        XCTAssertEqual(r.digest, "abc")
        XCTAssertEqual(r.string, "1-abc")
        XCTAssertEqual(r.description, "1-abc")
        let big = try XCTUnwrap(RevID("123456789-" + String(repeating: "f", count: 128)))
        XCTAssertEqual(big.generation, 123_456_789)
        XCTAssertEqual(big.digest.count, 128)
        // Digests of other peers need not be hex; a dash inside the digest is fine.
        XCTAssertEqual(RevID("3-Zz_9-x")?.digest, "Zz_9-x")
        XCTAssertEqual(RevID("10-0a")?.generation, 10)
    }

    func testStringIsGenerationDashDigestAndRoundTrips() throws {
        for gen in [1, 9, 10, 99, 100, 12345, 999_999_999] {
            for digest in ["a", "0123456789abcdef0123456789abcdef", String(repeating: "z", count: 128)] {
                let r = RevID(generation: gen, digest: digest)
                XCTAssertEqual(r.string, String(gen) + "-" + digest)
                XCTAssertEqual(r.description, r.string)
                XCTAssertEqual(RevID(r.string), r)
                XCTAssertEqual(r.utf8Count, r.string.utf8.count)
            }
        }
        XCTAssertEqual(RevID(generation: 0, digest: "x").string, "0-x")
        XCTAssertEqual(RevID(generation: -3, digest: "x").string, "-3-x")
        XCTAssertEqual(RevID(generation: -3, digest: "x").utf8Count, 4)
    }

    func testParseInvalid() {
        let bad = ["", "1", "1-", "-abc", "0-abc", "01-abc", "a-abc", "1a-b", "-1-abc", "1-ab c", "1-é",
                   "1-\u{7F}", "1-\tx", "1234567890-a", "1-" + String(repeating: "a", count: 129), " 1-a", "1 -a"]
        for s in bad { XCTAssertNil(RevID(s), "should reject \(s.debugDescription)") }
    }

    func testOrderingIsGenerationThenASCIIDigest() throws {
        func r(_ s: String) -> RevID { RevID(s)! }
        XCTAssertLessThan(r("2-zzz"), r("10-aaa"), "generation compares numerically, not as text")
        XCTAssertLessThan(r("9-a"), r("10-a"))
        XCTAssertLessThan(r("1-a"), r("1-b"))
        XCTAssertLessThan(r("1-B"), r("1-a"), "uppercase sorts before lowercase in ASCII")
        XCTAssertLessThan(r("1-9"), r("1-A"))
        XCTAssertLessThan(r("1-a"), r("1-aa"), "prefix sorts first")
        XCTAssertFalse(r("1-a") < r("1-a"))
        XCTAssertEqual(r("4-abc"), RevID(generation: 4, digest: "abc"))
        let sorted = ["3-a", "10-a", "2-b", "2-B", "2-a", "1-z"].map(r).sorted().map(\.string)
        XCTAssertEqual(sorted, ["1-z", "2-B", "2-a", "2-b", "3-a", "10-a"])
    }

    /// CouchDB's order (couch_doc:parse_revid, then Erlang's term order): exactly 32 hex
    /// digits are the 16 bytes they encode, anything else its text; byte by byte, a
    /// prefix first.
    func testOrderingIsCouchDBsWhenDigestFormsMeet() throws {
        func r(_ s: String) -> RevID { RevID(s)! }
        // Recorded: CouchDB 3.5 answered "2-a437…" as the winner over "2-0123…" (client-shapes seq 38).
        XCTAssertLessThan(r("2-0123456789abcdef0123456789abcdef"), r("2-a43763cb6510199739a3d88e72322572"))
        // The issue's case: CouchDB's "3-4dc79c95…" beats our "3-748efd35…" (0x4D > '7' = 0x37),
        // though '4' < '7' in ASCII.
        let couch = r("3-4dc79c95e1a2b3c4d5e6f708192a3b4c"), ours = r("3-748efd35aa5e1b2c3d4e5f60718293a4b5c6d7e8")
        XCTAssertLessThan(ours, couch)
        XCTAssertFalse(couch < ours)
        // Same first byte (0x37 and '7'): the next byte decides (0x00 against '4').
        XCTAssertLessThan(r("3-37000000000000000000000000000000"), ours)
        XCTAssertLessThan(ours, r("3-37ff0000000000000000000000000000"))
        // A binary digest's 16 bytes are a prefix of a longer text starting with them.
        XCTAssertLessThan(r("1-61616161616161616161616161616161"), r("1-aaaaaaaaaaaaaaaaz"))
        // Text equal to a binary digest's bytes orders level with it (CouchDB holds one binary for both).
        XCTAssertFalse(r("1-aaaaaaaaaaaaaaaa") < r("1-61616161616161616161616161616161"))
        XCTAssertFalse(r("1-61616161616161616161616161616161") < r("1-aaaaaaaaaaaaaaaa"))
        // 32 characters that are not all hex stay text; 31 or 33 hex digits too.
        XCTAssertLessThan(r("1-0000000000000000000000000000000g"), r("1-ffffffffffffffffffffffffffffffff"))
        XCTAssertLessThan(r("1-0000000000000000000000000000000"), r("1-ffffffffffffffffffffffffffffffff"),
                          "'0' (0x30) against 0xFF: 31 digits are text, below the 32-digit binary")
        XCTAssertLessThan(r("1-00000000000000000000000000000000"), r("1-0"),
                          "0x00 against '0' (0x30): the binary digest is below the text")
        // Between binary digests, the hex order is the byte order, whatever the case given.
        XCTAssertLessThan(r("1-0fffffffffffffffffffffffffffffff"), r("1-A0000000000000000000000000000000"))
        XCTAssertEqual(r("1-A0000000000000000000000000000000"), r("1-a0000000000000000000000000000000"))
    }

    /// A generated table: every pair of digests of several forms and lengths, ordered by
    /// `<` and by an independent model of CouchDB's rule.
    func testOrderingMatchesAModelOfCouchDBsRuleOnAGeneratedTable() throws {
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
        let hex = Array("0123456789abcdef"), text = Array("0123456789abcdefABCDEFxyz_-~!")
        func digest(_ count: Int, _ alphabet: [Character]) -> String {
            String((0..<count).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] })
        }
        var digests: [String] = []
        for _ in 0..<40 {
            digests.append(digest(32, hex))                      // CouchDB, PouchDB
            digests.append(digest(40, hex))                      // ours
            digests.append(digest(Int(next() % 34) + 1, hex))    // other peers' hex
            digests.append(digest(Int(next() % 40) + 1, text))   // anything printable
        }
        // Shared first bytes: a binary digest beginning with a text digest's first characters' codes.
        digests.append("37" + digest(30, hex)); digests.append("7" + digest(39, hex))
        func model(_ d: String) -> [UInt8] {
            let u = Array(d.utf8)
            if u.count == 32, let bytes = Hex.decode(d) { return bytes }
            return u
        }
        var checked = 0
        for a in digests {
            for b in digests {
                let ra = RevID("5-" + a)!, rb = RevID("5-" + b)!
                let expected = model(a).lexicographicallyPrecedes(model(b))
                XCTAssertEqual(ra < rb, expected, "5-\(a) < 5-\(b)")
                checked += 1
            }
        }
        XCTAssertEqual(checked, digests.count * digests.count)
    }

    /// The digest's inputs, fixed by vectors computed outside Swift (Python's hashlib):
    /// SHA-1 of [length of the parent ID] + parent ID + [deleted] + canonical body. Stored
    /// and replicated revision IDs depend on these bytes never changing.
    func testMakeMatchesIndependentlyComputedVectors() throws {
        let body = Array(#"{"a":1}"#.utf8)
        let root = RevID.make(parent: nil, deleted: false, canonicalBody: body)
        XCTAssertEqual(root.string, "1-66c183b8980c2066b2d6ecd701d3823bc0c1b838")
        XCTAssertEqual(root.digest, "66c183b8980c2066b2d6ecd701d3823bc0c1b838")
        let child = RevID.make(parent: root, deleted: false, canonicalBody: body)
        XCTAssertEqual(child.string, "2-5a989424663f7ed413623fad0613483a7cf70bbd")
        // The parent given as parsed text (kept as given) hashes the same as the one made.
        let parsedParent = try XCTUnwrap(RevID(root.string))
        XCTAssertEqual(RevID.make(parent: parsedParent, deleted: false, canonicalBody: body), child)
        XCTAssertEqual(RevID.make(parent: root, deleted: true, canonicalBody: body).string,
                       "2-6c10ceba3efd125bf9654ae15c6162e4def7c4cb")
        // An upper-case 32-digit digest is stored lower-cased; its digest and order follow.
        let upper = try XCTUnwrap(RevID("7-ABCDEF0123456789ABCDEF0123456789"))
        XCTAssertEqual(upper.string, "7-abcdef0123456789abcdef0123456789")
        XCTAssertEqual(upper.digest, "abcdef0123456789abcdef0123456789")
        XCTAssertEqual(upper, RevID(generation: 7, digest: "abcdef0123456789abcdef0123456789"))
        XCTAssertEqual(Set([upper, RevID("7-abcdef0123456789abcdef0123456789")!]).count, 1, "equal IDs hash alike")
    }

    func testMakeIsDeterministicAndDependsOnItsInputs() throws {
        let body = Array(#"{"a":1}"#.utf8)
        let root = RevID.make(parent: nil, deleted: false, canonicalBody: body)
        XCTAssertEqual(root.generation, 1)
        XCTAssertEqual(root.digest.utf8.count, 40)
        XCTAssertTrue(root.digest.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }, "lowercase hex")
        XCTAssertEqual(RevID(root.string), root, "a made ID parses back")
        XCTAssertEqual(RevID.make(parent: nil, deleted: false, canonicalBody: body), root, "deterministic")

        let child = RevID.make(parent: root, deleted: false, canonicalBody: body)
        XCTAssertEqual(child.generation, 2)
        XCTAssertNotEqual(child.digest, root.digest, "depends on the parent")
        XCTAssertEqual(RevID.make(parent: root, deleted: false, canonicalBody: body), child)

        let otherParent = RevID.make(parent: RevID("1-ffff")!, deleted: false, canonicalBody: body)
        XCTAssertNotEqual(otherParent.digest, child.digest, "depends on which parent")
        XCTAssertEqual(otherParent.generation, 2)

        let deleted = RevID.make(parent: root, deleted: true, canonicalBody: body)
        XCTAssertNotEqual(deleted.digest, child.digest, "depends on the deleted flag")

        let otherBody = RevID.make(parent: root, deleted: false, canonicalBody: Array(#"{"a":2}"#.utf8))
        XCTAssertNotEqual(otherBody.digest, child.digest, "depends on the body")

        let gen7 = RevID.make(parent: RevID("7-abc")!, deleted: false, canonicalBody: Array("{}".utf8))
        XCTAssertEqual(gen7.generation, 8)
    }
}
