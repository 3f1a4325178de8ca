extension View {
    /// Runs a query (see QueryOptions). With update "before" (the default) the index is
    /// brought up to date first; "never" reads it as it is; "after" returns the current
    /// rows and updates the index on a background thread.
    public func query(_ options: QueryOptions = QueryOptions()) throws -> QueryEnumerator {
        try collection.check()
        try loadDesignFunctions()
        // Checked first: a malformed query is a 400 (with its position) before any indexing.
        try options.checkFullText()
        let textQuery = try options.fullTextQuery.map { q in
            do { return try FullTextQuery(q, fields: []) } catch let e as FullTextQueryError { throw e.cblError }
        }
        let reducer = textQuery == nil ? currentReducer : nil       // a full-text query's rows are not reduced
        if options.reduce == true && reducer == nil {
            throw CBLError.badRequest("option \"reduce\" is true but view \"\(name)\" has no reduce function")
        }
        let reducing = (reducer != nil && options.reduce != false)
        let grouping = options.effectiveGroupLevel > 0
        let aggregated = reducing || grouping
        if aggregated && options.includeDocs {
            throw CBLError.badRequest("option \"include_docs\" is invalid for reduced or grouped queries")
        }
        let st: ViewStorage.State?
        if options.update == .before {
            guard hasMap else {
                throw CBLError(.notAcceptable, "view \"\(name)\" has no map function (query with \"update\": false to read its index as it is)")
            }
            st = try updateIndex().state
        } else {
            st = try state()
        }
        let scanOptions: QueryOptions = {
            var o = options
            if aggregated { o.skip = 0; o.limit = -1 }
            return o
        }()
        let table = st.map { ViewStorage.table($0.id) }
        let source: RowSource
        if let textQuery {
            source = ValueRows(TextKeyRows(store: store, viewID: st?.id, query: textQuery, analyzer: textAnalyzer, options: options))
        } else if reducing && CountSource.applies(reducer: reducer, options: scanOptions) {
            source = ValueRows(CountSource(store: store, table: table, countsTable: st.map { ViewStorage.countsTable($0.id) },
                                           options: scanOptions))
        } else if aggregated {
            let scan = MapScan(store: store, table: table, options: scanOptions)
            source = ValueRows(ReduceSource(scan: scan, reducer: reducing ? reducer : nil, level: options.effectiveGroupLevel))
        } else {
            source = MapScan(store: store, table: table, options: scanOptions)
        }
        let e = QueryEnumerator(source: source, options: options, collection: collection, viewName: name,
                                totalRows: st?.totalRows ?? 0, generation: st?.generation ?? 0,
                                lastSequence: st?.lastSeq ?? 0, includeDocs: options.includeDocs && !aggregated)
        if options.update == .after {
            try e.prefetch(MapScan.pageSize)
            if hasMap { updateInBackground() }
        }
        return e
    }
}
