import CBLiteBase

/// What a replicator reads from a peer besides the shapes' own answers (each shape's
/// `requestBody`/`parseAnswer` is in its `*Shape` file, beside the peer's side): `_changes`
/// rows, fetched revisions, error bodies. Sequences stay opaque JSON values (CouchDB 2+
/// sends strings such as "12-g1AAAA…" that must be passed back verbatim).
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

    /// One result of `_bulk_get` or `open_revs`: a document, or an error for one revision.
    public enum FetchedRevision {
        case document(JSONObject)
        case error(id: String, rev: String?, status: Int, reason: String)
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

    /// The `{"error","reason"}` of an error response, when it has one.
    public static func errorBody(_ body: [UInt8]) -> (error: String, reason: String)? {
        guard let o = try? object(body, "error"), let e = o["error"]?.stringValue else { return nil }
        return (e, o["reason"]?.stringValue ?? "")
    }

    // MARK: parsing

    /// A peer's answer, read to JSONParser.messageDepth (`_bulk_get` holds documents five
    /// levels down; each is held to the document limit when it is stored).
    public static func parse(_ body: [UInt8], _ what: String) throws -> JSONValue {
        do {
            return try body.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0, depthLimit: JSONParser.messageDepth) }
        } catch let e as CBLError {
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
