/// A page of hits, best first, and the bookmark that continues after it (nil when the
/// page is empty).
public struct FullTextSearchResults: Sendable {
    public let hits: [FullTextHit]
    public let bookmark: String?
}
