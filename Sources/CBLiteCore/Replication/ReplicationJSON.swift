/// The JSON forms of the replication surface's requests and results. They are CouchDB's
/// own shapes (`_revs_diff`, `_bulk_docs`, `open_revs`, `_bulk_get`), so the C ABI, the
/// Python bindings and the listener all pass and return the same text, read and written
/// here once.
extension Status {
    /// CouchDB's `"error"` name for a status.
    public var couchErrorName: String {
        switch self {
        case .ok: return "ok"
        case .badRequest: return "bad_request"
        case .unauthorized: return "unauthorized"
        case .forbidden: return "forbidden"
        case .notFound: return "not_found"
        case .notAcceptable: return "not_acceptable"
        case .conflict: return "conflict"
        case .preconditionFailed: return "file_exists"
        case .internalError: return "internal_server_error"
        case .notImplemented: return "not_implemented"
        case .busy: return "service_unavailable"
        }
    }
}

extension CBLError {
    /// `{"error": name, "reason": message}` members (CouchDB's error body).
    public var couchMembers: [(key: String, value: JSONValue)] {
        [("error", .string(status.couchErrorName)), ("reason", .string(message))]
    }
}

extension Collection {
    // MARK: _revs_diff

    /// `{"docid": ["rev", ...], ...}`.
    public static func revsDiffRequest(_ json: UnsafeBufferPointer<UInt8>) throws -> [(docID: String, revs: [String])] {
        let o = try JSONParser.parseObject(bytes: json, what: "revs_diff request")
        return try o.members.map { docID, revs in
            (docID, try revs.stringArrayOption("revs_diff: the revisions of \(docID)"))
        }
    }

    /// `{"docid": {"missing": [...], "possible_ancestors": [...]}, ...}` (no
    /// possible_ancestors member when there are none, as CouchDB).
    public static func revsDiffJSON(_ results: [RevsDiffResult]) -> [UInt8] {
        JSONWriter.ordered(.object(JSONObject(results.map { r in
            var entry = JSONObject([("missing", .array(r.missing.map(JSONValue.string)))])
            if !r.possibleAncestors.isEmpty { entry["possible_ancestors"] = .array(r.possibleAncestors.map(JSONValue.string)) }
            return (r.docID, .object(entry))
        })))
    }

    // MARK: _bulk_docs

    /// `[doc, ...]` or `{"docs": [doc, ...]}`: the documents as objects.
    public static func bulkDocsRequest(_ json: UnsafeBufferPointer<UInt8>) throws -> [JSONObject] {
        let v = try JSONParser.parse(bytes: json)
        guard let docs = v.arrayValue ?? v.objectValue?["docs"]?.arrayValue else {
            throw CBLError.badRequest("bulk docs: expected an array of documents or {\"docs\": [...]}")
        }
        return try docs.enumerated().map { i, d in
            guard let o = d.objectValue else { throw CBLError.badRequest("bulk docs: item \(i) is not an object") }
            return o
        }
    }

    /// `[{"ok":true,"id","rev"} | {"id","rev","error","reason"}, ...]` (CouchDB's
    /// `_bulk_docs` answer; `new_edits=false` callers keep only the errors).
    public static func writeResultsJSON(_ results: [WriteResult], errorsOnly: Bool = false) -> [UInt8] {
        let items: [JSONValue] = results.compactMap { r in
            var o = JSONObject([("id", .string(r.docID))])
            if let rev = r.revID { o["rev"] = .string(rev) }
            if let e = r.error {
                o.members += e.couchMembers
            } else {
                if errorsOnly { return nil }
                o.members.insert(("ok", .bool(true)), at: 0)
            }
            return .object(o)
        }
        return JSONWriter.ordered(.array(items))
    }

    // MARK: reads

    /// `{"revs","latest","attachments","atts_since","conflicts","deleted_conflicts",
    /// "revs_info","local_seq","follows"}` (CouchDB's query parameter names).
    public static func revisionOptions(json: String?) throws -> RevisionOptions {
        var o = RevisionOptions()
        guard let json else { return o }
        var attachments = false, follows = false
        for (k, v) in try JSONParser.parseObject(json, what: "options").members {
            switch k {
            case "revs": o.revisions = try v.boolOption(k)
            case "latest": o.latest = try v.boolOption(k)
            case "attachments": attachments = try v.boolOption(k)
            case "follows": follows = try v.boolOption(k)
            case "atts_since": o.attsSince = try v.stringArrayOption(k)
            case "conflicts": o.conflicts = try v.boolOption(k)
            case "deleted_conflicts": o.deletedConflicts = try v.boolOption(k)
            case "revs_info": o.revsInfo = try v.boolOption(k)
            case "local_seq": o.localSeq = try v.boolOption(k)
            default: throw CBLError.badRequest("unknown option \"\(k)\"")
            }
        }
        o.attachments = !attachments ? .stubs : (follows ? .follows : .inline)
        return o
    }

