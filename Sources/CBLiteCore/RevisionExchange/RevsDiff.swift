/// `_revs_diff`: which of a peer's revisions this collection lacks, and for those, which
/// local leaves could be their ancestors (so the peer can send only what is new:
/// attachments since those, history down to them).
extension Collection {
    /// One result per document that has at least one missing revision, in request order.
    /// A malformed revision ID, and every revision of a document ID this collection cannot
    /// hold (a reserved `_…` one other than `_design/…`), is reported missing: the peer
    /// then fails to send that one document (CouchDB's replicator counts a write failure
    /// and goes on). A 400
    /// for the whole request, as before, made CouchDB's replicator fail the whole batch,
    /// again at every retry, because of one such document.
    public func revsDiff(_ request: [(docID: String, revs: [String])]) throws -> [RevsDiffResult] {
        try check()
        return try mapMissingTable {
            try store.read { conn in
                var out: [RevsDiffResult] = []
                for (docID, revs) in request {
                    let holdable = (try? DocumentBody.validateDocID(docID)) != nil
                    let tree = holdable ? try docStore.row(conn, docID: docID).map { try $0.tree().0 } : nil
                    var missing: [String] = []
                    var seen = Set<String>()
                    var maxMissingGen = 0
                    for given in revs {
                        // In RevID's form (a 32-hex-digit digest lower-cased), as CouchDB answers.
                        let parsed = RevID(given)
                        let rev = parsed?.string ?? given
                        guard seen.insert(rev).inserted else { continue }
                        if let tree, let parsed, tree.index(of: parsed) != nil { continue }
                        missing.append(rev)
                        maxMissingGen = max(maxMissingGen, parsed?.generation ?? 0)
                    }
                    guard !missing.isEmpty else { continue }
                    var ancestors: [String] = []
                    if let tree {
                        ancestors = tree.leafIndexes.map { tree.nodes[$0].rev }
                            .filter { $0.generation < maxMissingGen }.sorted(by: >).map(\.string)
                    }
                    out.append(RevsDiffResult(docID: docID, missing: missing, possibleAncestors: ancestors))
                }
                return out
            }
        }
    }
}
