/// Searching a design document's Nouveau index (NouveauIndex) in CouchDB 3.5's shapes:
/// `_nouveau/NAME` answers `{total_hits, total_hits_relation, bookmark, hits: [{id, order,
/// fields, doc?}]}`, best first (BM25); `_nouveau_info/NAME` its state. The query is
/// Lucene's syntax, the subset the full-text engine parses (FullTextQuery): terms,
/// phrases, `field:`, AND/OR/NOT, +/-, prefixes; unscoped terms search the field named
/// `default` when the index has one (Nouveau's default field), else every text field.
extension Collection {
    /// One page of hits as `GET /db/_design/DDOC/_nouveau/NAME` answers it.
    public func nouveauSearch(ddoc: String, index name: String, query: String, limit: Int = 25, bookmark: String? = nil,
                              includeDocs: Bool = false) throws -> JSONValue {
        let index = try nouveauIndex(ddoc: ddoc, name: name)
        try NouveauSearchSyntax.check(query)
        guard limit >= 0 else { throw CBLError.badRequest("limit must not be negative") }
        let only: [String]? = index.columns.contains("default") ? ["default"] : nil
        try dropOrphanNouveauIndexes()
        let source = index.source
        // Every match counted (total_hits, EQUAL_TO as Lucene says for an exact count), then the page.
        let total = try search(source, FullTextSearchRequest(query: query, fields: only, snippets: nil)).hits.count
        let page = try search(source, FullTextSearchRequest(query: query, fields: only, limit: limit, bookmark: bookmark,
                                                            includeDocs: true, snippets: nil))
        let hits: [JSONValue] = try page.hits.map { h in
            var hit = JSONObject([
                ("id", .string(h.docID)),
                ("order", .array([.object(JSONObject([("@type", .string("float")), ("value", .double(h.score))])),
                                  .object(JSONObject([("@type", .string("string")), ("value", .string(h.docID))]))])),
                ("fields", .object(try index.storedFields(h.document ?? [], docID: h.docID))),
            ])
            if includeDocs, let d = h.document { hit["doc"] = try d.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) } }
            return .object(hit)
        }
        return .object(JSONObject([
            ("total_hits_relation", .string("EQUAL_TO")), ("total_hits", .int(Int64(total))),
            ("ranges", .null), ("counts", .null),
            ("bookmark", page.bookmark.map { .string($0) } ?? bookmark.map { .string($0) } ?? .null),
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
