import CBLiteCore
import CouchWire

/// Push: local changes since the checkpoint → the peer's `_revs_diff` → the missing
/// revisions with their history, in `_bulk_docs` (`new_edits: false`), except revisions
/// with attachments the peer lacks, which go one by one as `multipart/related` PUTs
/// with only those attachments (CouchDB's own replicator does the same).
struct Pusher {
    let task: ReplicationTask
    var local: Collection { task.local }
    var remote: RemoteDatabase { task.remote }
    var config: ReplicatorConfiguration { task.config }

    static func changesOptions(_ config: ReplicatorConfiguration, limit: Int) -> ChangesOptions {
        var o = ChangesOptions()
        o.allRevs = true
        o.limit = Int64(limit)
        o.docIDs = config.docIDs
        o.filter = config.filter
        o.filterParams = config.filterParams
        o.selector = config.selector.flatMap { try? Selector($0) }     // validated with the configuration
        return o
    }

    func run() throws {
        if config.createTarget { try remote.create() }
        _ = try remote.info()
        let checkpointer = task.makeCheckpointer()
        var since: Int64
        do { since = try checkpointer.read()?.intValue ?? 0 } catch let e as CBLError { throw ReplicationError.local(e) }
        let options = Pusher.changesOptions(config, limit: config.batchSize)
        try countRemaining(since: since, options)
        task.status { $0.activity = .busy }
        // What failed before: the feed is past it, so it is offered by name.
        if try task.retryFailed({ docs in try push(docs.map { ChangeEntry(sequence: 0, docID: $0.docID, revs: $0.revs, deleted: false) }) }) {
            try checkpointer.save(.int(since), stats: task.statsJSON)
        }
        while true {
            try task.checkStopped()
            let (entries, last) = try local.changesPage(since: since, options: options)
            if entries.isEmpty {
                if last > since { since = last; try checkpointer.save(.int(since), stats: task.statsJSON) }
                guard config.continuous else { return }
                task.status { $0.activity = .idle }
                while try !local.waitForChanges(after: since, timeoutMs: 250) { try task.checkStopped() }
                try countRemaining(since: since, options)
                task.status { $0.activity = .busy }
                continue
            }
            try push(entries)
            since = last
            try checkpointer.save(.int(since), stats: task.statsJSON)
            task.status { $0.completed += Int64(entries.count); $0.total = max($0.total, $0.completed) }
            task.recovered()
        }
    }

    /// Progress: what is left to examine, counted before the batches go.
    private func countRemaining(since: Int64, _ options: ChangesOptions) throws {
        let remaining = try local.changeCount(since: since, options: options)
        task.status { $0.total = max($0.total, $0.completed + remaining) }
    }

    private func push(_ entries: [ChangeEntry]) throws {
        task.stats.missingChecked += Int64(entries.reduce(0) { $0 + $1.revs.count })
        let diff = try remote.revsDiff(entries.map { ($0.docID, $0.revs) })
        var bulk: [[UInt8]] = []
        var bulkEvents: [DocumentReplication] = []
        var events: [DocumentReplication] = []
        for entry in entries {
            guard let d = diff[entry.docID] else { continue }
            for rev in d.missing {
                task.stats.missingFound += 1
                var o = RevisionOptions()
                o.revisions = true
                o.attachments = .follows
                o.attsSince = d.possibleAncestors
                o.couchDigests = true              // the peer checks the parts by CouchDB's MD5
                let revision: Revision
                do {
                    revision = try local.revision(docID: entry.docID, revID: rev, options: o)
                } catch let e as CBLError where e.status == .notFound {
                    // Compacted or purged since the feed was read: nothing to send.
                    continue
                }
                task.stats.docsRead += 1
                if revision.followingAttachments.isEmpty {
                    bulk.append(revision.json)
                    bulkEvents.append(DocumentReplication(direction: .push, docID: revision.docID, revID: revision.revID, deleted: revision.deleted, error: nil))
                } else {
                    events.append(try putMultipart(revision))
                }
            }
        }
        if !bulk.isEmpty {
            let failures = try remote.bulkDocs(bulk)
            var failed: [String: ReplicationError] = [:]
            for f in failures {
                failed[f.id + "\u{0}" + (f.rev ?? "")] = ReplicationError(httpStatus: f.error == "forbidden" ? 403 : f.error == "unauthorized" ? 401 : 400,
                                                                       message: "\(f.error): \(f.reason)", isTransient: false)
            }
            for ev in bulkEvents {
                let e = failed[ev.docID + "\u{0}" + (ev.revID ?? "")] ?? failed[ev.docID + "\u{0}"]
                events.append(DocumentReplication(direction: .push, docID: ev.docID, revID: ev.revID, deleted: ev.deleted, error: e))
            }
        }
        task.record(events)
    }

    /// `PUT /db/doc?new_edits=false` as `multipart/related`, attachments streamed from the store.
    private func putMultipart(_ revision: Revision) throws -> DocumentReplication {
        var mp = MultipartWriter()
        let body = MultipartDocumentWriter(revision, writer: &mp)
        let coll = local
        let response = try remote.send(.PUT, remote.url.documentPath(revision.docID) + "?new_edits=false",
                                       body: .stream(length: body.length, write: { sink in try body.write(openBlob: coll.openBlob, to: sink) }),
                                       contentType: mp.contentType("related"))
        let bytes = try response.readAll(limit: 1 << 20)
        var error: ReplicationError? = nil
        if !(200..<300).contains(response.status) {
            let e = RemoteDatabase.error(status: response.status, body: bytes, what: "PUT \(revision.docID)")
            // A failure of the peer as a whole (5xx, auth) stops the batch; a refusal of this document is its own.
            if e.isTransient || e.httpStatus == 401 { throw e }
            error = ReplicationError(httpStatus: e.httpStatus, message: e.message, isTransient: false)
        }
        return DocumentReplication(direction: .push, docID: revision.docID, revID: revision.revID, deleted: revision.deleted, error: error)
    }
}
