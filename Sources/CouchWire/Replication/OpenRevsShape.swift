import CBLiteBase

/// `open_revs` as a peer answers it in JSON (the listener's `GET /db/doc?open_revs=…`
/// without multipart, and the C ABI's `cbl_doc_open_revs`).
public enum OpenRevsShape {
    /// `["rev", ...]`, or `"all"`/null/absent for every leaf (nil).
    public static func request(json: String?) throws -> [String]? {
        guard let json else { return nil }
        let v = try JSONParser.parse(json)
        if v.isNull || v.stringValue == "all" { return nil }
        return try v.stringArrayOption("open_revs")
    }

    /// `[{"ok": doc} | {"missing": rev}, ...]`.
    public static func answer(_ results: [OpenRevsResult]) -> [UInt8] {
        var w = JSONWriter(canonical: false, capacity: 256)
        w.appendByte(UInt8(ascii: "["))
        for (i, r) in results.enumerated() {
            if i > 0 { w.appendByte(UInt8(ascii: ",")) }
            write(r, into: &w)
        }
        w.appendByte(UInt8(ascii: "]"))
        return w.bytes
    }

    /// `{"ok": doc}` or `{"missing": rev}`.
    public static func write(_ r: OpenRevsResult, into w: inout JSONWriter) {
        switch r {
        case .ok(let rev):
            w.append("{\"ok\":")
            w.appendRaw(rev.json)
            w.appendByte(UInt8(ascii: "}"))
        case .missing(let rev):
            w.append("{\"missing\":")
            w.writeString(rev)
            w.appendByte(UInt8(ascii: "}"))
        }
    }

    /// `{"missing": rev}` alone: a multipart `open_revs` answer's part for a missing revision.
    public static func missing(_ rev: String) -> [UInt8] {
        var w = JSONWriter(canonical: false)
        write(.missing(rev), into: &w)
        return w.bytes
    }
}

// MARK: the replicator's side

extension OpenRevsShape {
    /// An `open_revs` JSON answer: `[{"ok":doc}|{"missing":rev}]`.
    public static func parseAnswer(_ body: [UInt8], id: String) throws -> [ReplicationMessages.FetchedRevision] {
        let v = try ReplicationMessages.parse(body, "open_revs")
        guard let items = v.arrayValue else { throw ReplicationMessages.bad("open_revs did not answer a list") }
        return items.map { ReplicationMessages.fetched($0, id: id) }
    }

    /// A JSON part of a `multipart/mixed` `open_revs` answer: a document, `{"missing": rev}`,
    /// or an error. A document the engine's JSON rules refuse is that document's error.
    public static func parsePart(_ body: [UInt8], id: String) -> ReplicationMessages.FetchedRevision {
        let v: JSONValue
        do { v = try body.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) } } catch {
            return .error(id: id, rev: nil, status: 400, reason: "the document cannot be stored: \(CBLError.wrapping(error).message)")
        }
        guard let o = v.objectValue else { return .error(id: id, rev: nil, status: 400, reason: "an open_revs part is not a JSON object") }
        if o["missing"] != nil || (o["error"] != nil && o["_id"] == nil) { return ReplicationMessages.fetched(v, id: id) }
        return .document(o)
    }
}
