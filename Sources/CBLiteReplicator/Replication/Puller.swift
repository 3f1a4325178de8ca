import CBLiteCore
import CouchWire

/// Pull: the peer's `_changes` (style=all_docs; longpoll when continuous) → the local
/// `revs_diff` → the missing revisions, through `_bulk_get` when the peer has it (with
/// attachments as stubs), else — and for revisions whose attachments this database
/// lacks — one by one through `open_revs` as `multipart/mixed`, attachments streamed
/// into the store (gzip-encoded ones decoded). Each batch is written in one transaction
/// and the checkpoint moves to the batch's last sequence only after it is.
///
/// A document the peer holds but this database cannot take (deeper than the JSON
/// limit, duplicate keys, a reserved `_…` ID) is reported as that document's error and
/// skipped; the rest of the batch and the replication go on, and the revision waits
/// in the checkpoint's failed list (FailedRevisions) to be tried again next session.
struct Puller {
    let task: ReplicationTask
    var local: Collection { task.local }
    var remote: RemoteDatabase { task.remote }
    var config: ReplicatorConfiguration { task.config }

    /// Per-document size limits for what a peer sends.
    static let maxDocumentBytes = 64 << 20
    static let maxAttachmentBytes = Int.max

    private var filter: RemoteDatabase.ChangesFilter {
        if let ids = config.docIDs { return .docIDs(ids) }
        if let s = config.selector { return .selector(s) }
        if let channels = config.channels {
            return .named("sync_gateway/bychannel", JSONObject([("channels", .string(channels.joined(separator: ",")))]))
        }
        if let f = config.pullFilter { return .named(f, config.pullFilterParams) }
        return .none
    }

    private var filtered: Bool {
        if case .none = filter { return false }
        return true
    }

    func run() throws {
        _ = try remote.info()
        let checkpointer = task.makeCheckpointer()
        var since: JSONValue?
        do { since = try checkpointer.read() } catch let e as CBLError { throw ReplicationError.local(e) }
        task.status { $0.activity = .busy }
        var caughtUp = false
        var useBulkGet = true
        // What failed before: the feed is past it, so it is asked for by name.
        if try task.retryFailed({ try pull($0, useBulkGet: &useBulkGet) }), let since {
            try checkpointer.save(since, stats: task.statsJSON)
        }
        while true {
            try task.checkStopped()
            let longpoll = config.continuous && caughtUp ? config.heartbeatMs : nil
            // Caught up: waiting on the peer's longpoll is idle, not busy.
            if longpoll != nil { task.status { $0.activity = .idle } }
            let (rows, lastSeq, peersPending) = try remote.changes(since: since, limit: config.batchSize, longpollMs: longpoll, filter: filter)
            try task.checkStopped()
            if rows.isEmpty {
                if let lastSeq, lastSeq != since {
                    since = lastSeq
                    try checkpointer.save(lastSeq, stats: task.statsJSON)
                }
                guard config.continuous else { return }
                caughtUp = true
                continue
            }
            // Progress: the peer's `pending` (CouchDB 2+) says how much follows this batch,
            // counted before any filter (CouchDB's count_changes_since): useless when filtered.
            let pending = filtered ? nil : peersPending
            task.status { s in
                s.activity = .busy
                s.total = max(s.total, s.completed + Int64(rows.count) + max(0, pending ?? 0))
            }
            try pull(rows, useBulkGet: &useBulkGet)
            let next = lastSeq ?? rows.last!.seq
            since = next
            try checkpointer.save(next, stats: task.statsJSON)
            task.status { $0.completed += Int64(rows.count); $0.total = max($0.total, $0.completed) }
            task.recovered()
            // Caught up: the peer says nothing is pending (a sharded CouchDB may answer
            // fewer rows than the limit with more to come), or, when it does not say, a
            // short batch.
            caughtUp = pending.map { $0 <= 0 } ?? (rows.count < config.batchSize)
            if caughtUp && !config.continuous { return }
        }
    }

    private func pull(_ rows: [ReplicationMessages.ChangeRow], useBulkGet: inout Bool) throws {
        // A feed may list a document twice (a continuous feed re-read): ask once.
        var revsByDoc: [(docID: String, revs: [String])] = []
        var position: [String: Int] = [:]
        for r in rows {
            if let i = position[r.id] { revsByDoc[i].revs += r.revs.filter { !revsByDoc[i].revs.contains($0) } } else {
                position[r.id] = revsByDoc.count
                revsByDoc.append((r.id, r.revs))
            }
        }
        try pull(revsByDoc, useBulkGet: &useBulkGet)
    }

