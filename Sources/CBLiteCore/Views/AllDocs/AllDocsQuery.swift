/// All-documents queries: an imaginary view with one row per document, keyed by
/// document ID (byte order, which is ASCII order), with the same range options as view
/// queries and the seeds' modes: all documents, include deleted, show conflicts, only
/// conflicts — and by sequence (keys are sequences, deleted documents included).
/// Row values: {"rev": current, "deleted": true?, "_conflicts": [other leaves]?}.
extension Collection {
    public func allDocsQuery(_ options: QueryOptions = QueryOptions()) throws -> QueryEnumerator {
        try check()
        if options.reduce == true || options.effectiveGroupLevel > 0 {
            throw CBLError.badRequest("all-documents queries cannot reduce or group")
        }
        if options.fullTextQuery != nil { throw CBLError.badRequest("all-documents queries have no full-text query (a view's text keys have)") }
        let meta = try store.collectionMeta(id)
        let scan = try AllDocsScan(collection: self, options: options)
        return QueryEnumerator(source: ValueRows(scan), options: options, collection: self, viewName: nil,
                               totalRows: meta.docCount, generation: 0, lastSequence: meta.lastSeq,
                               includeDocs: options.includeDocs, offset: try scan.rowsBeforeStart() + options.skip)
    }
}
