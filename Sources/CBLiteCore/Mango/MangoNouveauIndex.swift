/// Mango's `nouveau` indexes (CouchDB 3.4.3+ with Nouveau): `POST /db/_index` with
/// `"type": "nouveau"` stores, as CouchDB's mango_idx_nouveau does, a member of the
/// `language: "query"` design document's `nouveau` object —
///
///     "nouveau": {"NAME": {"index": {"default_analyzer": "keyword", "default_field": {},
///                                    "partial_filter_selector": {}, "selector": {},
///                                    "fields": [{"name": "title", "type": "string"}, ...],
///                                    "index_array_lengths": true},
///                          "analyzer": {"name": "perfield", "default": "keyword",
///                                       "fields": {"$default": "standard"}}}}
///
/// — an `index` object where a design document's own Nouveau index has a function. On
/// the full-text engine (FullTextSource): each `string` field is a column (its text,
/// searched by `$text` and `title:coffee`) and a string value; `number` fields are number
/// values and `boolean` ones string values ("true"/"false"), for ranges (`year:[2000 TO
/// *]`). One analyzer serves the columns (FTS5 has one tokenizer per table): the default
/// field's (`default_field.analyzer`, "standard"), as `$text` searches that field.
public struct MangoNouveauIndex: Sendable, Equatable {
    /// The design document's ID ("_design/...").
    public let ddoc: String
    public let name: String
    /// The `index` object as stored.
    public let definition: JSONObject
    /// (name, type) of `fields`, types "string", "number" or "boolean".
    public let fields: [(name: String, type: String)]
    public let analyzer: FullTextAnalyzer
    public let partialFilter: Selector?

    public static func == (a: MangoNouveauIndex, b: MangoNouveauIndex) -> Bool {
        a.ddoc == b.ddoc && a.name == b.name && a.version == b.version
    }