    /// The revisions of `revsByDoc` this database lacks, fetched and written.
    private func pull(_ revsByDoc: [(docID: String, revs: [String])], useBulkGet: inout Bool) throws {
        task.stats.missingChecked += Int64(revsByDoc.reduce(0) { $0 + $1.revs.count })
        let diff: [RevsDiffResult]
        do { diff = try local.revsDiff(revsByDoc) } catch { throw ReplicationError.local(error) }
        var wanted: [(id: String, rev: String, attsSince: [String])] = []
        for d in diff { for rev in d.missing { wanted.append((d.docID, rev, d.possibleAncestors)) } }
        task.stats.missingFound += Int64(wanted.count)
        guard !wanted.isEmpty else { return }

        var events: [DocumentReplication] = []
        var toInsert: [Collection.ExistingRevision] = []
        var oneByOne: [(id: String, rev: String, attsSince: [String])] = []
        if useBulkGet, let answer = try remote.bulkGet(wanted) {
            let since = Dictionary(wanted.map { ($0.id, $0.attsSince) }, uniquingKeysWith: { a, _ in a })
            if let fetched = try? BulkGetShape.parseAnswer(answer) {
                for f in fetched {
                    switch f {
                    case .document(let doc):
                        let id = doc["_id"]?.stringValue ?? ""
                        if Puller.needsAttachmentContent(doc, attsSince: since[id] ?? []), let rev = doc["_rev"]?.stringValue {
                            oneByOne.append((id, rev, since[id] ?? []))
                        } else {
                            toInsert.append(Collection.ExistingRevision(body: doc))
                        }
                    case .error(let id, let rev, let status, let reason):
                        // An error that does not name its revision stands for each one asked for
                        // (so that each is kept for a retry).
                        for r in rev.map({ [$0] }) ?? wanted.filter({ $0.id == id }).map(\.rev) {
                            events.append(DocumentReplication(direction: .pull, docID: id, revID: r, deleted: false,
                                                              error: ReplicationError(httpStatus: status, message: reason, isTransient: false)))
                        }
                    }
                }
            } else {
                // One document the engine's JSON rules refuse spoils the batch's answer:
                // fetch each alone so only that one fails.
                oneByOne = wanted
            }
        } else {
            useBulkGet = false
            oneByOne = wanted
        }
        task.stats.docsRead += Int64(toInsert.count)
        for event in try insert(toInsert) {
            // A stub this database cannot resolve (a peer's revpos says it is older than what
            // is here, e.g. CouchDB's revpos 0 of an attachment given with new_edits=false):
            // the revision again with all of its attachments.
            if let rev = event.revID, event.error?.httpStatus == 412 { oneByOne.append((event.docID, rev, [])) } else { events.append(event) }
        }
        for w in oneByOne {
            try task.checkStopped()
            events += try fetchAndInsert(w.id, w.rev, attsSince: w.attsSince)
        }
        task.record(events)
    }

    /// Whether a `_bulk_get` document (attachments as stubs) names content this database
    /// may lack: a stub newer than every revision it has of the document.
    static func needsAttachmentContent(_ doc: JSONObject, attsSince: [String]) -> Bool {
        guard let atts = doc["_attachments"]?.objectValue, !atts.isEmpty else { return false }
        let known = attsSince.compactMap { RevID($0)?.generation }.max() ?? 0
        return atts.members.contains { m in
            guard let o = m.value.objectValue else { return true }
            if o["data"] != nil { return false }
            guard let revpos = o["revpos"]?.intValue else { return true }
            return revpos > known
        }
    }

    private func insert(_ revs: [Collection.ExistingRevision]) throws -> [DocumentReplication] {
        guard !revs.isEmpty else { return [] }
        let results: [WriteResult]
        do { results = try local.insertExistingRevisions(revs) } catch { throw ReplicationError.local(error) }
        return zip(revs, results).map { rev, r in
            DocumentReplication(direction: .pull, docID: r.docID, revID: r.revID, deleted: rev.body["_deleted"]?.boolValue == true,
                                error: r.error.map { ReplicationError(httpStatus: CouchError($0).status, message: $0.message, isTransient: false) })
        }
    }

    /// A revision fetched and written; when the peer left as a stub an attachment this
    /// database lacks (its revpos not after `attsSince`, as revpos 0 never is), fetched
    /// again with every attachment.
    private func fetchAndInsert(_ id: String, _ rev: String, attsSince: [String]) throws -> [DocumentReplication] {
        let events = try fetchAndInsertOnce(id, rev, attsSince: attsSince)
        guard !attsSince.isEmpty, events.contains(where: { $0.error?.httpStatus == 412 }) else { return events }
        return try fetchAndInsertOnce(id, rev, attsSince: [])
    }

