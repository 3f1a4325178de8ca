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
