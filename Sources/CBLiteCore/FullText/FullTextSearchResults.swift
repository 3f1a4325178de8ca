/// A page of hits, best first, and the bookmark that continues after it (nil when the
/// page is empty).
public struct FullTextSearchResults: Sendable {
    public let hits: [FullTextHit]
    public let bookmark: String?
}

extension FullTextSearchResults {
    /// {"hits": [hit JSON...], "bookmark": ...|null}
    public var json: JSONValue {
        .object(JSONObject([("hits", .array(hits.map(\.json))), ("bookmark", bookmark.map { .string($0) } ?? .null)]))
    }
}
