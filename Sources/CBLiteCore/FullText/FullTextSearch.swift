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
        let (plan, sort) = try prepare(source, request)
        if request.skip < 0 { throw CBLError.badRequest("skip must not be negative") }
        if !sort.isEmpty && request.bookmark != nil { throw CBLError.badRequest("a bookmark continues a search by relevance: a sorted one pages by skip") }
        var after = try request.bookmark.map { try FullTextBookmark($0) }
        let st = try FullTextUpdater(collection: self, source: source).run()
        let limit = request.limit ?? Int.max
        var toSkip = request.skip
        var hits: [FullTextHit] = []
        var last: FullTextBookmark? = nil
        let needDocs = request.includeDocs || request.selector != nil
        // Pages of matches (a selector may reject some) until the limit is reached; a
        // sorted search skips in SQL when there is no selector to count hits by.
        var offset = 0
        if !sort.isEmpty && request.selector == nil {
            offset = toSkip
            toSkip = 0
        }
        let pageSize = request.selector == nil ? min(limit == Int.max ? 256 : limit + toSkip, 4096) : 256
        while hits.count < limit {
            var page: [FullTextStorage.Match] = []
            try store.read { conn in
                try FullTextStorage.search(conn, st.id, columns: source.columns.count, plan: plan,
                                           after: after.map { ($0.score, $0.sequence) }, limit: max(pageSize, 1),
                                           sort: sort, offset: offset, snippet: request.snippets) { m in
                    page.append(m)
                    return true
                }
            }
            offset += sort.isEmpty ? 0 : page.count
            for m in page {
                if sort.isEmpty { after = FullTextBookmark(score: m.score, sequence: m.sequence) }
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
                var hit = FullTextHit(docID: m.docID, sequence: m.sequence, score: m.score, snippets: snippets, document: doc)
                hit.sortValues = m.sortValues
                hits.append(hit)
                last = after
                if hits.count >= limit { break }
            }
            if page.count < max(pageSize, 1) { break }
        }
        return FullTextSearchResults(hits: hits, bookmark: sort.isEmpty ? last?.text : nil)
    }

    /// How many documents a search finds (its selector, skip, limit and bookmark aside):
    /// one count of the matching rows.
    public func count(_ source: FullTextSource, _ request: FullTextSearchRequest) throws -> Int {
        let (plan, _) = try prepare(source, request)
        let st = try FullTextUpdater(collection: self, source: source).run()
        return try store.read { conn in try FullTextStorage.count(conn, st.id, plan: plan) }
    }

    /// A request's query parsed and checked against the source, as FullTextStorage runs it.
    private func prepare(_ source: FullTextSource, _ request: FullTextSearchRequest) throws -> (FullTextQueryPlan, [FullTextStorage.SortKey]) {
        try check()
        let query: FullTextQuery
        do {
            if request.lucene {
                query = try FullTextQuery(lucene: request.query, fields: source.columns,
                                          numbers: source.valueFields.filter(\.numeric).map(\.name),
                                          strings: source.valueFields.filter { !$0.numeric }.map(\.name))
            } else {
                query = try FullTextQuery(request.query, fields: source.columns)
            }
        } catch let e as FullTextQueryError { throw e.cblError }
        if let only = request.fields {
            for f in only where !source.columns.contains(f) { throw CBLError.badRequest("unknown field '\(f)' (the index has \(source.columns.joined(separator: ", ")))") }
        }
        if let l = request.limit, l < 0 { throw CBLError.badRequest("limit must not be negative") }
        let sort = try request.sort.map { s -> FullTextStorage.SortKey in
            guard let i = source.valueFields.firstIndex(where: { $0.name == s.field }) else {
                throw CBLError.badRequest("cannot sort by '\(s.field)': it is not a number or string field of the index")
            }
            return FullTextStorage.SortKey(field: i, numeric: source.valueFields[i].numeric, descending: s.descending)
        }
        return (FullTextQueryPlan(query, fields: source.columns, only: request.fields, values: source.valueFields), sort)
    }
}
