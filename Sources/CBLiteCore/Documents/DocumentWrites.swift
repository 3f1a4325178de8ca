/// Saving revisions: new revisions on a parent, tombstones, purge (revisions made
/// elsewhere: RevisionExchange/ExistingRevisions.swift). Each write is one row write plus one sequence
///, inside Store.write (its own transaction or a savepoint).
extension Collection {
    public struct SaveResult: Sendable { public let docID: String; public let revID: String }

    /// Saves a new revision. See cbl_doc_put in include/cblite.h for the rules.
    /// `givenIDWins`: CouchDB's REST rule — the URL's ID names the document and an `_id` in
    /// the body is ignored (cbl_doc_put's rule, without it: they must match).
    public func put(docID givenID: String?, body bodyBytes: UnsafeBufferPointer<UInt8>, parent givenParent: String?,
                    allowConflict: Bool = false, givenIDWins: Bool = false) throws -> SaveResult {
        try check()
        var body = try DocumentBody.parse(bytes: bodyBytes)     // parsed before taking the lock
        if givenIDWins && givenID != nil { body.docID = nil }
        return try put(docID: givenID, body: &body, parent: givenParent, allowConflict: allowConflict)
    }

    public func put(docID givenID: String?, json: String, parent givenParent: String?, allowConflict: Bool = false) throws -> SaveResult {
        var copy = json
        return try copy.withUTF8 { try put(docID: givenID, body: $0, parent: givenParent, allowConflict: allowConflict) }
    }

    func put(docID givenID: String?, body: inout DocumentBody, parent givenParent: String?, allowConflict: Bool) throws -> SaveResult {
        if let givenID, let bodyID = body.docID, bodyID != givenID {
            throw CBLError.badRequest("\"_id\" in the body (\(bodyID)) differs from the document ID (\(givenID))")
        }
        let docID = givenID ?? body.docID ?? FileSystem.uuid()
        try DocumentBody.validateDocID(docID)
        try storeInlineAttachments(&body)                      // Blobs/: before taking the lock
        var parent: RevID? = nil
        if let givenParent {
            guard let p = RevID(givenParent) else { throw CBLError.badRequest("invalid parent revision ID \"\(givenParent)\"") }
            if let r = body.rev, r != p { throw CBLError.badRequest("\"_rev\" in the body differs from the parent revision") }
            parent = p
        } else {
            parent = body.rev
        }
        let content = body
        let rev: RevID = try mapMissingTable {
            try store.write(savepoint: false, timeoutMs: database.busyTimeoutMs) { conn, txn in
                try saveNew(conn, txn, docID: docID, body: content, parent: parent, allowConflict: allowConflict)
            }
        }
        return SaveResult(docID: docID, revID: rev.string)
    }

    /// Writes a tombstone on `parent` (nil: the current revision).
    public func delete(docID: String, parent: String?) throws -> String {
        try check()
        try DocumentBody.validateDocID(docID)
        var parentRev: RevID? = nil
        if let parent {
            guard let p = RevID(parent) else { throw CBLError.badRequest("invalid revision ID \"\(parent)\"") }
            parentRev = p
        }
        let body = DocumentBody(canonical: Array("{}".utf8), deleted: true)
        let rev: RevID = try mapMissingTable {
            try store.write(savepoint: false, timeoutMs: database.busyTimeoutMs) { conn, txn in
                guard let row = try docStore.row(conn, docID: docID) else {
                    throw CBLError.notFound("document \"\(docID)\" does not exist")
                }
                let target = parentRev ?? row.revID
                // Any leaf may be deleted (that is how a losing conflict is resolved); a
                // tombstone cannot be deleted again, and an inner revision is a conflict.
                let (tree, _) = try row.tree()
                guard let index = tree.index(of: target) else {
                    throw CBLError.conflict("revision \(target) of \"\(docID)\" is unknown")
                }
                if tree.nodes[index].deleted { throw CBLError.notFound("document \"\(docID)\" is already deleted") }
                guard tree.isLeaf(index) else {
                    throw CBLError.conflict("document update conflict: \(target) is not a current revision of \"\(docID)\"")
                }
                return try saveNew(conn, txn, docID: docID, body: body, parent: target, allowConflict: true, row: row)
            }
        }
        return rev.string
    }

