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