    /// Reads an `index` object (CouchDB's validation: mango_idx_nouveau's options).
    init(ddoc: String, name: String, definition d: JSONObject) throws {
        for (k, _) in d.members where !["default_analyzer", "default_field", "partial_filter_selector", "selector", "fields",
                                        "index_array_lengths"].contains(k) {
            throw MangoError.invalidKey(k)
        }
        guard case .array(let given)? = d["fields"] else {
            throw MangoError.invalidIndex("A nouveau index needs its fields listed (index.fields): indexing every field is not supported")
        }
        var fields: [(name: String, type: String)] = []
        for f in given {
            guard case .object(let fo) = f, fo.members.count == 2, case .string(let n)? = fo["name"], !n.isEmpty,
                  case .string(let t)? = fo["type"], ["text", "string", "number", "boolean"].contains(t) else {
                throw MangoError(400, "invalid_index_fields_definition", "Text Index field definitions must be of the form {\"name\": \"non-empty fieldname\", \"type\": \"boolean,number, or string\"}. Def: \(ErlangTerm.format(f))")
            }
            _ = try FieldPath(n)
            let type = t == "text" ? "string" : t
            if !fields.contains(where: { $0.name == n && $0.type == type }) { fields.append((n, type)) }
        }
        // FTS5 needs a column: the text that `$text` searches.
        guard fields.contains(where: { $0.type == "string" }) else {
            throw MangoError.invalidIndex("A nouveau index needs at least one field of type string")
        }
        var analyzerName: JSONValue? = nil
        switch d["default_field"] {
        case .object(let df)?: analyzerName = df["analyzer"]
        case nil, .bool?: break
        default: throw MangoError.invalidIndex("default_field must be an object or a boolean")
        }
        do { analyzer = try NouveauIndex.analyzer(analyzerName) } catch let e as CBLError { throw MangoError.invalidIndex(e.message) }
        var partial: Selector? = nil
        for k in ["partial_filter_selector", "selector"] {
            if let p = d[k], p != .object(JSONObject()) { partial = try Selector(p) }
        }
        self.ddoc = MangoIndex.ddocID(ddoc)
        self.name = name
        self.definition = d
        self.fields = fields
        self.partialFilter = partial.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The mango nouveau indexes a design document defines (language "query", `index` an
    /// object; invalid entries are skipped, as CouchDB skips them).
    static func from(designDocument doc: JSONObject) -> [MangoNouveauIndex] {
        guard doc["language"] == .string("query"), let id = doc["_id"]?.stringValue,
              case .object(let all)? = doc["nouveau"] else { return [] }
        return all.members.compactMap { name, v in
            guard case .object(let o) = v, case .object(let d)? = o["index"] else { return nil }
            return try? MangoNouveauIndex(ddoc: id, name: name, definition: d)
        }
    }

    /// The `index` object CouchDB stores: every option, defaults filled in.
    static func stored(_ d: JSONObject) -> JSONObject {
        var out = JSONObject([
            ("default_analyzer", d["default_analyzer"] ?? .string("keyword")), ("default_field", d["default_field"] ?? .object(JSONObject())),
            ("partial_filter_selector", d["partial_filter_selector"] ?? .object(JSONObject())), ("selector", d["selector"] ?? .object(JSONObject())),
        ])
        if let f = d["fields"] { out["fields"] = f }
        out["index_array_lengths"] = d["index_array_lengths"] ?? .bool(true)
        return out
    }

    /// The member of the design document's `nouveau` that defines it.
    var designJSON: JSONValue {
        var analyzer: JSONValue = .string("keyword")
        if definition["default_field"] != .bool(false), definition["default_field"]?.objectValue?["enabled"] != .bool(false) {
            analyzer = .object(JSONObject([
                ("name", .string("perfield")), ("default", definition["default_analyzer"] ?? .string("keyword")),
                ("fields", .object(JSONObject([("$default", definition["default_field"]?.objectValue?["analyzer"] ?? .string("standard"))]))),
            ]))
        }
        return .object(JSONObject([("index", .object(definition)), ("analyzer", analyzer)]))
    }

    /// Its entry in `GET /db/_index` (mango_idx_nouveau:to_json: fields as {name: type},
    /// an empty partial_filter_selector left out).
    public var json: JSONValue {
        var def = JSONObject()
        for (k, v) in definition.members {
            if k == "partial_filter_selector", v == .object(JSONObject()) { continue }
            if k == "fields", case .array(let fs) = v {
                def[k] = .array(fs.map { f in
                    guard case .object(let o) = f, case .string(let n)? = o["name"], let t = o["type"] else { return f }
                    return .object(JSONObject([(n, t)]))
                })
                continue
            }
            def[k] = v
        }
        return .object(JSONObject([("ddoc", .string(ddoc)), ("name", .string(name)), ("type", .string("nouveau")),
                                   ("partitioned", .bool(false)), ("def", .object(def))]))
    }

    // MARK: on the full-text engine

    var columns: [String] { fields.filter { $0.type == "string" }.map(\.name) }

    var valueFields: [FullTextValueField] {
        fields.map { FullTextValueField($0.name, numeric: $0.type == "number") }
    }

    var storageName: String { "\u{1}mango-nouveau/" + ddoc + "/" + name }

    var version: String {
        let text = JSONWriter.canonical(.array([.object(definition), analyzer.json]))
        return "mango-nouveau1-" + SHA1.hash(text).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// What its updater stores of a document: the string fields' texts, and every field's
    /// values of its type (an array's elements, as CouchDB indexes each).
    public var source: FullTextSource {
        let paths = fields.compactMap { try? FieldPath($0.name) }
        let fields = self.fields, columns = self.columns, partial = partialFilter
        return FullTextSource(name: storageName, columns: columns, analyzer: analyzer, version: version,
                              valueFields: valueFields) { doc in
            if let partial, !partial.matches(.object(try doc.object)) { return nil }
            var row = FullTextRow(texts: [String?](repeating: nil, count: columns.count))
            for (i, (f, p)) in zip(fields, paths).enumerated() {
                guard case .found(let v) = try doc.withJSON({ try p.lookup(inJSON: $0) }) else { continue }
                let items: [JSONValue]
                if case .array(let a) = v { items = a } else { items = [v] }
                for x in items {
                    switch (f.type, x) {
                    case ("string", .string(let s)): row.values.append((i, .string(s)))
                    case ("number", .int(let n)): row.values.append((i, .number(Double(n))))
                    case ("number", .double(let d)): row.values.append((i, .number(d)))
                    case ("boolean", .bool(let b)): row.values.append((i, .string(b ? "true" : "false")))
                    default: continue
                    }
                }
                if f.type == "string", let c = columns.firstIndex(of: f.name), let t = FullTextSource.text(of: v) { row.texts[c] = t }
            }
            return row
        }
    }
}

extension Collection {
    /// The mango nouveau indexes, by design document ID then name (byte order): made from
    /// the design documents once per state of them (DesignDocumentCache), as the json and
    /// text indexes are.
    public func mangoNouveauIndexes() throws -> [MangoNouveauIndex] {
        try store.designDocuments.current(self).value { documents in
            documents.flatMap { MangoNouveauIndex.from(designDocument: $0.body) }.sorted {
                QueryIndexNaming.listedBefore(($0.ddoc, $0.name), ($1.ddoc, $1.name))
            }
        }
    }

    /// `POST /db/_index` with `"type": "nouveau"`: "created" or "exists", the design
    /// document ID and the index name (unnamed: the definition's digest names both).
    func createNouveauIndex(mango o: JSONObject) throws -> (result: String, id: String, name: String) {
        guard case .object(let given)? = o["index"] else {
            throw MangoError.invalidIndex("Text indexes must be an object, not: \(ErlangTerm.format(o["index"] ?? .null))")
        }
        let names = try QueryIndexNaming.names(o, definition: .object(given))
        let index = try MangoNouveauIndex(ddoc: names.ddoc, name: names.name,
                                          definition: MangoNouveauIndex.stored(given))
        let existing = parsedDesignDocument(index.ddoc)
        if let obj = existing {
            guard obj["language"] == .string("query") else {
                throw MangoError(400, "invalid_ddoc_lang", "Existing design doc has an invalid language: \(ErlangTerm.format(obj["language"] ?? .null))")
            }
            if MangoNouveauIndex.from(designDocument: obj).contains(index) { return ("exists", index.ddoc, index.name) }
        }
        try putQueryIndexEntry(existing, ddocID: index.ddoc, member: "nouveau", name: index.name, definition: index.designJSON)
        return ("created", index.ddoc, index.name)
    }

    /// `DELETE /db/_index/{ddoc}/nouveau/{name}`: the design document goes when nothing but
    /// its language is left; the index's storage is dropped.
    func deleteNouveauIndex(mango ddocID: String, name: String) throws {
        guard let obj = parsedDesignDocument(ddocID),
              let index = MangoNouveauIndex.from(designDocument: obj).first(where: { $0.name == name }) else { throw MangoError.indexNotFound }
        try removeQueryIndexEntry(obj, ddocID: ddocID, member: "nouveau", name: name)
        try dropTextStorage(named: index.storageName)
    }

    /// Drops the storage of mango nouveau indexes no design document defines any more.
    func dropOrphanMangoNouveauIndexes(defined: [MangoNouveauIndex]) throws {
        let live = Set(defined.map(\.storageName))
        for (_, n) in try store.read({ conn in try FullTextStorage.indexes(conn, collectionID: id) })
        where n.hasPrefix("\u{1}mango-nouveau/") && !live.contains(n) {
            try dropTextStorage(named: n)
        }
    }
}