    /// Read-modify-write with retry on conflict. `update` gets the current JSON (nil when
    /// absent or deleted) and returns the new body, or nil to cancel (409).
    public func update(docID: String, maxAttempts: Int = 1000, _ update: (String?) throws -> String?) throws -> String {
        try check()
        try DocumentBody.validateDocID(docID)
        for _ in 0..<maxAttempts {
            let current = try mapMissingTable {
                try store.read { conn in try docStore.row(conn, docID: docID) }
            }
            let live = current.flatMap { $0.deleted ? nil : $0 }
            let currentJSON = live.map { String(decoding: $0.json(), as: UTF8.self) }
            guard let newJSON = try update(currentJSON) else { throw CBLError.conflict("update cancelled") }
            var body = try DocumentBody.parse(newJSON)
            body.rev = nil          // the parent is the revision the callback saw
            body.docID = nil
            do {
                return try put(docID: docID, body: &body, parent: live?.revID.string, allowConflict: false).revID
            } catch let e as CBLError where e.status == .conflict {
                continue
            }
        }
        throw CBLError.conflict("update of \"\(docID)\" kept conflicting after \(maxAttempts) attempts")
    }

    /// Removes every trace of a document.
    public func purge(docID: String) throws {
        try check()
        try DocumentBody.validateDocID(docID)
        try mapMissingTable {
            try store.write(savepoint: false, timeoutMs: database.busyTimeoutMs) { conn, txn in try purgeRow(conn, txn, docID: docID) }
        }
    }

    /// CouchDB's `_purge`: removes the given leaves and the ancestors no other leaf
    /// shares; purging every leaf removes the document. Unknown and non-leaf revisions
    /// are ignored. Returns the leaves purged, as CouchDB reports them (their removed
    /// ancestors go unnamed). The request joins the purge history (PurgeHistory), as
    /// CouchDB's do, whatever it removed.
    public func purge(docID: String, revs: [String]) throws -> [String] {
        try check()
        try DocumentBody.validateDocID(docID)
        let wanted = Set(revs.compactMap(RevID.init))
        return try mapMissingTable {
            try store.write(timeoutMs: database.busyTimeoutMs) { conn, txn in
                try PurgeHistory.record(conn, collectionID: id, docID: docID, revs: revs)
                guard let row = try docStore.row(conn, docID: docID) else { return [] }
                var (tree, current) = try row.tree()
                let purgedLeaves = tree.leafIndexes.filter { wanted.contains(tree.nodes[$0].rev) }
                guard !purgedLeaves.isEmpty else { return [] }
                var keep = [Bool](repeating: false, count: tree.nodes.count)
                for leaf in tree.leafIndexes where !purgedLeaves.contains(leaf) {
                    for i in tree.ancestry(of: leaf) { keep[i] = true }
                }
                let purged = purgedLeaves.map { tree.nodes[$0].rev.string }
                if !keep.contains(true) {
                    try purgeRow(conn, txn, docID: docID)
                    return purged
                }
                tree.retain(keep)          // the winner may change: storeTree picks it again
                try storeTree(conn, txn, docID: docID, tree: tree, oldRow: row, oldCurrent: current,
                              hasAttachments: row.flags.contains(.hasAttachments), external: false)
                return purged
            }
        }
    }

    func purgeRow(_ conn: Connection, _ txn: TransactionState, docID: String) throws {
        guard let row = try docStore.row(conn, docID: docID) else {
            throw CBLError.notFound("document \"\(docID)\" does not exist")
        }
        try docStore.delete(conn, docID: docID)
        noteWrite(docID, txn)
        try ViewIndexRegistry.documentPurged(conn, collectionID: id, docID: docID)
        try PurgeLog.record(conn, collectionID: id, docID: docID, sequence: row.sequence, origin: store.origin)
        try txn.adjustCount(id, by: row.deleted ? 0 : -1, conn)
        txn.changes.append(ChangeEvent(collectionID: id, docID: docID, revID: "", sequence: row.sequence,
                                       deleted: true, external: false))
    }

    // MARK: the shared save path

