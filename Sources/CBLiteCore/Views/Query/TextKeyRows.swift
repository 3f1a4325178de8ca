/// The rows of a view's full-text query: its text keys that match, a page at a time (each
/// page a fresh read positioned after the previous page's last row, as MapScan's), each
/// row keyed by its match (TextKeyHit) with the value, document and sequence it was
/// emitted with (a value's "_id" redirects the row's document, as in ordinary queries).
final class TextKeyRows: ValueRowProducer {
    private let store: Store
    private let viewID: Int64?
    private let match: String
    private let ranked: Bool
    private let descending: Bool
    private let snippet: FullTextSnippetStyle?
    private var page: [ViewStorage.TextMatch] = []
    private var index = 0
    private var after: ViewStorage.TextCursor?
    private var done: Bool
    static let pageSize = 256

    /// `viewID` nil: the view has no index (no rows). `analyzer`: the view's (its stop
    /// words are left out of the query, as 1.x ignored them).
    init(store: Store, viewID: Int64?, query: FullTextQuery, analyzer: FullTextAnalyzer, options: QueryOptions) {
        self.store = store
        let kept = query.droppingStopWords(analyzer.stopWords)
        self.viewID = kept == nil ? nil : viewID           // only stop words: nothing matches
        match = kept?.fts5(fields: []) ?? ""
        ranked = options.fullTextRanking
        descending = options.descending
        snippet = options.fullTextSnippets
        done = self.viewID == nil
    }

    func next() throws -> QueryRow? {
        if index >= page.count {
            guard !done, let viewID else { return nil }
            let (match, ranked, descending, after, snippet) = (self.match, self.ranked, self.descending, self.after, self.snippet)
            page = try store.read { conn in
                try ViewStorage.textSearchPage(conn, viewID, match: match, ranked: ranked, descending: descending,
                                               after: after, limit: TextKeyRows.pageSize, snippet: snippet)
            } ?? []
            index = 0
            if page.count < TextKeyRows.pageSize { done = true }
            guard let last = page.last else { return nil }
            self.after = ViewStorage.TextCursor(score: last.score, docID: last.docID, n: last.n)
        }
        let m = page[index]
        index += 1
        let (sequence, value) = try m.row.withUnsafeBufferPointer { b -> (Int64, [UInt8]?) in
            let stored = try IndexRow.read(b)
            return (stored.sequence, stored.value.map { Array($0) })
        }
        let hit = TextKeyHit(text: m.text, score: m.score, matches: TextKeyHit.matches(m.matches), snippet: m.snippet)
        let target = value.flatMap { v in v.withUnsafeBufferPointer { MapScan.redirect($0) } }
        return QueryRow(key: JSONWriter.ordered(hit.json), value: value, docID: target ?? m.docID, sourceDocID: m.docID,
                        sequence: sequence, doc: nil)
    }
}
