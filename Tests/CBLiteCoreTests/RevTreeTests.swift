import XCTest
@testable import CBLiteCore

final class RevTreeTests: XCTestCase {
    private func r(_ s: String) -> RevID { RevID(s)! }
    private func b(_ s: String) -> [UInt8] { Array(s.utf8) }

    /// A linear chain 1-a ... n-a (bodies {"g":i}); returns the tree.
    private func chain(_ n: Int, digest: String = "a") -> RevTree {
        var t = RevTree()
        var parent: Int? = nil
        for g in 1...n { parent = t.add(r("\(g)-\(digest)"), parent: parent, deleted: false, body: b("{\"g\":\(g)}")) }
        return t
    }

    private func revs(_ t: RevTree, _ indexes: [Int]) -> [String] { indexes.map { t.nodes[$0].rev.string } }

    // MARK: winner

    func testWinnerIsUndeletedLeafOfHighestGeneration() throws {
        var t = RevTree()
        let root = t.add(r("1-a"), parent: nil, deleted: false, body: b("{}"))
        let b2 = t.add(r("2-b"), parent: root, deleted: false, body: b("{}"))
        let c2 = t.add(r("2-c"), parent: root, deleted: false, body: b("{}"))
        let c3 = t.add(r("3-c"), parent: c2, deleted: false, body: b("{}"))
        XCTAssertEqual(t.winner, c3)
        // A deleted leaf of higher generation loses to an undeleted one.
        let c4 = t.add(r("4-c"), parent: c3, deleted: true, body: nil)
        XCTAssertEqual(t.winner, b2)
        XCTAssertEqual(Set(t.leafIndexes), [b2, c4])
        XCTAssertTrue(t.isLeaf(b2))
        XCTAssertFalse(t.isLeaf(root))
    }

    func testAllDeletedPicksHighestDeletedLeaf() {
        var t = RevTree()
        let root = t.add(r("1-a"), parent: nil, deleted: false, body: nil)
        _ = t.add(r("2-x"), parent: root, deleted: true, body: nil)
        let y2 = t.add(r("2-y"), parent: root, deleted: false, body: nil)
        let y3 = t.add(r("3-y"), parent: y2, deleted: true, body: nil)
        XCTAssertEqual(t.winner, y3)
        XCTAssertEqual(t.conflictingLeaves, [], "no undeleted leaves")
    }

    func testTiesGoToHigherRevIDInASCII() {
        var t = RevTree()
        let root = t.add(r("1-a"), parent: nil, deleted: false, body: nil)
        let lower = t.add(r("2-B"), parent: root, deleted: false, body: nil)
        let higher = t.add(r("2-a"), parent: root, deleted: false, body: nil)
        _ = lower
        XCTAssertEqual(t.winner, higher, "'a' (0x61) sorts above 'B' (0x42)")
        let highest = t.add(r("2-ab"), parent: root, deleted: false, body: nil)
        XCTAssertEqual(t.winner, highest)
        // Deleted ties: also the higher ID.
        var d = RevTree()
        let dr = d.add(r("1-r"), parent: nil, deleted: false, body: nil)
        _ = d.add(r("2-m"), parent: dr, deleted: true, body: nil)
        let dn = d.add(r("2-n"), parent: dr, deleted: true, body: nil)
        XCTAssertEqual(d.winner, dn)
        // Generation is numeric: 10 beats 9 even though "9" > "1" in ASCII.
        var g = RevTree()
        let g9 = g.add(r("9-z"), parent: nil, deleted: false, body: nil)
        let g10 = g.add(r("10-a"), parent: nil, deleted: false, body: nil)
        _ = g9
        XCTAssertEqual(g.winner, g10)
    }

    /// CouchDB's 32-hex leaf against our 40-hex one: the winner CouchDB picks (the issue's
    /// case), for live leaves, deleted ones, and a live leaf against a deleted higher one.
    func testTiesBetweenCouchDBAndOurDigestsGoAsInCouchDB() {
        let couch = "3-4dc79c95e1a2b3c4d5e6f708192a3b4c", ours = "3-748efd35aa5e1b2c3d4e5f60718293a4b5c6d7e8"
        for deleted in [false, true] {
            var t = RevTree()
            let root = t.add(r("2-x"), parent: nil, deleted: false, body: nil)
            _ = t.add(r(ours), parent: root, deleted: deleted, body: nil)
            let c = t.add(r(couch), parent: root, deleted: deleted, body: nil)
            XCTAssertEqual(t.winner, c, deleted ? "deleted leaves" : "live leaves")
        }
        var t = RevTree()
        let root = t.add(r("2-x"), parent: nil, deleted: false, body: nil)
        let o = t.add(r(ours), parent: root, deleted: false, body: nil)
        _ = t.add(r(couch), parent: root, deleted: true, body: nil)
        XCTAssertEqual(t.winner, o, "a live leaf beats a deleted one whatever the IDs")
    }

