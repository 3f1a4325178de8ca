import XCTest
@testable import CBLiteCore

/// RevTree.appendOnCurrent (the update path's byte-level append) against RevTree's own
/// decode, add, prune and encode: the same bytes for every tree shape and depth.
final class RevTreeAppendTests: XCTestCase {
    private func b(_ s: String) -> [UInt8] { Array(s.utf8) }

    /// What the general save path stores: decode, add the child of the current revision,
    /// prune, encode without the new current's body.
    private func expected(_ encoded: [UInt8]?, current: RevID, body: [UInt8]?, newRev: RevID, maxDepth: Int) throws -> [UInt8]? {
        var (tree, ci) = try RevTree.decode(encoded, current: current, currentDeleted: false, currentBody: body)
        let n = tree.add(newRev, parent: ci, deleted: false, body: b("{\"new\":1}"))
        tree.prune(maxDepth: maxDepth)
        XCTAssertEqual(tree.winner, tree.nodes.count - 1, "the new revision wins and stays last")
        XCTAssertGreaterThanOrEqual(n, tree.nodes.count - 1)
        return tree.encode(omitBodyOf: tree.nodes.count - 1)
    }

    private func appended(_ encoded: [UInt8]?, current: RevID, body: [UInt8]?, newRev: RevID, maxDepth: Int) throws -> [UInt8]? {
        let cur = b(current.string), new = b(newRev.string)
        var out = [UInt8](repeating: 0, count: RevTree.appendCapacity(
            encodedCount: encoded?.count ?? 0, currentCount: cur.count, currentBodyCount: body?.count ?? 0, newRevCount: new.count))
        // Optional arrays as optional buffers: empty stands for nil, which none of these is.
        let tree = encoded ?? [], bodyBytes = body ?? []
        let n: Int? = try out.withUnsafeMutableBufferPointer { o in
            try tree.withUnsafeBufferPointer { t in
                try bodyBytes.withUnsafeBufferPointer { bb in
                    try cur.withUnsafeBufferPointer { c in
                        try new.withUnsafeBufferPointer { nr in
                            try RevTree.appendOnCurrent(encoded: encoded == nil ? nil : t, current: c, currentBody: body == nil ? nil : bb,
                                                        newRev: nr, maxDepth: maxDepth, into: o)
                        }
                    }
                }
            }
        }
        return n.map { Array(out[..<$0]) }
    }

    private func assertSame(_ encoded: [UInt8]?, current: RevID, body: [UInt8]?, maxDepth: Int,
                            file: StaticString = #filePath, line: UInt = #line) throws {
        let newRev = RevID.make(parent: current, deleted: false, canonicalBody: b("{\"new\":1}"))
        let want = try expected(encoded, current: current, body: body, newRev: newRev, maxDepth: maxDepth)
        let got = try appended(encoded, current: current, body: body, newRev: newRev, maxDepth: maxDepth)
        XCTAssertEqual(got, want, "maxDepth \(maxDepth)", file: file, line: line)
    }

    /// A chain of `n` revisions as saves make it; returns its encoding (nil for one) and
    /// the current revision with its body.
    private func chain(_ n: Int) -> ([UInt8]?, RevID, [UInt8]) {
        var t = RevTree()
        var parent: Int? = nil
        var rev: RevID? = nil
        for g in 1...n {
            let body = b("{\"g\":\(g)}")
            rev = RevID.make(parent: rev, deleted: false, canonicalBody: body)
            parent = t.add(rev!, parent: parent, deleted: false, body: body)
        }
        return (t.encode(omitBodyOf: n - 1), rev!, b("{\"g\":\(n)}"))
    }

    func testChainsOfEveryLengthAndDepth() throws {
        for n in 1...24 {
            let (encoded, current, body) = chain(n)
            for depth in [1, 2, 3, n - 1, n, n + 1, n + 2, 20].filter({ $0 >= 1 }) {
                try assertSame(encoded, current: current, body: body, maxDepth: depth)
            }
        }
    }

    func testSingleRevisionWithoutBody() throws {
        let current = RevID("1-abc")!
        for depth in 1...3 { try assertSame(nil, current: current, body: nil, maxDepth: depth) }
    }

    /// Trees with branches, deleted leaves, dropped bodies and a root not first: with and
    /// without pruning (the branching ones prune through RevTree itself).
    func testRandomTreesWithBranches() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            var t = RevTree()
            let count = Int.random(in: 1...30, using: &rng)
            for i in 0..<count {
                let parent: Int? = i == 0 ? nil : (Bool.random(using: &rng) ? i - 1 : Int.random(in: 0..<i, using: &rng))
                let gen = (parent.map { t.nodes[$0].rev.generation } ?? Int.random(in: 0...3, using: &rng)) + 1
                let rev = RevID(generation: gen, digest: String(UInt64.random(in: 0...UInt64.max, using: &rng), radix: 16))
                let body: [UInt8]? = Bool.random(using: &rng) ? b("{\"i\":\(i)}") : nil
                t.add(rev, parent: parent, deleted: Int.random(in: 0..<5, using: &rng) == 0, body: body)
            }
            // The current revision: an undeleted leaf (the save path's precondition).
            let live = t.leafIndexes.filter { !t.nodes[$0].deleted }
            guard let current = live.max(by: { t.nodes[$0].rev < t.nodes[$1].rev }) else { continue }
            let encoded = t.encode(omitBodyOf: current)
            let body = b("{\"current\":true}")
            for depth in [1, 2, 5, 20, 40] {
                try assertSame(encoded, current: t.nodes[current].rev, body: body, maxDepth: depth)
            }
        }
    }

    func testExistingRevisionAndWrongCurrentAreRefused() throws {
        let (encoded, current, body) = chain(3)
        let newRev = RevID.make(parent: current, deleted: false, canonicalBody: b("{\"new\":1}"))
        // The tree already holds the revision to add (a peer sent it): refused, as the
        // general path refuses it.
        var (tree, ci) = try RevTree.decode(encoded, current: current, currentDeleted: false, currentBody: body)
        tree.add(newRev, parent: 0, deleted: false, body: nil)
        let withNew = tree.encode(omitBodyOf: ci)
        for depth in [2, 20] {
            XCTAssertThrowsError(try appended(withNew, current: current, body: body, newRev: newRev, maxDepth: depth)) {
                XCTAssertEqual(($0 as? CBLError)?.status, .conflict)
            }
        }
        XCTAssertThrowsError(try appended(nil, current: current, body: body, newRev: current, maxDepth: 5))
        // A current revision the tree does not have as current: a damaged row.
        XCTAssertThrowsError(try appended(encoded, current: RevID("3-ffff")!, body: body, newRev: newRev, maxDepth: 20)) {
            XCTAssertEqual(($0 as? CBLError)?.status, .internalError)
        }
        // Truncated and unknown-format encodings.
        XCTAssertThrowsError(try appended(Array(encoded!.dropLast(3)), current: current, body: body, newRev: newRev, maxDepth: 20))
        XCTAssertThrowsError(try appended([2] + encoded!.dropFirst(), current: current, body: body, newRev: newRev, maxDepth: 20))
    }
}
