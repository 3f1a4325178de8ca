import CBLiteCore
import CouchWire
import NIOHTTP1

/// `_changes`: feeds normal, longpoll, continuous and eventsource, with CouchDB's
/// parameters. Waiting feeds block a worker on the engine's change signal (no polling)
/// in slices, so a client that leaves or a listener that stops ends them promptly; a
/// closing database ends them at once (ServedDatabase).
extension Router {
    private struct FeedParameters {
        var feed = "normal"
        var since: Int64 = 0
        var options = ChangesOptions()
        var heartbeatMs: Int?
        var timeoutMs = 60_000
        /// How include_docs documents show their attachments.
        var docOptions = RevisionOptions()
    }

    func changes(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD, .POST])
        let (coll, hold) = try databases.collectionAndHold(name)
        defer { hold.feedEnded(req.cancellation) }
        var p = try feedParameters(coll, req)
        switch p.feed {
        case "normal", "longpoll":
            // The first scan finds bad parameters (an unknown filter) while an error status
            // can still be sent; then the head goes out at once (as CouchDB), so a longpoll
            // client sees the response start while the feed waits.
            // The normal feed's ETag follows the database's state, as CouchDB's (made from its info).
            let etag = p.feed == "normal" ? try changesETag(coll) : nil
            if let etag, req.header("If-None-Match") == etag { return res.send(status: 304, headers: [("ETag", etag)], body: []) }
            var rows = try scan(coll, &p)
            res.begin(status: 200, headers: etag.map { [("ETag", $0)] } ?? [])
            try res.write(ChangesWriter.normalHeader)
            try res.flush()
            if rows.isEmpty && p.feed == "longpoll" && !p.options.descending {
                req.cancellation.isFeed = true
                hold.feedStarted(req.cancellation)
                let deadline = MonotonicTime.now().milliseconds + Int64(p.timeoutMs)
                var lastWrite = MonotonicTime.now().milliseconds
                while rows.isEmpty, !req.cancellation.isCancelled {
                    let left = deadline - MonotonicTime.now().milliseconds
                    if left <= 0 { break }
                    if try coll.waitForChanges(after: p.since, timeoutMs: Int(min(left, 1000))) { rows = try scan(coll, &p) }
                    // Heartbeat newlines (whitespace inside the JSON, as CouchDB sends them)
                    // keep proxies from timing out, and a write is what finds a client that
                    // hung up: the connection is not read while a request is handled.
                    if rows.isEmpty, let hb = p.heartbeatMs, MonotonicTime.now().milliseconds - lastWrite >= Int64(hb) {
                        try res.write(ChangesWriter.heartbeat)
                        try res.flush()
                        lastWrite = MonotonicTime.now().milliseconds
                    }
                }
            }
            for (i, r) in rows.enumerated() {
                try res.write((i > 0 ? ChangesWriter.normalSeparator : []) + ChangesWriter.row(r))
            }
            // "pending": the sequences after the last one examined — exact for an unfiltered
            // feed, an upper bound with filters (O(1), where counting would scan the rest).
            let pending = p.options.descending ? 0 : max(0, ((try? coll.lastSequence) ?? 0) - p.since)
            try res.write(ChangesWriter.normalFooter(lastSeq: p.since, pending: pending))
        case "continuous", "eventsource":
            let events = p.feed == "eventsource"
            var firstRows: [ChangeEntry]? = try scan(coll, &p)     // errors before the head
            res.begin(status: 200, contentType: events ? "text/event-stream; charset=utf-8" : "application/json")
            req.cancellation.isFeed = true
            hold.feedStarted(req.cancellation)
            var emitted: Int64 = 0
            var idleSince = MonotonicTime.now().milliseconds
            while !req.cancellation.isCancelled {
                let rows = try firstRows ?? scan(coll, &p)
                firstRows = nil
                for r in rows {
                    try res.write(events ? ChangesWriter.event(r) : ChangesWriter.continuousLine(r))
                    emitted += 1
                    if p.options.limit >= 0 && emitted >= p.options.limit { break }
                }
                if !rows.isEmpty { try res.flush(); idleSince = MonotonicTime.now().milliseconds }
                if p.options.limit >= 0 && emitted >= p.options.limit { break }
                if p.options.descending { break }
                let slice = min(p.heartbeatMs ?? p.timeoutMs, 1000)
                let changed: Bool
                do { changed = try coll.waitForChanges(after: p.since, timeoutMs: slice) } catch { break }   // the database closed
                if changed { continue }
                let idle = MonotonicTime.now().milliseconds - idleSince
                if let hb = p.heartbeatMs {
                    if idle >= Int64(hb) {
                        try res.write(events ? ChangesWriter.eventHeartbeat() : ChangesWriter.heartbeat)
                        try res.flush()
                        idleSince = MonotonicTime.now().milliseconds
                    }
                } else if idle >= Int64(p.timeoutMs) {
                    break
                }
            }
            if !events { try? res.write(ChangesWriter.continuousEnd(lastSeq: p.since)) }
        default:
            throw CouchError.badRequest("Supported `feed` types: normal, continuous, live, longpoll, eventsource")
        }
    }

    private func changesETag(_ coll: Collection) throws -> String {
        CouchETag.make([try coll.database.uuid, String(try coll.lastSequence), String(try coll.purgeSequence)])
    }

    /// The rows after `p.since`; advances `p.since` past everything scanned.
    private func scan(_ coll: Collection, _ p: inout FeedParameters) throws -> [ChangeEntry] {
        // Everything up to this sequence is covered by the scan unless a limit cuts it.
        let upTo = try coll.lastSequence
        let rows = try coll.changes(since: p.since, options: p.options).map { r in
            try r.doc.map { ChangeEntry(sequence: r.sequence, docID: r.docID, revs: r.revs, deleted: r.deleted,
                                        doc: try couchDocument(coll, $0, p.docOptions)) } ?? r
        }
        if p.options.descending {
            p.since = rows.first?.sequence ?? upTo
        } else if p.options.limit >= 0 && Int64(rows.count) >= p.options.limit {
            p.since = rows.last?.sequence ?? p.since
        } else {
            p.since = max(rows.last?.sequence ?? p.since, upTo)
        }
        return rows
    }

    private func feedParameters(_ coll: Collection, _ req: Request) throws -> FeedParameters {
        let q = req.query
        var p = FeedParameters()
        var body = JSONObject()
        if req.method == .POST {
            let bytes = try req.body.readAll(limit: limits.maxBodyBytes)
            if !bytes.isEmpty { body = try parseObject(bytes) }
        }
        p.feed = q["feed"] ?? "normal"
        if p.feed == "live" { p.feed = "continuous" }           // CouchDB's other name for it
        // An EventSource client resumes from the last event it saw.
        let lastEventID = p.feed == "eventsource" ? try req.header("Last-Event-ID").map { try Since($0) } : nil
        switch try q.since() ?? body["since"].map({ try Since(json: $0) }) ?? lastEventID ?? .sequence(0) {
        case .now: p.since = try coll.lastSequence
        case .sequence(let n): p.since = n
        }
        p.options.limit = try q.nonNegativeInt("limit") ?? -1
        if p.options.limit == 0 { p.options.limit = 1 }            // CouchDB treats limit=0 as 1
        p.options.descending = try q.bool("descending", default: false)
        p.options.includeDocs = try q.bool("include_docs", default: false)
        p.docOptions = try includedDocumentOptions(req)
        switch q["style"] ?? "main_only" {
        case "main_only": break
        case "all_docs": p.options.allRevs = true
        default: throw CouchError.badRequest("Supported `style` values: main_only, all_docs")
        }
        if let hb = q["heartbeat"] {
            if hb == "true" { p.heartbeatMs = 60_000 } else if hb != "false" {
                guard let n = Int(hb) else {
                    throw CouchError.badRequest("Invalid heartbeat value. Expecting a positive integer value (in milliseconds).")
                }
                guard n > 0 else { throw CouchError.badRequest("The heartbeat value should be a positive integer (in milliseconds).") }
                p.heartbeatMs = n
            }
        }
        if let t = try q.nonNegativeInt("timeout") { p.timeoutMs = Int(min(t, 24 * 3600 * 1000)) }
        if let filter = q["filter"] {
            switch filter {
            case "_doc_ids":
                let ids = try q.stringArray("doc_ids") ?? body["doc_ids"].map { v -> [String] in
                    guard let a = v.arrayValue, a.allSatisfy({ $0.stringValue != nil }) else {
                        throw CouchError.badRequest("`doc_ids` filter parameter is not a list of doc ids.")
                    }
                    return a.compactMap(\.stringValue)
                }
                guard let ids else { throw CouchError.badRequest("filter=_doc_ids needs doc_ids") }
                p.options.docIDs = ids
            case "_view" where q["view"] == nil:
                throw CouchError.badRequest("`view` filter parameter is not provided.")
            case "_selector":
                guard req.method == .POST else { throw CouchError.badRequest("Selector must be specified in POST payload") }
                guard let sel = body["selector"], sel.objectValue != nil else {
                    throw CouchError.badRequest("Selector error: expected a JSON object")
                }
                do { p.options.selector = try Selector(sel) } catch let e as MangoError {
                    throw CouchError.badRequest("Selector error: \(e.reason)")
                }
            default:
                // A filter registered by name through the API, a design document's
                // ("ddoc/name"), `_design` or `_view`; its parameters are the query's.
                p.options.filter = filter
                var params = JSONObject()
                for (k, v) in q.items { params[k] = .string(v) }
                for (k, v) in body.members { params[k] = v }
                p.options.filterParams = params
            }
        } else if q.has("doc_ids") || body["doc_ids"] != nil {
            throw CouchError.badRequest("doc_ids needs filter=_doc_ids")
        }
        return p
    }
}
