/// A document's revision tree: every kept revision with its parent, deletion flag and
/// body (while kept). Stored in the document's row in a compact binary form; the
/// current revision's body lives in the row's `body` column instead, so reading a
/// document never decodes the tree.
public struct RevTree: Sendable {
    public struct Node: Sendable {
        public var rev: RevID
        public var parent: Int?          // index into nodes
        public var deleted: Bool
        public var body: [UInt8]?        // canonical JSON without metadata; nil once dropped
    }

    public private(set) var nodes: [Node] = []

    public init() {}

    /// A tree of one revision (a new document).
    public init(single rev: RevID, deleted: Bool, body: [UInt8]?) {
        nodes = [Node(rev: rev, parent: nil, deleted: deleted, body: body)]
    }

    public var isEmpty: Bool { nodes.isEmpty }

    public func index(of rev: RevID) -> Int? { nodes.firstIndex { $0.rev == rev } }

    public func isLeaf(_ i: Int) -> Bool { !nodes.contains { $0.parent == i } }

    public var leafIndexes: [Int] {
        var hasChild = [Bool](repeating: false, count: nodes.count)
        for n in nodes { if let p = n.parent { hasChild[p] = true } }
        return nodes.indices.filter { !hasChild[$0] }
    }

    /// The seeds' winner: the undeleted leaf of highest generation, else the deleted leaf
    /// of highest generation; ties to the higher revision ID in CouchDB's order (RevID's <),
    /// so CouchDB, PouchDB and every cblite peer pick the same one.
    public var winner: Int? { winner(among: leafIndexes) }

    /// The winner among `leaves` (this tree's leafIndexes, computed once by a caller that
    /// needs them for more than the winner).
    public func winner(among leaves: [Int]) -> Int? {
        leaves.max { a, b in
            let na = nodes[a], nb = nodes[b]
            if na.deleted != nb.deleted { return na.deleted }   // undeleted wins
            return na.rev < nb.rev
        }
    }

    /// Undeleted leaves, the winner first, then by descending revision ID.
    public var conflictingLeaves: [Int] {
        let w = winner
        return leafIndexes.filter { !nodes[$0].deleted }.sorted { a, b in
            if a == w { return true }
            if b == w { return false }
            return nodes[b].rev < nodes[a].rev
        }
    }

    /// The revision and its ancestors, newest first.
    public func ancestry(of i: Int) -> [Int] {
        var out = [i]
        var cur = nodes[i].parent
        while let c = cur, out.count <= nodes.count {
            out.append(c)
            cur = nodes[c].parent
        }
        return out
    }

    /// Adds a revision; returns its index.
    @discardableResult
    public mutating func add(_ rev: RevID, parent: Int?, deleted: Bool, body: [UInt8]?) -> Int {
        nodes.append(Node(rev: rev, parent: parent, deleted: deleted, body: body))
        return nodes.count - 1
    }


    /// Keeps only revisions within `maxDepth` of some leaf (a leaf is at depth 1), so each
    /// branch keeps at most `maxDepth` revisions. Returns how many were removed.
    @discardableResult
    public mutating func prune(maxDepth: Int) -> Int {
        guard nodes.count > maxDepth else { return 0 }
        var keep = [Bool](repeating: false, count: nodes.count)
        for leaf in leafIndexes {
            var cur: Int? = leaf
            var depth = 0
            while let c = cur, depth < maxDepth {
                keep[c] = true
                depth += 1
                cur = nodes[c].parent
            }
        }
        return retain(keep)
    }

    /// Keeps the nodes whose flag is set (parents of kept nodes that are dropped become
    /// nil: the node is a root). Returns how many were removed.
    @discardableResult
    public mutating func retain(_ keep: [Bool]) -> Int {
        guard keep.contains(false) else { return 0 }
        var newIndex = [Int?](repeating: nil, count: nodes.count)
        var kept: [Node] = []
        for (i, n) in nodes.enumerated() where keep[i] {
            newIndex[i] = kept.count
            kept.append(n)
        }
        for i in kept.indices {
            if let p = kept[i].parent { kept[i].parent = newIndex[p] ?? nil }
        }
        let removed = nodes.count - kept.count
        nodes = kept
        return removed
    }

