import CBLiteBase

/// CouchDB's `_revisions` form of a revision history, `{"start": N, "ids": [digest, ...]}`
/// (newest first, generations N, N-1, ...), and the list form `["N-digest", ...]`.
public enum CouchRevisions {
    /// `{"start","ids"}` for a history given newest first. Histories whose generations
    /// are not consecutive are cut at the first gap (CouchDB cannot express a gap).
    public static func revisionsObject(_ history: [String]) -> JSONObject? {
        guard let first = history.first, let top = RevID(first) else { return nil }
        var ids: [JSONValue] = []
        for (i, r) in history.enumerated() {
            guard let rev = RevID(r), rev.generation == top.generation - i else { break }
            ids.append(.string(rev.digest))
        }
        return JSONObject([("start", .int(Int64(top.generation))), ("ids", .array(ids))])
    }

    /// The list form of a `_revisions` value, newest first. 400 for anything malformed.
    public static func revIDs(_ value: JSONValue) throws -> [String] {
        guard let o = value.objectValue, let start = o["start"]?.intValue, let ids = o["ids"]?.arrayValue else {
            throw CBLError(.badRequest, "_revisions must be {\"start\": number, \"ids\": [strings]}")
        }
        guard start >= Int64(ids.count), start > 0, !ids.isEmpty else {
            throw CBLError(.badRequest, "_revisions.start must be at least the number of ids")
        }
        return try ids.enumerated().map { i, v in
            guard let digest = v.stringValue, !digest.isEmpty else {
                throw CBLError(.badRequest, "_revisions.ids must be non-empty strings")
            }
            return "\(start - Int64(i))-\(digest)"
        }
    }
}
