/// `_explain`'s answer in CouchDB 3.5's shape: the chosen index, the normalized selector,
/// the options, the other indexes with why they were not chosen, and the index scan's
/// arguments ("mrargs": its start and end keys, "<MAX>" for the key above every value).
extension Collection {
    public func explain(_ req: FindRequest, databaseName: String) throws -> JSONValue {
        try check()
        let indexes = try mangoIndexes()
        let plan = try QueryPlan.make(req, indexes: indexes, explaining: true)
        let fields = JSONValue.array(req.projection.names.map { .string($0) })
        let sort: JSONValue = req.sort.fields.isEmpty ? .object(JSONObject())
            : .object(JSONObject(req.sort.fields.map { ($0, .string(req.sort.descending ? "desc" : "asc")) }))
        let opts = JSONValue.object(JSONObject([
            ("use_index", .array(req.useIndex.map { .string($0) })), ("bookmark", .string(req.bookmark ?? "nil")),
            ("limit", .int(req.limit)), ("skip", .int(req.skip)), ("sort", sort), ("fields", fields),
            ("partition", .string("")), ("r", .int(req.r)), ("conflicts", .bool(req.conflicts)), ("stale", .bool(false)),
            ("update", .bool(req.update)), ("stable", .bool(req.stable)), ("execution_stats", .bool(req.executionStats)),
            ("allow_fallback", .bool(req.allowFallback)),
        ]))
        let covering = !plan.index.isSpecial && !req.projection.isAll
            && req.projection.names.allSatisfy { $0 == "_id" || plan.index.columns.contains($0) }
        let startKey: JSONValue, endKey: JSONValue
        if plan.index.isSpecial {
            startKey = plan.idBounds.lower.map { .string($0) } ?? .null
            endKey = plan.idBounds.upper.map { .string($0) } ?? .string("<MAX>")
        } else {
            startKey = .array(IndexKeys.start(plan.ranges))
            endKey = .array(IndexKeys.end(plan.ranges).values + [.string("<MAX>")])
        }
        let mrargs = JSONValue.object(JSONObject([
            ("include_docs", .bool(!covering)), ("view_type", .string("map")), ("reduce", .bool(false)), ("partition", .null),
            ("start_key", startKey), ("end_key", endKey), ("direction", .string(req.sort.descending ? "rev" : "fwd")),
            ("stable", .bool(req.stable)), ("update", .bool(req.update)), ("conflicts", .string("undefined")),
        ]))
        let candidates = JSONValue.array(plan.candidates.map { c in
            .object(JSONObject([("index", c.index.json), ("analysis", .object(JSONObject([
                ("usable", .bool(c.usable)), ("reasons", .array([.object(JSONObject([("name", .string(c.reason))]))])),
                ("ranking", .int(Int64(c.ranking))),
                ("covering", c.index.isSpecial ? .null : .bool(!req.projection.isAll
                    && req.projection.names.allSatisfy { $0 == "_id" || c.index.columns.contains($0) })),
            ])))]))
        })
        let indexable = req.selector.indexableFields
        let unindexable = req.selector.fieldNames.filter { !indexable.contains($0) }
        let hints = JSONValue.array([.object(JSONObject([("type", .string("json")),
                                                         ("indexable_fields", .array(indexable.map { .string($0) })),
                                                         ("unindexable_fields", .array(unindexable.map { .string($0) }))]))])
        return .object(JSONObject([
            ("dbname", .string(databaseName)), ("index", plan.index.json), ("partitioned", .bool(false)),
            ("selector", req.selector.json), ("opts", opts), ("limit", .int(req.limit)), ("skip", .int(req.skip)),
            ("fields", fields), ("index_candidates", candidates), ("selector_hints", hints), ("mrargs", mrargs),
            ("covering", .bool(covering)),
        ]))
    }
}