    func testConflictingLeavesOrder() {
        var t = RevTree()
        let root = t.add(r("1-a"), parent: nil, deleted: false, body: nil)
        let a = t.add(r("2-a"), parent: root, deleted: false, body: nil)
        let c = t.add(r("2-c"), parent: root, deleted: false, body: nil)
        let bb = t.add(r("2-b"), parent: root, deleted: false, body: nil)
        let x3 = t.add(r("3-x"), parent: a, deleted: false, body: nil)
        _ = t.add(r("2-z"), parent: root, deleted: true, body: nil)       // deleted: not a conflict
        XCTAssertEqual(t.winner, x3)
        XCTAssertEqual(t.conflictingLeaves, [x3, c, bb], "winner first, then descending revision ID")
        XCTAssertEqual(revs(t, t.conflictingLeaves), ["3-x", "2-c", "2-b"])
        XCTAssertEqual(RevTree().winner, nil)
        XCTAssertEqual(chain(3).conflictingLeaves, [2])
    }

    // MARK: ancestry

    func testAncestry() {
        var t = chain(4)
        XCTAssertEqual(revs(t, t.ancestry(of: 3)), ["4-a", "3-a", "2-a", "1-a"])
        XCTAssertEqual(revs(t, t.ancestry(of: 0)), ["1-a"])
        let branch = t.add(r("3-b"), parent: 1, deleted: false, body: nil)
        XCTAssertEqual(revs(t, t.ancestry(of: branch)), ["3-b", "2-a", "1-a"])
        XCTAssertEqual(t.index(of: r("3-b")), branch)
        XCTAssertNil(t.index(of: r("9-q")))
    }

    // MARK: prune / compaction

    func testPruneKeepsMaxDepthPerBranch() {
        var t = chain(10)
        XCTAssertEqual(t.prune(maxDepth: 20), 0)
        XCTAssertEqual(t.prune(maxDepth: 10), 0)
        XCTAssertEqual(t.prune(maxDepth: 4), 6)
        XCTAssertEqual(t.nodes.count, 4)
        XCTAssertEqual(Set(t.nodes.map(\.rev.string)), ["7-a", "8-a", "9-a", "10-a"])
        let oldest = t.index(of: r("7-a"))!
        XCTAssertNil(t.nodes[oldest].parent, "the oldest kept revision becomes a root")
        let leaf = t.index(of: r("10-a"))!
        XCTAssertEqual(revs(t, t.ancestry(of: leaf)), ["10-a", "9-a", "8-a", "7-a"])
        XCTAssertEqual(t.validate(), [])
        XCTAssertEqual(t.body(leaf), b("{\"g\":10}"), "bodies survive pruning")
    }

    func testPruneWithBranches() {
        var t = chain(8)                                     // 1-a ... 8-a, indexes 0...7
        let b4 = t.add(r("4-b"), parent: 2, deleted: false, body: nil)    // branch off 3-a
        let b5 = t.add(r("5-b"), parent: b4, deleted: false, body: nil)
        XCTAssertEqual(t.nodes.count, 10)
        t.prune(maxDepth: 3)
        // Main branch keeps 6-a,7-a,8-a; the side branch keeps 5-b,4-b,3-a.
        XCTAssertEqual(Set(t.nodes.map(\.rev.string)), ["6-a", "7-a", "8-a", "3-a", "4-b", "5-b"])
        XCTAssertEqual(revs(t, t.ancestry(of: t.index(of: r("5-b"))!)), ["5-b", "4-b", "3-a"])
        XCTAssertEqual(revs(t, t.ancestry(of: t.index(of: r("8-a"))!)), ["8-a", "7-a", "6-a"])
        XCTAssertEqual(t.validate(), [])
        _ = b5
        // maxDepth 1 keeps only the leaves.
        t.prune(maxDepth: 1)
        XCTAssertEqual(Set(t.nodes.map(\.rev.string)), ["8-a", "5-b"])
        XCTAssertTrue(t.nodes.allSatisfy { $0.parent == nil })
    }

    func testDropAncestorBodies() {
        var t = chain(3)
        let side = t.add(r("2-s"), parent: 0, deleted: false, body: b("{\"s\":1}"))
        XCTAssertEqual(t.dropAncestorBodies(), 2, "1-a and 2-a")
        XCTAssertNil(t.nodes[0].body)
        XCTAssertNil(t.nodes[1].body)
        XCTAssertEqual(t.nodes[2].body, b("{\"g\":3}"))
        XCTAssertEqual(t.nodes[side].body, b("{\"s\":1}"))
        XCTAssertEqual(t.dropAncestorBodies(), 0, "idempotent")
        XCTAssertEqual(t.nodes.count, 4, "revisions themselves are kept")
    }

