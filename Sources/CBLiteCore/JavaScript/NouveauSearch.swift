/// Searching a design document's Nouveau index (NouveauIndex) in CouchDB 3.5's shapes:
/// `_nouveau/NAME` answers `{total_hits, total_hits_relation, bookmark, hits: [{id, order,
/// fields, doc?}]}`, best first (BM25); `_nouveau_info/NAME` its state. The query is
/// Lucene's syntax, the subset the full-text engine parses (FullTextQuery): terms,
/// phrases, `field:`, AND/OR/NOT, +/-, prefixes; unscoped terms search the field named
/// `default` when the index has one (Nouveau's default field), else every text field.
extension Collection {
    /// One page of hits as `GET /db/_design/DDOC/_nouveau/NAME` answers it: by relevance,
    /// or by the values the index function gives the `sort` fields.
    public func nouveauSearch(ddoc: String, index name: String, query: String, limit: Int = 25, bookmark: String? = nil,
                              includeDocs: Bool = false, sort: [NouveauSort] = []) throws -> JSONValue {
        let index = try nouveauIndex(ddoc: ddoc, name: name)
        try NouveauSearchSyntax.check(query)
        guard limit >= 0 else { throw CBLError.badRequest("limit must not be negative") }
        let only: [String]? = index.columns.contains("default") ? ["default"] : nil
        try dropOrphanNouveauIndexes()
        let source = index.source
        let score = { (h: FullTextHit) -> [JSONValue] in [
            .object(JSONObject([("@type", .string("float")), ("value", .double(h.score))])),
            .object(JSONObject([("@type", .string("string")), ("value", .string(h.docID))])),
        ] }
        // The index function's rows of a hit's document: run once per hit, for its sort
        // values and its stored fields alike.
        func rows(_ h: FullTextHit) throws -> [JSONValue] { try index.fields(h.document ?? [], docID: h.docID) ?? [] }
        var page: [(hit: FullTextHit, order: [JSONValue], rows: [JSONValue]?)]
        var next: String?
        let total: Int
        if sort.isEmpty {
            // Every match counted (total_hits, EQUAL_TO as Lucene says for an exact count), then the page.
            total = try search(source, FullTextSearchRequest(query: query, fields: only, snippets: nil)).hits.count
            let r = try search(source, FullTextSearchRequest(query: query, fields: only, limit: limit, bookmark: bookmark,
                                                             includeDocs: true, snippets: nil))
            page = r.hits.map { ($0, score($0), nil) }
            next = r.bookmark
        } else {
            // Every match with its sort values, sorted; the bookmark is the next page's offset.
            var offset = 0
            if let b = bookmark {
                guard b.hasPrefix("o"), let n = Int(b.dropFirst()), n >= 0 else { throw CBLError.badRequest("invalid bookmark") }
                offset = n
            }
            let all = try search(source, FullTextSearchRequest(query: query, fields: only, includeDocs: true, snippets: nil)).hits
            total = all.count
            let keyed = try all.map { h -> (hit: FullTextHit, order: [JSONValue], rows: [JSONValue]?) in
                let given = try rows(h)
                let values = NouveauIndex.fieldValues(given)
                return (h, sort.map { s in
                    .object(JSONObject([("@type", .string(s.type == "double" ? "double" : "string")), ("value", values[s.field] ?? .null)]))
                } + score(h), given)
            }
            let sorted = keyed.enumerated().sorted { a, b in
                for (i, s) in sort.enumerated() {
                    let x = a.element.order[i].objectValue?["value"] ?? .null, y = b.element.order[i].objectValue?["value"] ?? .null
                    // A hit without the field comes after those with it, whatever the direction.
                    if (x == .null) != (y == .null) { return y == .null }
                    let c = CollatableKey.compare(CollatableKey.encode(x), CollatableKey.encode(y))
                    if c != 0 { return s.descending ? c > 0 : c < 0 }
                }
                return a.offset < b.offset
            }.map(\.element)
            page = Array(sorted.dropFirst(offset).prefix(limit))
            next = page.isEmpty ? nil : "o\(offset + page.count)"
        }
        let hits: [JSONValue] = try page.map { h, order, given in
            var hit = JSONObject([
                ("id", .string(h.docID)), ("order", .array(order)),
                ("fields", .object(NouveauIndex.storedFields(try given ?? rows(h)))),
            ])
            if includeDocs, let d = h.document { hit["doc"] = try d.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) } }
            return .object(hit)
        }
        return .object(JSONObject([
            ("total_hits_relation", .string("EQUAL_TO")), ("total_hits", .int(Int64(total))),
            ("ranges", .null), ("counts", .null),
            ("bookmark", next.map { .string($0) } ?? bookmark.map { .string($0) } ?? .null),
            ("hits", .array(hits)),
        ]))
    }

    /// `GET /db/_design/DDOC/_nouveau_info/NAME`: the index brought up to date, its
    /// sequence, document count, size on disk (0: it shares the database file) and signature.
    public func nouveauInfo(ddoc: String, index name: String) throws -> JSONValue {
        let index = try nouveauIndex(ddoc: ddoc, name: name)
        let st = try FullTextUpdater(collection: self, source: index.source).run()
        let docs = try store.read { conn -> Int64 in
            let s = try conn.prepare("SELECT count(*) FROM \(FullTextStorage.mapTable(st.id))")
            defer { s.reset() }
            return try s.step() ? s.int(0) : 0
        }
        return .object(JSONObject([
            ("name", .string(index.ddoc.id + "/" + name)),
            ("search_index", .object(JSONObject([
                ("update_seq", .int(st.lastSeq)), ("purge_seq", .int(0)), ("num_docs", .int(docs)),
                ("disk_size", .int(0)), ("signature", .string(String(index.version.dropFirst("nouveau1-".count)))),
            ]))),
        ]))
    }

    private func nouveauIndex(ddoc: String, name: String) throws -> NouveauIndex {
        try check()
        guard let d = try DesignDocument.load(self, name: ddoc) else { throw CBLError.notFound("missing") }
        return try NouveauIndex(d, name: name)
    }

    /// Drops the storage of Nouveau indexes no design document defines any more.
    private func dropOrphanNouveauIndexes() throws {
        let prefix = "\u{1}nouveau/"
        for (_, n) in try store.read({ conn in try FullTextStorage.indexes(conn, collectionID: id) }) where n.hasPrefix(prefix) {
            let rest = n.dropFirst(prefix.count)
            // "_design/<ddoc>/<name>": the ddoc name has no "/" once escaped in a URL, the index name may.
            let parts = rest.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { try dropTextStorage(named: n); continue }
            let live = (try? DesignDocument.load(self, name: String(parts[1])))??.body["nouveau"]?.objectValue?[String(parts[2])] != nil
            if !live { try dropTextStorage(named: n) }
        }
    }
}

