import CBLiteBase

/// `_revs_diff` as a peer answers it (the listener and the C ABI's `cbl_collection_revs_diff`).
public enum RevsDiffShape {
    /// `{"docid": ["rev", ...], ...}`.
    public static func request(_ body: JSONObject) throws -> [(docID: String, revs: [String])] {
        try body.members.map { id, v in
            guard let a = v.arrayValue else { throw CBLError.badRequest("each document must map to a list of revision IDs") }
            let revs = a.compactMap(\.stringValue)
            guard revs.count == a.count else { throw CBLError.badRequest("each document must map to a list of revision IDs") }
            return (id, revs)
        }
    }

    /// `{"docid": {"missing": [...], "possible_ancestors": [...]}, ...}` (no
    /// `possible_ancestors` member when there are none, as CouchDB).
    public static func answer(_ results: [RevsDiffResult]) -> [UInt8] {
        JSONWriter.ordered(.object(JSONObject(results.map { r in
            var entry = JSONObject([("missing", .array(r.missing.map(JSONValue.string)))])
            if !r.possibleAncestors.isEmpty { entry["possible_ancestors"] = .array(r.possibleAncestors.map(JSONValue.string)) }
            return (r.docID, .object(entry))
        })))
    }
}

/// `_missing_revs` (CouchDB 1.x's `_revs_diff`, still served and used by older clients):
/// the same request, answered `{"missing_revs": {"docid": ["rev", ...]}}` for the
/// documents that miss some.
public enum MissingRevsShape {
    public static func answer(_ results: [RevsDiffResult]) -> [UInt8] {
        let missing = results.filter { !$0.missing.isEmpty }.map { ($0.docID, JSONValue.array($0.missing.map(JSONValue.string))) }
        return JSONWriter.ordered(.object(JSONObject([("missing_revs", .object(JSONObject(missing)))])))
    }
}

// MARK: the replicator's side

extension RevsDiffShape {
    /// `_revs_diff` request body.
    public static func requestBody(_ docs: [(id: String, revs: [String])]) -> [UInt8] {
        var o = JSONObject()
        for d in docs { o.members.append((d.id, .array(d.revs.map { .string($0) }))) }
        return JSONWriter.ordered(.object(o))
    }

    /// `_revs_diff` answer: per document, the missing revisions and possible ancestors.
    public static func parseAnswer(_ body: [UInt8]) throws -> [String: (missing: [String], possibleAncestors: [String])] {
        let o = try ReplicationMessages.object(body, "_revs_diff")
        var out: [String: (missing: [String], possibleAncestors: [String])] = [:]
        for (id, v) in o.members {
            guard let e = v.objectValue else { throw ReplicationMessages.bad("a _revs_diff entry is not an object") }
            out[id] = (ReplicationMessages.strings(e["missing"]), ReplicationMessages.strings(e["possible_ancestors"]))
        }
        return out
    }
}
