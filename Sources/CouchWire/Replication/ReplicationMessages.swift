import CBLiteBase

/// The replication protocol's messages as a replicator reads and writes them: `_changes`
/// rows, `_revs_diff`, `_bulk_get`, `_bulk_docs`, checkpoints. Sequences stay opaque
/// JSON values (CouchDB 2+ sends strings such as "12-g1AAAA…" that must be passed back
/// verbatim). The listener writes the same shapes from the engine (ReplicationJSON).
public enum ReplicationMessages {
    /// One row of a `_changes` feed: the document's leaf revisions (style=all_docs).
    public struct ChangeRow: Sendable {
        public let seq: JSONValue
        public let id: String
        public let revs: [String]
        public let deleted: Bool
    }

    /// A `_changes` response (normal or longpoll): its rows, `last_seq`, and `pending`
    /// (CouchDB 2+: how many changes follow the last row; nil when the peer does not say).
    public static func changes(_ body: [UInt8]) throws -> (rows: [ChangeRow], lastSeq: JSONValue?, pending: Int64?) {
        let o = try object(body, "_changes")
        guard let results = o["results"]?.arrayValue else { throw bad("_changes has no \"results\" array") }
        let rows = try results.map(changeRow)
        return (rows, o["last_seq"], o["pending"]?.intValue)
    }

    /// One line of a continuous feed: a row, or the feed's end with `last_seq`.
    public static func changeRow(_ v: JSONValue) throws -> ChangeRow {
        guard let r = v.objectValue, let id = r["id"]?.stringValue, let seq = r["seq"] else {
            throw bad("a _changes row without \"id\" or \"seq\"")
        }
        let revs = (r["changes"]?.arrayValue ?? []).compactMap { $0.objectValue?["rev"]?.stringValue }
        return ChangeRow(seq: seq, id: id, revs: revs, deleted: r["deleted"]?.boolValue == true)
    }

    /// `_revs_diff` request body.
    public static func revsDiffRequest(_ docs: [(id: String, revs: [String])]) -> [UInt8] {
        var o = JSONObject()
        for d in docs { o.members.append((d.id, .array(d.revs.map { .string($0) }))) }
        return JSONWriter.ordered(.object(o))
    }

    /// `_revs_diff` answer: per document, the missing revisions and possible ancestors.
    public static func revsDiffAnswer(_ body: [UInt8]) throws -> [String: (missing: [String], possibleAncestors: [String])] {
        let o = try object(body, "_revs_diff")
        var out: [String: (missing: [String], possibleAncestors: [String])] = [:]
        for (id, v) in o.members {
            guard let e = v.objectValue else { throw bad("a _revs_diff entry is not an object") }
            out[id] = (strings(e["missing"]), strings(e["possible_ancestors"]))
        }
        return out
    }

    /// `_bulk_get` request body (CouchDB's replicator's shape).
    public static func bulkGetRequest(_ docs: [(id: String, rev: String, attsSince: [String])]) -> [UInt8] {
        let items: [JSONValue] = docs.map { d in
            var o = JSONObject([("id", .string(d.id)), ("rev", .string(d.rev))])
            if !d.attsSince.isEmpty { o["atts_since"] = .array(d.attsSince.map { .string($0) }) }
            return .object(o)
        }
        return JSONWriter.ordered(.object(JSONObject([("docs", .array(items))])))
    }

    /// One result of `_bulk_get` or `open_revs`: a document, or an error for one revision.
    public enum FetchedRevision {
        case document(JSONObject)
        case error(id: String, rev: String?, status: Int, reason: String)
    }

    /// `_bulk_get` JSON answer: `{"results":[{"id","docs":[{"ok":doc}|{"error":{…}}]}]}`.
    /// One document that cannot be parsed makes the whole answer fail: the caller then
    /// fetches its documents one by one, so only that one is lost.
    public static func bulkGetAnswer(_ body: [UInt8]) throws -> [FetchedRevision] {
        let o = try object(body, "_bulk_get")
        guard let results = o["results"]?.arrayValue else { throw bad("_bulk_get has no \"results\" array") }
        var out: [FetchedRevision] = []
        for r in results {
            let id = r.objectValue?["id"]?.stringValue ?? ""
            for d in r.objectValue?["docs"]?.arrayValue ?? [] { out.append(fetched(d, id: id)) }
        }
        return out
    }