    /// `["rev", ...]` or `"all"`/null (every leaf).
    public static func openRevsRequest(_ json: String?) throws -> [String]? {
        guard let json else { return nil }
        let v = try JSONParser.parse(json)
        if v.isNull || v.stringValue == "all" { return nil }
        return try v.stringArrayOption("open_revs")
    }

    /// `[{"ok": doc} | {"missing": rev}, ...]`.
    public static func openRevsJSON(_ results: [OpenRevsResult]) -> [UInt8] {
        var w = JSONWriter(canonical: false, capacity: 256)
        w.appendByte(UInt8(ascii: "["))
        for (i, r) in results.enumerated() {
            if i > 0 { w.appendByte(UInt8(ascii: ",")) }
            writeOpenRev(r, into: &w)
        }
        w.appendByte(UInt8(ascii: "]"))
        return w.bytes
    }

    private static func writeOpenRev(_ r: OpenRevsResult, into w: inout JSONWriter) {
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

    /// `{"docs": [{"id", "rev"?, "atts_since"?}, ...]}`.
    public static func bulkGetRequest(_ json: UnsafeBufferPointer<UInt8>) throws -> [BulkGetRequest] {
        let o = try JSONParser.parseObject(bytes: json, what: "bulk_get request")
        guard let docs = o["docs"]?.arrayValue else { throw CBLError.badRequest("bulk_get: expected {\"docs\": [...]}") }
        return try docs.enumerated().map { i, d in
            guard let e = d.objectValue, let id = e["id"]?.stringValue else {
                throw CBLError.badRequest("bulk_get: item \(i) needs an \"id\" string")
            }
            let rev = try e["rev"].map { v -> String in
                guard let s = v.stringValue else { throw CBLError.badRequest("bulk_get: item \(i): \"rev\" must be a string") }
                return s
            }
            return BulkGetRequest(id: id, rev: rev, attsSince: try e["atts_since"].map { try $0.stringArrayOption("atts_since") })
        }
    }

    /// `{"results": [{"id", "docs": [{"ok": doc} | {"error": {"id","rev","error","reason"}}]}]}`
    /// (CouchDB's `_bulk_get`: a missing revision is an error entry there).
    public static func bulkGetJSON(_ items: [BulkGetItem]) -> [UInt8] {
        var w = JSONWriter(canonical: false, capacity: 256)
        w.append("{\"results\":[")
        for (i, item) in items.enumerated() {
            if i > 0 { w.appendByte(UInt8(ascii: ",")) }
            w.append("{\"id\":")
            w.writeString(item.id)
            w.append(",\"docs\":[")
            func writeError(rev: String?, _ e: CBLError) {
                w.append("{\"error\":")
                w.write(.object(JSONObject([("id", .string(item.id)), ("rev", .string(rev ?? "undefined"))] + e.couchMembers)))
                w.appendByte(UInt8(ascii: "}"))
            }
            if let e = item.error {
                writeError(rev: item.rev, CBLError(e.status, e.status == .notFound ? "missing" : e.message))
            }
            for (j, r) in item.results.enumerated() {
                if j > 0 { w.appendByte(UInt8(ascii: ",")) }
                if case .missing(let rev) = r { writeError(rev: rev, CBLError(.notFound, "missing")) } else { writeOpenRev(r, into: &w) }
            }
            w.append("]}")
        }
        w.append("]}")
        return w.bytes
    }

    // MARK: local documents

    /// `[{"id": local_id, "rev": "0-n"}, ...]`, by ID; with `includeDocs` each has its `doc`.
    /// The IDs are bare (as cbl_local_list documents them): the listener adds `_local/`.
    public func localDocumentsJSON(includeDocs: Bool) throws -> [UInt8] {
        JSONWriter.ordered(.array(try localDocuments().map { d in
            var o = JSONObject([("id", .string(d.id)), ("rev", .string(d.rev))])
            if includeDocs { o["doc"] = try d.json.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) } }
            return .object(o)
        }))
    }
}
