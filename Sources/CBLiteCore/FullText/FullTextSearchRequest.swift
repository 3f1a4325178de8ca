/// A full-text search: the query text (FullTextQuery's syntax), optionally limited to
/// some of the index's fields, combined with a Mango selector on the same documents, paged.
public struct FullTextSearchRequest: Sendable {
    public var query: String
    /// The fields unscoped terms must match in (nil: any of the index's fields).
    public var fields: [String]?
    /// Documents must also match it (Mango's matcher; evaluated on each hit's document).
    public var selector: Selector?
    public var limit: Int?
    public var skip: Int
    /// A previous page's `bookmark`: the results go on after its last hit.
    public var bookmark: String?
    /// Each hit carries its document's JSON.
    public var includeDocs: Bool
    /// nil: hits carry no snippets.
    public var snippets: FullTextSnippetStyle?
    /// The query is in Lucene's syntax (FullTextQuery(lucene:…)): CouchDB's `$text` and Nouveau.
    public var lucene = false
    /// Hits ordered by value fields instead of relevance (then by relevance); paged by
    /// `skip` (a bookmark continues a relevance order only).
    public var sort: [FullTextSort] = []

    public init(query: String, fields: [String]? = nil, selector: Selector? = nil, limit: Int? = nil, skip: Int = 0,
                bookmark: String? = nil, includeDocs: Bool = false, snippets: FullTextSnippetStyle? = FullTextSnippetStyle()) {
        self.query = query
        self.fields = fields
        self.selector = selector.flatMap { $0.isEmpty ? nil : $0 }
        self.limit = limit
        self.skip = skip
        self.bookmark = bookmark
        self.includeDocs = includeDocs
        self.snippets = snippets
    }
}

/// Ordering hits by a value field of the source (FullTextSource.valueFields): by its first value.
public struct FullTextSort: Sendable, Equatable {
    public let field: String
    public let descending: Bool

    public init(_ field: String, descending: Bool = false) {
        self.field = field
        self.descending = descending
    }
}