/// A Nouveau `sort` item, `"[-]FIELD<string|double>"` (CouchDB's syntax): the hits ordered by
/// the value the index function gives FIELD, descending with "-".
public struct NouveauSort: Sendable, Equatable {
    public let field: String
    public let type: String
    public let descending: Bool

    /// nil for relevance (`"<score>"`, `"-<score>"`); 400 for what is not a sort item.
    public static func parse(_ item: String) throws -> NouveauSort? {
        var t = Substring(item)
        let descending = t.hasPrefix("-")
        if descending { t = t.dropFirst() }
        if t == "<score>" { return nil }
        for type in ["string", "double"] where t.hasSuffix("<\(type)>") && t.count > type.count + 2 {
            return NouveauSort(field: String(t.dropLast(type.count + 2)), type: type, descending: descending)
        }
        throw CBLError.badRequest("invalid sort item \"\(item)\": \"[-]FIELD<string>\", \"[-]FIELD<double>\" or \"-<score>\"")
    }
}

/// Lucene's syntax the full-text engine does not parse, refused with its position (the
/// engine would read `~`, `^` and `?` as parts of words): fuzzy and proximity (`~`),
/// boosts (`^`), ranges (`[a TO b]`, `{a TO b}`), single-character wildcards (`?`).
enum NouveauSearchSyntax {
    static func check(_ q: String) throws {
        var inPhrase = false
        for (i, c) in q.unicodeScalars.enumerated() {
            if c == "\"" { inPhrase.toggle(); continue }
            if inPhrase { continue }
            let what: String
            switch c {
            case "~": what = "fuzzy and proximity searches (~)"
            case "^": what = "boosts (^)"
            case "[", "]", "{", "}": what = "ranges"
            case "?": what = "single-character wildcards (?)"
            default: continue
            }
            throw FullTextQueryError("Lucene's \(what) are not supported", at: i).cblError
        }
    }
}
