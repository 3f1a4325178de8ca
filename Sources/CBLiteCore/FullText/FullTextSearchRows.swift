/// A search's hits as query rows, for the result handles views and finds return (the C
/// ABI's cbl_query_result): key the score (a JSON number), value the snippets
/// ({field: text}), the document's ID, sequence and, when asked, its JSON.
extension Collection {
    public func searchQuery(index name: String, ddoc: String? = nil, _ request: FullTextSearchRequest) throws
        -> (result: QueryEnumerator, bookmark: String?) {
        let found = try search(index: name, ddoc: ddoc, request)
        let e = QueryEnumerator(source: ValueRows(HitRows(found.hits)), options: QueryOptions(), collection: self, viewName: nil,
                                totalRows: Int64(found.hits.count), generation: 0, lastSequence: try lastSequence, includeDocs: false)
        return (e, found.bookmark)
    }
}

private final class HitRows: ValueRowProducer {
    private var hits: IndexingIterator<[FullTextHit]>
    init(_ hits: [FullTextHit]) { self.hits = hits.makeIterator() }
    func next() throws -> QueryRow? {
        guard let h = hits.next() else { return nil }
        let snippets = JSONValue.object(JSONObject(h.snippets.map { ($0.field, .string($0.text)) }))
        return QueryRow(key: JSONWriter.ordered(.double(h.score)), value: JSONWriter.ordered(snippets), docID: h.docID,
                        sourceDocID: h.docID, sequence: h.sequence, doc: h.document)
    }
}
