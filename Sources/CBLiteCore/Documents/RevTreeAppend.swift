import Glibc

/// A new revision on the current one, made on the encoded tree without decoding it: the
/// update path's tree work (RevTree.decode, add, prune, encode cost ~4,000 instructions
/// and a dozen allocations an update; callgrind). The result is byte for byte what
/// `decode`, `add(newRev, parent: current)`, `prune(maxDepth:)` and `encode` give — a
/// differential test holds the two to that.
///
/// Why the new revision is always the winner, so no leaf needs looking at: the current
/// revision is the winner, an undeleted leaf of the highest generation among undeleted
/// leaves; its undeleted child is one generation higher still. Pruning never drops a leaf.
extension RevTree {
    /// The most bytes `appendOnCurrent` writes for these inputs.
    static func appendCapacity(encodedCount: Int, currentCount: Int, currentBodyCount: Int, newRevCount: Int) -> Int {
        // The stored tree, a new header, the old current node again with its body, and the new node.
        encodedCount + EncodedNodesWriter.headerCapacity
            + EncodedNodesWriter.nodeCapacity(revCount: currentCount, bodyCount: currentBodyCount)
            + EncodedNodesWriter.nodeCapacity(revCount: newRevCount, bodyCount: 0)
    }

    /// Writes into `out` the encoding of the tree `encoded` (nil: a single revision,
    /// `current`) with `newRev` added as an undeleted child of the current revision
    /// `current`, whose body (kept now that it is an ancestor) is `currentBody`, pruned to
    /// `maxDepth`. Returns the bytes written, or nil when the result is a tree of one
    /// revision (stored as NULL). `out` holds at least `appendCapacity` bytes. Throws when
    /// the tree is damaged, does not have `current` as its current revision, or already
    /// holds `newRev`. Node revision IDs are copied, not parsed (a damaged one stays for
    /// the integrity check to find).
    static func appendOnCurrent(encoded: UnsafeBufferPointer<UInt8>?, current: UnsafeBufferPointer<UInt8>,
                                currentBody: UnsafeBufferPointer<UInt8>?, newRev: UnsafeBufferPointer<UInt8>,
                                maxDepth: Int, into out: UnsafeMutableBufferPointer<UInt8>) throws -> Int? {
        guard maxDepth >= 1 else { throw CBLError.badRequest("maxRevTreeDepth must be at least 1") }
        var w = EncodedNodesWriter(out)
        guard let encoded else {
            // One revision so far: [current with its body, new].
            if maxDepth == 1 { return nil }
            if equal(current, newRev) { throw revisionExists(newRev) }
            w.header(nodeCount: 2)
            w.node(rev: current, parent: 0, flags: currentBody != nil ? EncodedNodes.hasBody : 0, body: currentBody)
            w.node(rev: newRev, parent: 1, flags: EncodedNodes.current, body: nil)
            return w.count
        }
        var r = try EncodedNodes(encoded)
        let count = r.count
        // Pruning keeps maxDepth revisions of each branch. On a chain (node i's parent is
        // i-1, as saves on the current revision make it) that is dropping the oldest; a
        // tree with branches goes through RevTree's own prune.
        let drop = max(0, count + 1 - maxDepth)
        w.header(nodeCount: count + 1 - drop)
        var currentIndex: Int?
        for i in 0..<count {
            let node = try r.next()
            let rev = node.rev, parent = node.parent, flags = node.flags, storedBody = node.body   // parent: 1-based, 0 for a root
            if equal(rev, newRev) { throw revisionExists(newRev) }
            if drop > 0 && parent != i {
                return try general(encoded, current: current, currentBody: currentBody, newRev: newRev, maxDepth: maxDepth, into: out)
            }
            if flags & EncodedNodes.current != 0 {
                guard equal(rev, current) else {
                    throw CBLError.internalError("revision tree does not contain the current revision \(String(decoding: current, as: UTF8.self))")
                }
                currentIndex = i
            }
            guard i >= drop else { continue }
            let keptParent = drop == 0 ? parent : max(0, parent - drop)
            if flags & EncodedNodes.current != 0 {
                w.node(rev: rev, parent: keptParent, flags: (flags & EncodedNodes.deleted) | (currentBody != nil ? EncodedNodes.hasBody : 0),
                       body: currentBody)
            } else {
                w.node(rev: rev, parent: keptParent, flags: flags, body: storedBody)
            }
        }
        guard let ci = currentIndex else {
            throw CBLError.internalError("revision tree does not contain the current revision \(String(decoding: current, as: UTF8.self))")
        }
        if drop > 0 {
            // On a chain the current revision, a leaf, is the last node.
            guard ci == count - 1 else {
                return try general(encoded, current: current, currentBody: currentBody, newRev: newRev, maxDepth: maxDepth, into: out)
            }
            if count + 1 - drop == 1 { return nil }      // maxDepth 1: the new revision alone
        }
        w.node(rev: newRev, parent: ci >= drop ? ci - drop + 1 : 0, flags: EncodedNodes.current, body: nil)
        return w.count
    }

    /// A tree with branches that needs pruning: RevTree's own add, prune and encode.
    private static func general(_ encoded: UnsafeBufferPointer<UInt8>, current: UnsafeBufferPointer<UInt8>,
                                currentBody: UnsafeBufferPointer<UInt8>?, newRev: UnsafeBufferPointer<UInt8>,
                                maxDepth: Int, into out: UnsafeMutableBufferPointer<UInt8>) throws -> Int? {
        guard let currentID = RevID(String(decoding: current, as: UTF8.self)),
              let newID = RevID(String(decoding: newRev, as: UTF8.self)) else {
            throw CBLError.internalError("invalid revision ID")
        }
        var (tree, ci) = try RevTree.decode(Array(encoded), current: currentID, currentDeleted: false, currentBody: currentBody.map(Array.init))
        if tree.index(of: newID) != nil { throw revisionExists(newRev) }
        tree.add(newID, parent: ci, deleted: false, body: nil)
        tree.prune(maxDepth: maxDepth)
        guard let bytes = tree.encode(omitBodyOf: tree.nodes.count - 1) else { return nil }   // the new revision stays last
        guard bytes.count <= out.count else { throw CBLError.internalError("revision tree grew while pruning") }
        bytes.withUnsafeBufferPointer { out.baseAddress!.update(from: $0.baseAddress!, count: $0.count) }
        return bytes.count
    }

    private static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }

    private static func revisionExists(_ rev: UnsafeBufferPointer<UInt8>) -> CBLError {
        CBLError.conflict("revision \(String(decoding: rev, as: UTF8.self)) already exists")
    }
}
