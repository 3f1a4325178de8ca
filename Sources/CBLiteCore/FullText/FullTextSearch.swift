/// Searching a full-text index: the query is parsed and checked (FullTextQuery), the
/// index brought up to date (FullTextUpdater: a search sees every write committed before
/// it began), then FTS5 ranks the matches by BM25, pages of them at a time; a selector is
/// matched on each hit's document by Mango's matcher.
extension Collection {
    /// Searches a full-text index defined in a design document (textIndex(named:ddoc:)).
    public func search(index name: String, ddoc: String? = nil, _ request: FullTextSearchRequest) throws -> FullTextSearchResults {
        let index = try FullTextIndex.named(name, ddoc: ddoc, in: currentTextIndexes())
        return try search(index.source, request)
    }

    /// Searches the full-text index of any source (another kind of definition than a
    /// design document's `indexes`).
    public func search(_ source: FullTextSource, _ request: FullTextSearchRequest) throws -> FullTextSearchResults {
        try check()
        let query: FullTextQuery
        do { query = try FullTextQuery(request.query, fields: source.columns) } catch let e as FullTextQueryError { throw e.cblError }
        if let only = request.fields {
            for f in only where !source.columns.contains(f) { throw CBLError.badRequest("unknown field '\(f)' (the index has \(source.columns.joined(separator: ", ")))") }
        }
        if let l = request.limit, l < 0 { throw CBLError.badRequest("limit must not be negative") }
        if request.skip < 0 { throw CBLError.badRequest("skip must not be negative") }
        var after = try request.bookmark.map { try FullTextBookmark($0) }
        let match = query.fts5(fields: source.columns, only: request.fields)
        let st = try FullTextUpdater(collection: self, source: source).run()
        let limit = request.limit ?? Int.max
        var toSkip = request.skip
        var hits: [FullTextHit] = []
        var last: FullTextBookmark? = nil
        let needDocs = request.includeDocs || request.selector != nil
        // Pages of matches (a selector may reject some) until the limit is reached.
        let pageSize = request.selector == nil ? min(limit == Int.max ? 256 : limit + toSkip, 4096) : 256
        while hits.count < limit {
            var page: [FullTextStorage.Match] = []
            try store.read { conn in
                try FullTextStorage.search(conn, st.id, columns: source.columns.count, match: match,
                                           after: after.map { ($0.score, $0.sequence) }, limit: max(pageSize, 1),
                                           snippet: request.snippets) { m in
                    page.append(m)
                    return true
                }
            }
            for m in page {
                after = FullTextBookmark(score: m.score, sequence: m.sequence)
                var doc: [UInt8]? = nil
                if needDocs {
                    // Gone since the index was read: not a hit.
                    guard let d = try? get(docID: m.docID) else { continue }
                    if let sel = request.selector {
                        guard let obj = try? d.withUnsafeBufferPointer({ try JSONParser.parseObject(bytes: $0) }),
                              sel.matches(.object(obj)) else { continue }
                    }
                    doc = request.includeDocs ? d : nil
                }
                if toSkip > 0 { toSkip -= 1; continue }
                let snippets = zip(source.columns, m.snippets).compactMap { f, t in t.map { (field: f, text: $0) } }
                hits.append(FullTextHit(docID: m.docID, sequence: m.sequence, score: m.score, snippets: snippets, document: doc))
                last = after
                if hits.count >= limit { break }
            }
            if page.count < max(pageSize, 1) { break }
        }
        return FullTextSearchResults(hits: hits, bookmark: last?.text)
    }
}