    /// Adds a new revision (computing its ID) on `parent`, or creates the document.
    private func saveNew(_ conn: Connection, _ txn: TransactionState, docID: String, body: DocumentBody,
                         parent: RevID?, allowConflict: Bool, row preloaded: DocumentRow? = nil) throws -> RevID {
        if parent == nil && preloaded == nil {
            // Creating: try the insert first; an existing row (live or tombstone) is rare.
            let body = try withResolvedAttachments(body, docID: docID, parent: nil, docHasAttachments: false, generation: 1)   // Blobs/
            let rev = RevID.make(parent: nil, deleted: body.deleted, canonicalBody: try Attachments.revisionDigestBody(body))
            if mustValidate(docID) {
                if let row = try docStore.row(conn, docID: docID) {
                    return try saveOnExisting(conn, txn, docID: docID, body: body, parent: nil, allowConflict: allowConflict, row: row)
                }
                try validate(conn, txn, docID: docID, tree: RevTree(single: rev, deleted: body.deleted, body: body.canonical),
                             newIndex: 0, row: nil, oldIndex: nil)
            }
            let countDelta: Int64 = body.deleted ? 0 : 1
            let meta = try txn.meta(id, conn)
            let seq = meta.lastSeq + 1
            var flags: DocFlags = body.deleted ? [.deleted] : []
            if body.hasAttachments { flags.insert(.hasAttachments) }
            do {
                try docStore.insertFirst(conn, docID: docID, sequence: seq, flags: flags, revID: rev, body: body.canonical)
            } catch let e as CBLError where e.status == .conflict {
                guard let row = try docStore.row(conn, docID: docID) else { throw e }
                return try saveOnExisting(conn, txn, docID: docID, body: body, parent: nil, allowConflict: allowConflict, row: row)
            }
            _ = try txn.nextSequence(id, countDelta: countDelta, conn)
            noteWrite(docID, txn)
            txn.changes.append(ChangeEvent(collectionID: id, docID: docID, revID: rev.string, sequence: seq,
                                           deleted: body.deleted, external: false))
            return rev
        }
        if preloaded == nil, let parent, let rev = try appendOnCurrent(conn, txn, docID: docID, body: body, parent: parent) {
            return rev
        }
        let row = try preloaded ?? docStore.row(conn, docID: docID)
        guard let row else { throw CBLError.notFound("document \"\(docID)\" does not exist (parent revision \(parent!) is unknown)") }
        return try saveOnExisting(conn, txn, docID: docID, body: body, parent: parent, allowConflict: allowConflict, row: row)
    }

    /// The common update — an undeleted revision without attachments on the current
    /// revision of a live document without attachments, no validators — as one statement
    /// (DocumentStore.appendOnCurrent): what saveOnExisting and storeTree would do, without
    /// reading the row first. nil when it does not apply; the general path then decides
    /// (a conflict, a deleted or missing document, attachments to inherit, a damaged tree).
    private func appendOnCurrent(_ conn: Connection, _ txn: TransactionState, docID: String, body: DocumentBody,
                                 parent: RevID) throws -> RevID? {
        guard canAppendOnCurrent(body, docID: docID), !generalPathDocuments.contains(docID) else { return nil }
        let rev = RevID.make(parent: parent, deleted: false, canonicalBody: body.canonical)
        let seq = try txn.meta(id, conn).lastSeq + 1
        do {
            guard try docStore.appendOnCurrent(conn, docID: docID, parent: parent, revID: rev, body: body.canonical,
                                               sequence: seq, maxDepth: try txn.maxDepth(conn)) else { return nil }
        } catch let e as CBLError where e.detail == RevTreeAppendFunction.failureCode {
            return nil
        }
        _ = try txn.nextSequence(id, countDelta: 0, conn)       // live before and after
        noteWrite(docID, txn)
        txn.changes.append(ChangeEvent(collectionID: id, docID: docID, revID: rev.string, sequence: seq,
                                       deleted: false, external: false))
        return rev
    }

    /// Whether a save of `body` may take the one-statement path (the row decides the rest).
    private func canAppendOnCurrent(_ body: DocumentBody, docID: String) -> Bool {
        !body.deleted && body.attachments == nil && !mustValidate(docID)
    }

    /// Whether a write of `docID` must pass `validate`: a validator may apply, or it is a
    /// design document, which is checked as it is written whether or not any validator exists.
    private func mustValidate(_ docID: String) -> Bool { hasValidation() || docID.hasPrefix("_design/") }

