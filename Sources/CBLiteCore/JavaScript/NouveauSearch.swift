/// Searching a design document's Nouveau index (NouveauIndex) in CouchDB 3.5's shapes:
/// `_nouveau/NAME` answers `{total_hits, total_hits_relation, bookmark, hits: [{id, order,
/// fields, doc?}]}`, best first (BM25) or by `sort` fields; `_nouveau_info/NAME` its state.
/// The query is Lucene's syntax as the full-text engine reads it (FullTextQuery(lucene:)):
/// terms, phrases and their slop, `field:`, AND/OR/NOT, +/-, prefixes, ranges and values
/// of `double` and `string` fields; what it cannot do is a 400 with its position. Unscoped
/// terms search the field named `default` when the index has one (Nouveau's default
/// field), else every text field. A mango nouveau index (MangoNouveauIndex, in a `query`
/// design document) is served the same way: its `string` fields searched, its fields
/// values for ranges and sorting, no stored fields.
extension Collection {
    /// One page of hits as `GET /db/_design/DDOC/_nouveau/NAME` answers it: by relevance,
    /// or by the `sort` fields' values (`double` and `string` fields, stored by the index).
    public func nouveauSearch(ddoc: String, index name: String, query: String, limit: Int = 25, bookmark: String? = nil,
                              includeDocs: Bool = false, sort: [NouveauSort] = []) throws -> JSONValue {
        let index = try searchedNouveauIndex(ddoc: ddoc, name: name)
        guard limit >= 0 else { throw CBLError.badRequest("limit must not be negative") }
        try dropOrphanNouveauIndexes()
        let source = index.source
        var request = FullTextSearchRequest(query: query, fields: source.columns.contains("default") ? ["default"] : nil,
                                            limit: limit, includeDocs: true, snippets: nil)
        request.lucene = true
        request.sort = try sort.map { s in
            guard let f = source.valueFields.first(where: { $0.name == s.field }), f.numeric == (s.type == "double") else {
                throw CBLError.badRequest("cannot sort by \(s.field)<\(s.type)>: the index gives no \(s.type) field \(s.field)")
            }
            return FullTextSort(s.field, descending: s.descending)
        }
        // A sorted page's bookmark is the next page's offset; a ranked page's, the last hit.
        if sort.isEmpty {
            request.bookmark = bookmark
        } else if let b = bookmark {
            guard b.hasPrefix("o"), let n = Int(b.dropFirst()), n >= 0 else { throw CBLError.badRequest("invalid bookmark") }
            request.skip = n
        }
        // Every match counted (total_hits, EQUAL_TO as Lucene says for an exact count), then the page.
        let total = try count(source, request)
        let r = try search(source, request)
        let next = sort.isEmpty ? r.bookmark : (r.hits.isEmpty ? nil : "o\(request.skip + r.hits.count)")
        let hits: [JSONValue] = try r.hits.map { h in
            let score: [JSONValue] = [
                .object(JSONObject([("@type", .string("float")), ("value", .double(h.score))])),
                .object(JSONObject([("@type", .string("string")), ("value", .string(h.docID))])),
            ]
            let order: [JSONValue] = zip(sort, h.sortValues).map { s, v in
                let value: JSONValue
                switch v {
                case .number(let d)?: value = d == d.rounded() && abs(d) < 1e15 ? .int(Int64(d)) : .double(d)
                case .string(let t)?: value = .string(t)
                case nil: value = .null
                }
                return .object(JSONObject([("@type", .string(s.type)), ("value", value)]))
            } + score
            var hit = JSONObject([("id", .string(h.docID)), ("order", .array(order)), ("fields", .object(try index.storedFields(h)))])
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
        let index = try searchedNouveauIndex(ddoc: ddoc, name: name)
        let st = try FullTextUpdater(collection: self, source: index.source).run()
        let docs = try store.read { conn -> Int64 in
            let s = try conn.prepare("SELECT count(*) FROM \(FullTextStorage.mapTable(st.id))")
            defer { s.reset() }
            return try s.step() ? s.int(0) : 0
        }
        return .object(JSONObject([
            ("name", .string(index.ddocID + "/" + name)),
            ("search_index", .object(JSONObject([
                ("update_seq", .int(st.lastSeq)), ("purge_seq", .int(0)), ("num_docs", .int(docs)),
                ("disk_size", .int(0)), ("signature", .string(String(index.source.version.split(separator: "-").last ?? ""))),
            ]))),
        ]))
    }

    /// What `_nouveau/NAME` searches: a design document's own index (a function) or a
    /// mango nouveau index (an `index` object in a `query` design document).
    private struct Searched {
        let ddocID: String
        let source: FullTextSource
        /// A hit's `fields` (a function's stored fields; none for a mango index).
        let storedFields: (FullTextHit) throws -> JSONObject
    }

    private func searchedNouveauIndex(ddoc: String, name: String) throws -> Searched {
        try check()
        guard let d = try DesignDocument.load(self, name: ddoc) else { throw CBLError.notFound("missing") }
        if d.language == "query" {
            guard let m = MangoNouveauIndex.from(designDocument: d.body.with(id: d.id)).first(where: { $0.name == name }) else {
                throw CBLError.notFound("missing")
            }
            return Searched(ddocID: d.id, source: m.source) { _ in JSONObject() }
        }
        let index = try NouveauIndex(d, name: name)
        return Searched(ddocID: d.id, source: index.source) { h in
            // The index function's rows give the hit's stored fields.
            NouveauIndex.storedFields(try index.fields(h.document ?? [], docID: h.docID) ?? [])
        }
    }

    /// Drops the storage of Nouveau indexes no design document defines any more (a mango
    /// one's too).
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
        try dropOrphanMangoNouveauIndexes(defined: mangoNouveauIndexes())
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

private extension JSONObject {
    /// The object with its `_id` (a design document's body may be stored without it).
    func with(id: String) -> JSONObject {
        var o = self
        if o["_id"] == nil { o["_id"] = .string(id) }
        return o
    }
}
