/// Mango's `$text`, CouchDB's query of a text index: `{"selector": {"$text": "coffee",
/// "year": {"$gt": 2000}}}`. The selector's `$text` (at its top, or in its top `$and`) is a
/// full-text query (Lucene's syntax as FullTextQuery(lucene:) reads it) run against a text
/// index (FullTextIndex) or, when there is none, a mango nouveau index (MangoNouveauIndex)
/// — CouchDB's order; the other conditions filter the hits with Mango's matcher.
/// Hits come best first (BM25); `sort` orders them by fields instead, `fields`, `limit`,
/// `skip` and `bookmark` apply as in any `_find`.
public struct TextFind {
    /// The full-text query.
    public let query: String
    /// The request with `$text` taken out of its selector.
    public let request: FindRequest
    /// The index searched: its `GET /db/_index` entry, and what the engine searches.
    public let indexJSON: JSONValue
    let source: FullTextSource

    /// The `$text` query of a `_find` body and the body without it; nil when the selector
    /// has no `$text`. Elsewhere than at the top (under `$or`, `$not`, a field) it is
    /// refused: a text index answers a query for the whole document only.
    static func split(_ body: JSONValue) throws -> (query: String, body: JSONValue)? {
        guard case .object(var o) = body, case .object(var sel)? = o["selector"] else { return nil }
        func text(_ v: JSONValue) throws -> String {
            switch v {
            case .string(let s): return s
            case .int(let n): return String(n)
            case .double(let d): return String(d)
            case .bool(let b): return String(b)
            default: throw MangoError.badArg("$text", v)
            }
        }
        var query: String? = nil
        if let t = sel["$text"] {
            query = try text(t)
            sel["$text"] = nil
        } else if case .array(var and)? = sel["$and"],
                  let i = and.firstIndex(where: { if case .object(let c) = $0 { return c["$text"] != nil } else { return false } }),
                  case .object(let c) = and[i], c.members.count == 1, let t = c["$text"] {
            query = try text(t)
            and.remove(at: i)
            sel["$and"] = .array(and)
        }
        guard let query else { return nil }
        o["selector"] = .object(sel)
        return (query, .object(o))
    }

    /// The text query of a `_find` body, on the text index it names with `use_index` or the
    /// collection's only one; nil when the selector has no `$text`.
    init?(_ body: JSONValue, in collection: Collection) throws {
        guard let (query, rest) = try TextFind.split(body) else { return nil }
        let request = try FindRequest(rest)
        // Text indexes first, then nouveau ones (mango_cursor's order of index kinds).
        func chosen(_ all: [(ddoc: String, name: String, json: JSONValue, source: FullTextSource)]) -> [(ddoc: String, name: String, json: JSONValue, source: FullTextSource)] {
            var indexes = all
            if let ddoc = request.useIndex.first { indexes = indexes.filter { $0.ddoc == MangoIndex.ddocID(ddoc) } }
            if request.useIndex.count > 1 { indexes = indexes.filter { $0.name == request.useIndex[1] } }
            return indexes
        }
        var indexes = chosen(try collection.textIndexes().map { ($0.ddoc, $0.name, $0.json, $0.source) })
        if indexes.isEmpty { indexes = chosen(try collection.mangoNouveauIndexes().map { ($0.ddoc, $0.name, $0.json, $0.source) }) }
        guard let index = indexes.first else {
            // CouchDB 3.5 without a text or nouveau index answers from _all_docs, where `$text`
            // matches every document; a sort _all_docs cannot give is its no_usable_index.
            // cblite refuses the query instead of answering every document (README).
            if !request.sort.fields.isEmpty && request.sort.fields != ["_id"] { throw MangoError.noUsableIndex }
            throw MangoError(400, "no_usable_index", "No text index exists for this selector: $text needs one (POST /{db}/_index with \"type\": \"text\" or \"nouveau\").")
        }
        if indexes.count > 1 {
            throw MangoError(400, "multiple_text_indexes", "You must specify an index with the `use_index` parameter.")
        }
        self.query = query
        self.request = request
        self.indexJSON = index.json
        self.source = index.source
    }