    /// Drops the bodies of non-leaf revisions (compaction). Returns how many were dropped.
    @discardableResult
    public mutating func dropAncestorBodies() -> Int {
        var hasChild = [Bool](repeating: false, count: nodes.count)
        for n in nodes { if let p = n.parent { hasChild[p] = true } }
        var dropped = 0
        for i in nodes.indices where hasChild[i] && nodes[i].body != nil {
            nodes[i].body = nil
            dropped += 1
        }
        return dropped
    }

    /// Checks the structure: parents in range, no cycles, unique IDs, a child's
    /// generation above its parent's. Returns problems found.
    public func validate() -> [String] {
        var problems: [String] = []
        var seen = Set<RevID>()
        for (i, n) in nodes.enumerated() {
            if !seen.insert(n.rev).inserted { problems.append("duplicate revision \(n.rev)") }
            if let p = n.parent {
                if p < 0 || p >= nodes.count || p == i { problems.append("revision \(n.rev) has an invalid parent"); continue }
                if nodes[p].rev.generation >= n.rev.generation {
                    problems.append("revision \(n.rev) is not newer than its parent \(nodes[p].rev)")
                }
            }
        }
        if problems.isEmpty {
            for i in nodes.indices where ancestry(of: i).count > nodes.count { problems.append("cycle at \(nodes[i].rev)") }
        }
        return problems
    }

    // MARK: encoding

    /// Encodes every node; the body of `omitBodyOf` (the current revision, stored in its
    /// own column) is left out. A tree of one bodiless-or-current node encodes as nil.
    public func encode(omitBodyOf current: Int) -> [UInt8]? {
        if nodes.count == 1 && current == 0 { return nil }
        var capacity = EncodedNodesWriter.headerCapacity
        for (i, n) in nodes.enumerated() {
            capacity += EncodedNodesWriter.nodeCapacity(revCount: n.rev.utf8Count, bodyCount: i == current ? 0 : n.body?.count ?? 0)
        }
        return [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            var w = EncodedNodesWriter(buffer)
            w.header(nodeCount: nodes.count)
            for (i, n) in nodes.enumerated() {
                let body = i == current ? nil : n.body
                let flags = (n.deleted ? EncodedNodes.deleted : 0) | (body != nil ? EncodedNodes.hasBody : 0)
                    | (i == current ? EncodedNodes.current : 0)
                var rev = n.rev.string
                rev.withUTF8 { revBytes in
                    if let body {
                        body.withUnsafeBufferPointer { w.node(rev: revBytes, parent: n.parent.map { $0 + 1 } ?? 0, flags: flags, body: $0) }
                    } else {
                        w.node(rev: revBytes, parent: n.parent.map { $0 + 1 } ?? 0, flags: flags, body: nil)
                    }
                }
            }
            initialized = w.count
        }
    }

    /// Decodes a stored tree; `nil` bytes mean the single current revision.
    public static func decode(_ bytes: [UInt8]?, current: RevID, currentDeleted: Bool, currentBody: [UInt8]?) throws -> (RevTree, Int) {
        guard let bytes else {
            return (RevTree(single: current, deleted: currentDeleted, body: currentBody), 0)
        }
        var tree = RevTree()
        var currentIndex: Int?
        try bytes.withUnsafeBufferPointer { buf in
            var r = try EncodedNodes(buf)
            tree.nodes.reserveCapacity(r.count)
            for i in 0..<r.count {
                let n = try r.next()
                guard let rev = RevID(String(decoding: n.rev, as: UTF8.self)) else {
                    throw CBLError.internalError("corrupt revision ID in tree")
                }
                var body = n.body.map { Array($0) }
                if n.flags & EncodedNodes.current != 0 { currentIndex = i; body = currentBody }
                tree.nodes.append(Node(rev: rev, parent: n.parent == 0 ? nil : n.parent - 1,
                                       deleted: n.flags & EncodedNodes.deleted != 0, body: body))
            }
        }
        guard let ci = currentIndex, tree.nodes[ci].rev == current else {
            throw CBLError.internalError("revision tree does not contain the current revision \(current)")
        }
        return (tree, ci)
    }
}