    // MARK: encoding

    func testEncodeDecodeRoundTrip() throws {
        var t = chain(3)
        let del = t.add(r("2-d"), parent: 0, deleted: true, body: b("{\"why\":\"x\"}"))
        _ = t.add(r("2-n"), parent: 0, deleted: false, body: nil)
        let current = t.winner!
        XCTAssertEqual(t.nodes[current].rev, r("3-a"))
        let encoded = try XCTUnwrap(t.encode(omitBodyOf: current))
        let currentBody = b("{\"g\":3}")
        XCTAssertNil(encoded.firstRange(of: currentBody), "the current body is stored elsewhere, not in the tree")
        let (back, ci) = try RevTree.decode(encoded, current: r("3-a"), currentDeleted: false, currentBody: currentBody)
        XCTAssertEqual(ci, current)
        XCTAssertEqual(back.nodes.count, t.nodes.count)
        for (x, y) in zip(back.nodes, t.nodes) {
            XCTAssertEqual(x.rev, y.rev)
            XCTAssertEqual(x.parent, y.parent)
            XCTAssertEqual(x.deleted, y.deleted)
            XCTAssertEqual(x.body, y.body, "\(x.rev)")
        }
        XCTAssertTrue(back.nodes[del].deleted)
        XCTAssertEqual(back.winner, ci)
        XCTAssertEqual(back.validate(), [])
    }

    func testSingleNodeEncodesAsNil() throws {
        let single = RevTree(single: r("1-abc"), deleted: false, body: b("{\"a\":1}"))
        XCTAssertNil(single.encode(omitBodyOf: 0))
        let (t, ci) = try RevTree.decode(nil, current: r("1-abc"), currentDeleted: true, currentBody: b("{}"))
        XCTAssertEqual(ci, 0)
        XCTAssertEqual(t.nodes.count, 1)
        XCTAssertEqual(t.nodes[0].rev, r("1-abc"))
        XCTAssertTrue(t.nodes[0].deleted)
        XCTAssertEqual(t.nodes[0].body, b("{}"))
        XCTAssertNil(t.nodes[0].parent)
        // Two nodes never encode as nil.
        XCTAssertNotNil(chain(2).encode(omitBodyOf: 1))
    }

    func testDecodeRejectsCorruptData() throws {
        let t = chain(3)
        let encoded = try XCTUnwrap(t.encode(omitBodyOf: 2))
        // Wrong current revision.
        XCTAssertThrowsError(try RevTree.decode(encoded, current: r("9-q"), currentDeleted: false, currentBody: nil))
        // Truncated and garbage input.
        XCTAssertThrowsError(try RevTree.decode(Array(encoded.prefix(encoded.count / 2)), current: r("3-a"), currentDeleted: false, currentBody: nil))
        XCTAssertThrowsError(try RevTree.decode([], current: r("3-a"), currentDeleted: false, currentBody: nil))
        XCTAssertThrowsError(try RevTree.decode([99, 1, 2, 3], current: r("3-a"), currentDeleted: false, currentBody: nil))
        XCTAssertThrowsError(try RevTree.decode([1, 0xFF, 0xFF, 0xFF], current: r("3-a"), currentDeleted: false, currentBody: nil))
    }

    // MARK: validate

    func testValidateFindsProblems() {
        XCTAssertEqual(chain(5).validate(), [])
        XCTAssertEqual(RevTree().validate(), [])

        var dup = chain(2)
        dup.add(r("2-a"), parent: 0, deleted: false, body: nil)
        XCTAssertFalse(dup.validate().isEmpty, "duplicate revision")

        var notNewer = RevTree()
        let p = notNewer.add(r("3-a"), parent: nil, deleted: false, body: nil)
        notNewer.add(r("3-b"), parent: p, deleted: false, body: nil)
        XCTAssertFalse(notNewer.validate().isEmpty, "child generation not above parent")

        var older = RevTree()
        let q = older.add(r("5-a"), parent: nil, deleted: false, body: nil)
        older.add(r("2-b"), parent: q, deleted: false, body: nil)
        XCTAssertFalse(older.validate().isEmpty)

        var outOfRange = RevTree()
        outOfRange.add(r("1-a"), parent: nil, deleted: false, body: nil)
        outOfRange.add(r("2-a"), parent: 7, deleted: false, body: nil)
        XCTAssertFalse(outOfRange.validate().isEmpty, "parent index out of range")

        var selfParent = RevTree()
        selfParent.add(r("1-a"), parent: nil, deleted: false, body: nil)
        selfParent.add(r("2-a"), parent: 1, deleted: false, body: nil)
        XCTAssertFalse(selfParent.validate().isEmpty, "own parent")
    }
}

private extension RevTree {
    func body(_ i: Int) -> [UInt8]? { nodes[i].body }
}