    private func saveOnExisting(_ conn: Connection, _ txn: TransactionState, docID: String, body: DocumentBody,
                                parent: RevID?, allowConflict: Bool, row: DocumentRow) throws -> RevID {
        if parent != nil, row.flags.contains(.hasAttachments), canAppendOnCurrent(body, docID: docID) {
            generalPathDocuments.insert(docID)       // its next updates would be refused too: skip the attempt
        }
        var (tree, current) = try row.tree()
        let parentIndex: Int
        if let parent {
            if parent == row.revID {
                parentIndex = current
            } else if allowConflict {
                guard let p = tree.index(of: parent) else {
                    throw CBLError.notFound("revision \(parent) of \"\(docID)\" is unknown")
                }
                parentIndex = p
            } else {
                throw CBLError.conflict("document update conflict: \(parent) is not the current revision of \"\(docID)\"")
            }
        } else {
            // No parent: allowed only on a deleted document (re-creation extends the tombstone).
            guard row.deleted else { throw CBLError.conflict("document \"\(docID)\" already exists") }
            parentIndex = current
        }
        let body = try withResolvedAttachments(body, docID: docID, parent: tree.nodes[parentIndex], docHasAttachments: row.flags.contains(.hasAttachments),
                                               generation: tree.nodes[parentIndex].rev.generation + 1)   // Blobs/
        let rev = RevID.make(parent: tree.nodes[parentIndex].rev, deleted: body.deleted,
                             canonicalBody: try Attachments.revisionDigestBody(body))   // Blobs/
        if tree.index(of: rev) != nil {
            throw CBLError.conflict("revision \(rev) of \"\(docID)\" already exists")
        }
        let newIndex = tree.add(rev, parent: parentIndex, deleted: body.deleted, body: body.canonical)
        // CouchDB's oldDoc: the revision replaced; none when re-creating on a tombstone.
        try validate(conn, txn, docID: docID, tree: tree, newIndex: newIndex, row: row, oldIndex: parent == nil ? nil : parentIndex)
        try storeTree(conn, txn, docID: docID, tree: tree, oldRow: row, oldCurrent: current,
                      hasAttachments: body.hasAttachments, external: false)
        return rev
    }

    /// The native validators (they see the current revision), then the design documents'
    /// validate_doc_update (they see revision `oldIndex`).
    func validate(_ conn: Connection, _ txn: TransactionState, docID: String, tree: RevTree, newIndex: Int,
                  row: DocumentRow?, oldIndex: Int?) throws {
        if docID.hasPrefix("_design/"), !tree.nodes[newIndex].deleted, let body = tree.nodes[newIndex].body {
            try DesignDocumentCheck.check(try body.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0, what: "design document") })
        }
        if store.validators.hasValidators(id) {
            let n = tree.nodes[newIndex]
            try store.validators.validate(
                collectionID: id,
                newJSON: { String(decoding: DocumentJSON.render(docID: docID, rev: n.rev.string, deleted: n.deleted, body: n.body), as: UTF8.self) },
                currentJSON: { row.flatMap { $0.deleted ? nil : String(decoding: $0.json(), as: UTF8.self) } })
        }
        if store.designValidators.mayHave(id) {
            try validateWithDesignDocuments(conn, txn, docID: docID, tree: tree, newIndex: newIndex, oldIndex: oldIndex)
        }
    }

    /// Prunes, picks the winner, and writes the row with a new sequence.
    func storeTree(_ conn: Connection, _ txn: TransactionState, docID: String, tree: RevTree,
                           oldRow: DocumentRow?, oldCurrent: Int?, hasAttachments: Bool, external: Bool) throws {
        var tree = tree
        tree.prune(maxDepth: try txn.maxDepth(conn))
        let leaves = tree.leafIndexes       // once: the winner and the conflict flag both need them
        guard let w = tree.winner(among: leaves) else { throw CBLError.internalError("revision tree of \"\(docID)\" has no leaf") }
        let winner = tree.nodes[w]
        var flags: DocFlags = winner.deleted ? [.deleted] : []
        if leaves.lazy.filter({ !tree.nodes[$0].deleted }).count > 1 { flags.insert(.conflicted) }   // conflictingLeaves.count, unsorted
        if hasAttachments || (oldRow?.flags.contains(.hasAttachments) ?? false) { flags.insert(.hasAttachments) }
        let wasLive = oldRow.map { !$0.deleted } ?? false
        let countDelta = Int64(winner.deleted ? 0 : 1) - Int64(wasLive ? 1 : 0)
        let seq = try txn.meta(id, conn).lastSeq + 1      // taken only once the row is written
        let encoded = tree.encode(omitBodyOf: w)
        try docStore.write(conn, docID: docID, replacing: oldRow?.sequence, sequence: seq, flags: flags, revID: winner.rev,
                            body: winner.body, tree: encoded)
        _ = try txn.nextSequence(id, countDelta: countDelta, conn)
        noteWrite(docID, txn)
        txn.changes.append(ChangeEvent(collectionID: id, docID: docID, revID: winner.rev.string, sequence: seq,
                                       deleted: winner.deleted, external: external))
    }
}