    /// `GET /db/doc?open_revs=["rev"]&revs=true&latest=true&attachments=true&atts_since=…`
    /// as `multipart/mixed` (or the JSON list a peer may answer instead).
    private func fetchAndInsertOnce(_ id: String, _ rev: String, attsSince: [String]) throws -> [DocumentReplication] {
        var target = remote.url.documentPath(id) + "?revs=true&latest=true&attachments=true&open_revs="
            + PercentDecoding.encode(JSONValue.array([.string(rev)]).jsonString)
        if !attsSince.isEmpty { target += "&atts_since=" + PercentDecoding.encode(JSONValue.array(attsSince.map { .string($0) }).jsonString) }
        let response = try remote.send(.GET, target, accept: "multipart/mixed")
        defer { response.discard() }
        guard (200..<300).contains(response.status) else {
            let e = RemoteDatabase.error(status: response.status, body: (try? response.readAll(limit: 1 << 20)) ?? [], what: "open_revs of \"\(id)\"")
            if e.isTransient || e.httpStatus == 401 || e.httpStatus == 403 { throw e }
            return [DocumentReplication(direction: .pull, docID: id, revID: rev, deleted: false, error: e)]
        }
        let type = MediaType(response.header("Content-Type") ?? "")
        guard let type, type.type == "multipart/mixed", let boundary = type.parameter("boundary") else {
            let body = try response.readAll(limit: Puller.maxDocumentBytes)
            let fetched: [ReplicationMessages.FetchedRevision]
            do { fetched = try OpenRevsShape.parseAnswer(body, id: id) } catch let e as CouchError {
                return [DocumentReplication(direction: .pull, docID: id, revID: rev, deleted: false,
                                            error: ReplicationError(httpStatus: 400, message: e.reason, isTransient: false))]
            }
            var out: [DocumentReplication] = []
            for f in fetched {
                switch f {
                case .document(let doc): out += try insert([Collection.ExistingRevision(body: doc)])
                case .error(let id, let r, let status, let reason):
                    out.append(DocumentReplication(direction: .pull, docID: id, revID: r ?? rev, deleted: false,
                                                   error: ReplicationError(httpStatus: status, message: reason, isTransient: false)))
                }
            }
            return out
        }
        return try readMultipartRevisions(response, boundary: boundary, id: id, rev: rev)
    }

    /// Each part of a `multipart/mixed` answer: a JSON document (or `{"missing": rev}`), or
    /// a `multipart/related` document with its attachments.
    private func readMultipartRevisions(_ response: HTTPResponse, boundary: String, id: String, rev: String) throws -> [DocumentReplication] {
        var outer = try MultipartParser(boundary: boundary)
        var out: [DocumentReplication] = []
        enum Part { case json([UInt8]), related(MultipartParser, MultipartDocumentReader) }
        var part: Part? = nil
        var partError: String? = nil
        let coll = local

        func finishPart() throws {
            defer { part = nil; partError = nil }
            if let partError {
                out.append(DocumentReplication(direction: .pull, docID: id, revID: rev, deleted: false,
                                               error: ReplicationError(httpStatus: 400, message: partError, isTransient: false)))
                return
            }
            switch part {
            case .json(let bytes):
                switch OpenRevsShape.parsePart(bytes, id: id) {
                case .document(let doc): out += try insert([Collection.ExistingRevision(body: doc)])
                case .error(let eid, let r, let status, let reason):
                    // A part that does not parse names no revision: the one asked for.
                    out.append(DocumentReplication(direction: .pull, docID: eid, revID: r ?? rev, deleted: false,
                                                   error: ReplicationError(httpStatus: status, message: reason, isTransient: false)))
                }
            case .related(let inner, let reader):
                do {
                    try inner.finish()
                    let (doc, atts) = try reader.finish()
                    out += try insert([Collection.ExistingRevision(body: doc, attachments: atts)])
                } catch let e as CouchError {
                    out.append(DocumentReplication(direction: .pull, docID: id, revID: rev, deleted: false,
                                                   error: ReplicationError(httpStatus: e.status, message: e.reason, isTransient: false)))
                }
            case nil: break
            }
        }

        func handle(_ event: MultipartParser.Event) throws {
            switch event {
            case .partBegin(let headers):
                let t = MediaType(headers["Content-Type"] ?? "application/json")
                if let t, t.type == "multipart/related", let b = t.parameter("boundary") {
                    part = .related(try MultipartParser(boundary: b),
                                    MultipartDocumentReader(maxDocumentBytes: Puller.maxDocumentBytes, maxAttachmentBytes: Puller.maxAttachmentBytes,
                                                            makeWriter: coll.makeAttachmentWriter))
                } else {
                    part = .json([])
                }
            case .body(let bytes):
                guard partError == nil else { return }
                switch part {
                case .json(var b):
                    b += bytes
                    if b.count > Puller.maxDocumentBytes { partError = "the document exceeds \(Puller.maxDocumentBytes) bytes"; part = .json([]) }
                    else { part = .json(b) }
                case .related(var inner, let reader):
                    do {
                        for e in try inner.feed(bytes) { try reader.handle(e) }
                        part = .related(inner, reader)
                    } catch let e as CouchError { partError = e.reason } catch let e as MultipartError { partError = "\(e)" }
                case nil: break
                }
            case .partEnd:
                try finishPart()
            case .end:
                break
            }
        }

        do {
            while let chunk = try response.next() {
                for e in try outer.feed(chunk) { try handle(e) }
            }
            try outer.finish()
        } catch let e as MultipartError {
            throw ReplicationError.protocolViolation("open_revs of \"\(id)\": \(e)")
        }
        return out
    }
}