    /// A sort's field without CouchDB's text-index type suffix (`"year:number"`).
    static func sortPath(_ field: String) throws -> FieldPath {
        var f = field
        for t in [":string", ":number", ":boolean"] where f.hasSuffix(t) { f.removeLast(t.count) }
        return try FieldPath(f)
    }

    /// The documents of one page (projected) and the bookmark of the next.
    func run(in collection: Collection) throws -> (docs: [[UInt8]], bookmark: String) {
        // A definition replaced or deleted by a document write left its old storage.
        try collection.dropOrphanTextIndexes()
        try collection.dropOrphanMangoNouveauIndexes(defined: collection.mangoNouveauIndexes())
        let selector = request.selector.isEmpty ? nil : request.selector
        let limit = Int(request.limit), skip = Int(request.skip)
        var docs: [JSONValue] = []
        var bookmark: String? = nil
        if request.sort.fields.isEmpty {
            var search = FullTextSearchRequest(query: query, selector: selector, limit: limit, skip: skip, bookmark: request.bookmark,
                                               includeDocs: true, snippets: nil)
            search.lucene = true
            let r = try collection.search(source, search)
            docs = try r.hits.map { h in try h.document!.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) } }
            bookmark = r.bookmark
        } else {
            // Ordered by fields: every hit, sorted; the bookmark is the next page's offset.
            var offset = skip
            if let b = request.bookmark {
                guard b.hasPrefix("o"), let n = Int(b.dropFirst()), n >= 0 else {
                    throw MangoError(400, "invalid_bookmark", "Invalid bookmark value: \"\(b)\"")
                }
                offset = n
            }
            var search = FullTextSearchRequest(query: query, selector: selector, includeDocs: true, snippets: nil)
            search.lucene = true
            let r = try collection.search(source, search)
            let paths = try request.sort.fields.map(TextFind.sortPath)
            let keyed = try r.hits.map { h -> (keys: [[UInt8]], doc: JSONValue) in
                let d = try h.document!.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) }
                return (paths.map { CollatableKey.encode($0.value(in: d) ?? .null) }, d)
            }
            // Stable: equal keys keep the score order.
            let sorted = keyed.enumerated().sorted { a, b in
                for (x, y) in zip(a.element.keys, b.element.keys) {
                    let c = CollatableKey.compare(x, y)
                    if c != 0 { return request.sort.descending ? c > 0 : c < 0 }
                }
                return a.offset < b.offset
            }.map(\.element.doc)
            docs = Array(sorted.dropFirst(offset).prefix(limit))
            if !docs.isEmpty { bookmark = "o\(offset + docs.count)" }
        }
        let out = docs.map { JSONWriter.ordered(request.projection.apply($0)) }
        return (out, bookmark ?? request.bookmark ?? "nil")
    }

    /// `_explain`'s answer for a text query: the index, the query and the options.
    func explain(databaseName: String) -> JSONValue {
        let fields = JSONValue.array(request.projection.names.map { .string($0) })
        return .object(JSONObject([
            ("dbname", .string(databaseName)), ("index", indexJSON), ("partitioned", .bool(false)),
            ("selector", request.selector.json), ("query", .string(query)),
            ("opts", .object(JSONObject([
                ("use_index", .array(request.useIndex.map { .string($0) })), ("bookmark", .string(request.bookmark ?? "nil")),
                ("limit", .int(request.limit)), ("skip", .int(request.skip)),
                ("sort", SortSpec.json(request.sort.fields, descending: request.sort.descending)), ("fields", fields),
            ]))),
            ("limit", .int(request.limit)), ("skip", .int(request.skip)), ("fields", fields),
        ]))
    }
}

extension Collection {
    /// Runs a `_find` body whose selector has `$text` (nil when it has none): the page's
    /// documents and the next page's bookmark.
    public func textFind(_ body: JSONValue) throws -> (docs: [[UInt8]], bookmark: String)? {
        try check()
        return try TextFind(body, in: self)?.run(in: self)
    }

    /// `_explain` of a `_find` body whose selector has `$text` (nil when it has none).
    public func textExplain(_ body: JSONValue, databaseName: String) throws -> JSONValue? {
        try check()
        return try TextFind(body, in: self)?.explain(databaseName: databaseName)
    }
}