    /// An `open_revs` JSON answer: `[{"ok":doc}|{"missing":rev}]`.
    public static func openRevsAnswer(_ body: [UInt8], id: String) throws -> [FetchedRevision] {
        let v = try parse(body, "open_revs")
        guard let items = v.arrayValue else { throw bad("open_revs did not answer a list") }
        return items.map { fetched($0, id: id) }
    }

    /// A JSON part of a `multipart/mixed` `open_revs` answer: a document, `{"missing": rev}`,
    /// or an error. A document the engine's JSON rules refuse is that document's error.
    public static func fetchedPart(_ body: [UInt8], id: String) -> FetchedRevision {
        let v: JSONValue
        do { v = try body.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) } } catch {
            return .error(id: id, rev: nil, status: 400, reason: "the document cannot be stored: \(CBLError.wrapping(error).message)")
        }
        guard let o = v.objectValue else { return .error(id: id, rev: nil, status: 400, reason: "an open_revs part is not a JSON object") }
        if o["missing"] != nil || (o["error"] != nil && o["_id"] == nil) { return fetched(v, id: id) }
        return .document(o)
    }

    static func fetched(_ d: JSONValue, id: String) -> FetchedRevision {
        let o = d.objectValue ?? JSONObject()
        if let doc = o["ok"]?.objectValue { return .document(doc) }
        if let rev = o["missing"]?.stringValue { return .error(id: id, rev: rev, status: 404, reason: "the peer does not have this revision") }
        let e = o["error"]?.objectValue ?? o
        let reason = [e["error"]?.stringValue, e["reason"]?.stringValue].compactMap { $0 }.joined(separator: ": ")
        return .error(id: e["id"]?.stringValue ?? id, rev: e["rev"]?.stringValue, status: e["error"]?.stringValue == "not_found" ? 404 : 400,
                      reason: reason.isEmpty ? "the peer could not read it" : reason)
    }

    /// `_bulk_docs` with `new_edits: false`, from documents already in JSON.
    public static func bulkDocsRequest(_ docs: [[UInt8]]) -> [UInt8] {
        var w = JSONWriter(canonical: false, capacity: docs.reduce(64) { $0 + $1.count + 1 })
        w.append("{\"new_edits\":false,\"docs\":[")
        for (i, d) in docs.enumerated() {
            if i > 0 { w.appendByte(UInt8(ascii: ",")) }
            w.appendRaw(d)
        }
        w.append("]}")
        return w.bytes
    }

    /// `_bulk_docs` answer: the documents that failed (CouchDB lists only those when
    /// new_edits is false; entries with "ok" or a "rev" and no "error" are successes).
    public static func bulkDocsFailures(_ body: [UInt8]) throws -> [(id: String, rev: String?, error: String, reason: String)] {
        let v = try parse(body, "_bulk_docs")
        guard let items = v.arrayValue else { throw bad("_bulk_docs did not answer a list") }
        return items.compactMap { item in
            guard let o = item.objectValue, let error = o["error"]?.stringValue else { return nil }
            return (o["id"]?.stringValue ?? "", o["rev"]?.stringValue, error, o["reason"]?.stringValue ?? "")
        }
    }

    /// The `{"error","reason"}` of an error response, when it has one.
    public static func errorBody(_ body: [UInt8]) -> (error: String, reason: String)? {
        guard let o = try? object(body, "error"), let e = o["error"]?.stringValue else { return nil }
        return (e, o["reason"]?.stringValue ?? "")
    }

    // MARK: parsing

    public static func parse(_ body: [UInt8], _ what: String) throws -> JSONValue {
        do { return try body.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) } } catch let e as CBLError {
            throw CouchError(status: 502, error: "bad_gateway", reason: "the peer's \(what) answer is not valid JSON: \(e.message)")
        }
    }

    public static func object(_ body: [UInt8], _ what: String) throws -> JSONObject {
        guard let o = try parse(body, what).objectValue else { throw bad("the peer's \(what) answer is not an object") }
        return o
    }

    static func strings(_ v: JSONValue?) -> [String] { (v?.arrayValue ?? []).compactMap(\.stringValue) }

    static func bad(_ reason: String) -> CouchError { CouchError(status: 502, error: "bad_gateway", reason: reason) }
}