/// The stored tree's nodes, read in order from borrowed bytes: the one reader of the
/// format, for RevTree.decode and for RevTreeAppend (which copies nodes without
/// decoding them). The format: 1, node count, then per node: revision ID length and
/// bytes, parent (1-based, 0 for a root), flags, [body length and bytes]; lengths and
/// numbers are LEB128 varints. EncodedNodesWriter is its one writer.
struct EncodedNodes {
    static let deleted: UInt8 = 1, hasBody: UInt8 = 2, current: UInt8 = 4

    struct Node {
        let rev: UnsafeBufferPointer<UInt8>
        let parent: Int                 // 1-based; 0 for a root
        let flags: UInt8
        let body: UnsafeBufferPointer<UInt8>?
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var pos = 0
    /// How many nodes the tree has.
    private(set) var count = 0

    /// Reads the header; throws when the bytes are not a tree of this format.
    init(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        self.bytes = bytes
        guard try byte() == 1 else { throw CBLError.internalError("unknown revision tree format") }
        count = try int()
        guard count > 0, count <= bytes.count else { throw CBLError.internalError("corrupt revision tree") }
    }

    /// The next node (call it `count` times).
    mutating func next() throws -> Node {
        let rev = try take(try int())
        let parent = try int()
        guard parent <= count else { throw CBLError.internalError("corrupt revision tree parent") }
        let flags = try byte()
        let body = flags & EncodedNodes.hasBody != 0 ? try take(try int()) : nil
        return Node(rev: rev, parent: parent, flags: flags, body: body)
    }

    private mutating func byte() throws -> UInt8 {
        guard pos < bytes.count else { throw CBLError.internalError("truncated revision tree") }
        defer { pos += 1 }
        return bytes[pos]
    }

    /// A varint that must fit the bytes there are (a damaged length is an error, not a trap).
    private mutating func int() throws -> Int {
        var v: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            v |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { break }
            shift += 7
            guard shift < 64 else { throw CBLError.internalError("corrupt varint") }
        }
        guard v <= UInt64(Int32.max) else { throw CBLError.internalError("corrupt revision tree length") }
        return Int(v)
    }

    private mutating func take(_ n: Int) throws -> UnsafeBufferPointer<UInt8> {
        guard pos + n <= bytes.count else { throw CBLError.internalError("truncated revision tree") }
        defer { pos += n }
        return UnsafeBufferPointer(rebasing: bytes[pos..<(pos + n)])
    }
}

/// Writes the format EncodedNodes reads, into memory of a size bounded beforehand with
/// `headerCapacity` and `nodeCapacity`: the one writer, for RevTree.encode and for
/// RevTreeAppend (which writes into SQLite's result buffer).
struct EncodedNodesWriter {
    /// The most bytes the header takes: the format byte and the node count.
    static let headerCapacity = 1 + 10

    /// The most bytes a node takes: its ID and body, three varints of 10 bytes at most, flags.
    static func nodeCapacity(revCount: Int, bodyCount: Int) -> Int { revCount + bodyCount + 3 * 10 + 1 }

    private let out: UnsafeMutableBufferPointer<UInt8>
    private(set) var count = 0

    init(_ out: UnsafeMutableBufferPointer<UInt8>) { self.out = out }

    mutating func header(nodeCount: Int) {
        byte(1)  // format version
        varint(UInt64(nodeCount))
    }

    /// One node: rev, parent (1-based, 0 for a root), flags, and the body when the flags say so.
    mutating func node(rev: UnsafeBufferPointer<UInt8>, parent: Int, flags: UInt8, body: UnsafeBufferPointer<UInt8>?) {
        varint(UInt64(rev.count))
        raw(rev)
        varint(UInt64(parent))
        byte(flags)
        if flags & EncodedNodes.hasBody != 0, let body {
            varint(UInt64(body.count))
            raw(body)
        }
    }

    private mutating func byte(_ b: UInt8) {
        out[count] = b
        count += 1
    }

    private mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            byte(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        byte(UInt8(v))
    }

    private mutating func raw(_ b: UnsafeBufferPointer<UInt8>) {
        guard let src = b.baseAddress, b.count > 0 else { return }
        (out.baseAddress! + count).update(from: src, count: b.count)
        count += b.count
    }
}
