/// A Mango `json` index: a design document's view with `language: "query"`, as CouchDB
/// stores it —
///
///     {"_id": "_design/<ddoc>", "language": "query", "views": {"<name>": {
///         "map": {"fields": {"age": "asc"}, "partial_filter_selector": {...normalized}},
///         "reduce": "_count", "options": {"def": {"fields": ["age"]}}}}}
///
/// — so indexes replicate to and from CouchDB, and a design document written any way
/// (PUT, _bulk_docs, replication) defines its indexes. Its rows live in a view index
/// (the views' storage and updater): the map emits, for each document that has every
/// field (and matches the partial filter), the array of the fields' values, in the
/// views' collation — CouchDB's own model of a json index.
public struct MangoIndex: Sendable {
    /// The design document's ID ("_design/..."); nil for the special `_all_docs` index.
    public let ddoc: String?
    public let name: String
    public let columns: [String]
    public let partialFilter: Selector?
    /// What its view index was built from: a changed definition rebuilds the index. Made
    /// once with the index (a digest, ~12,000 instructions, which every find used to make).
    let version: String

    init(ddoc: String?, name: String, columns: [String], partialFilter: Selector?) {
        self.ddoc = ddoc
        self.name = name
        self.columns = columns
        self.partialFilter = partialFilter
        let text = JSONWriter.canonical(.array([.array(columns.map { .string($0) }), partialFilter?.json ?? .null]))
        version = "mango1-" + Hex.encode(SHA1.hash(text))
    }

    static let special = MangoIndex(ddoc: nil, name: "_all_docs", columns: ["_id"], partialFilter: nil)

    public var isSpecial: Bool { ddoc == nil }

    /// "_design/x" for "x" (and for "_design/x").
    static func ddocID(_ s: String) -> String { s.hasPrefix("_design/") ? s : "_design/" + s }

    /// The `def` member of its listing: fields as `{"f": "asc"}` objects, the partial
    /// filter (normalized) when there is one.
    var def: JSONValue {
        var m: [(key: String, value: JSONValue)] = [("fields", SortSpec.json(columns))]
        if let p = partialFilter, !p.isEmpty { m.append(("partial_filter_selector", p.json)) }
        return .object(JSONObject(m))
    }

    /// Its entry in `GET /db/_index` and `_explain`.
    public var json: JSONValue {
        if isSpecial {
            return .object(JSONObject([("ddoc", .null), ("name", .string(name)), ("type", .string("special")), ("def", def)]))
        }
        return .object(JSONObject([("ddoc", .string(ddoc!)), ("name", .string(name)), ("type", .string("json")),
                                   ("partitioned", .bool(false)), ("def", def)]))
    }

    // MARK: design documents

    /// The indexes a design document defines (none unless its language is "query";
    /// views that are not valid json indexes are skipped, as CouchDB skips them).
    static func from(designDocument doc: JSONObject) -> [MangoIndex] {
        guard doc["language"] == .string("query"), let id = doc["_id"]?.stringValue,
              case .object(let views)? = doc["views"] else { return [] }
        return views.members.compactMap { (name, v) in
            guard case .object(let view) = v, case .object(let map)? = view["map"] else { return nil }
            // The column order: options.def.fields (an array) when present — documents are
            // stored with their members sorted, so map.fields (an object) may have lost it.
            var columns: [String]? = nil
            if case .object(let opts)? = view["options"], case .object(let d)? = opts["def"], let f = d["fields"],
               let s = try? SortSpec(f) {
                columns = s.fields
            }
            if columns == nil, case .object(let f)? = map["fields"] { columns = f.members.map(\.key) }
            guard let cols = columns, !cols.isEmpty else { return nil }
            var partial: Selector? = nil
            if let p = map["partial_filter_selector"] {
                guard let s = try? Selector(p) else { return nil }
                partial = s.isEmpty ? nil : s
            }
            return MangoIndex(ddoc: id, name: name, columns: cols, partialFilter: partial)
        }
    }

    /// The indexes the design documents define, by design document ID then name (byte
    /// order), as CouchDB lists them.
    static func defined(by documents: [DesignDocument]) -> [MangoIndex] {
        documents.flatMap { from(designDocument: $0.body) }.sorted {
            QueryIndexNaming.listedBefore(($0.ddoc ?? "", $0.name), ($1.ddoc ?? "", $1.name))
        }
    }

    /// The view member CouchDB writes for an index; `def` is the definition as given.
    func viewJSON(givenDef: JSONValue) -> JSONValue {
        let fields = JSONValue.object(JSONObject(columns.map { ($0, .string("asc")) }))
        return .object(JSONObject([
            ("map", .object(JSONObject([("fields", fields),
                                        ("partial_filter_selector", partialFilter?.json ?? .object(JSONObject()))]))),
            ("reduce", .string("_count")),
            ("options", .object(JSONObject([("def", givenDef)]))),
        ]))
    }

    /// Whether two indexes have the same definition.
    func sameDefinition(_ o: MangoIndex) -> Bool {
        columns == o.columns && (partialFilter?.json ?? .object(JSONObject())) == (o.partialFilter?.json ?? .object(JSONObject()))
    }

    // MARK: its view index

    /// Views of Mango indexes have names no view made through the API can have (those
    /// cannot hold control characters).
    static let viewPrefix = "\u{1}mango/"

    var viewName: String { MangoIndex.viewPrefix + (ddoc ?? "") + "/" + name }

    /// The view of this index, its map registered. It emits one row a document at most
    /// (a find's scan relies on it: MapScan's `rowPerDocument`).
    func view(in collection: Collection) -> View {
        let v = View(collection: collection, name: viewName)
        let paths = columns.compactMap { try? FieldPath($0) }
        // A one-column index's scanner alone: copying the path out of the array for each
        // document retained and released its three references (callgrind).
        let single: FieldPathScanner? = paths.count == 1 ? paths[0].scanner : nil
        let partial = partialFilter
        v.setMapReduce(map: { doc, emitter in
            // Only the fields the partial filter and the index read are read from the text
            // (FieldPathScan), not the whole document.
            try doc.withJSON { json in
                if let partial, !(try partial.matches(json: json)) { return }
                // One column holding a plain integer (the common index): its key written at
                // once (~1,000 instructions a document less than through a JSONValue array).
                if let single {
                    guard case .found(let text) = try single.locate(inJSON: json) else { return }
                    if let n = MappedBatch.plainInteger(text) {
                        emitter.emit(integerInArray: n)
                    } else {
                        emitter.emit(.array([try FieldPath.value(text)]), nil)
                    }
                    return
                }
                var key: [JSONValue] = []
                key.reserveCapacity(paths.count)
                for p in paths {
                    guard case .found(let x) = try p.lookup(inJSON: json) else { return }
                    key.append(x)
                }
                emitter.emit(.array(key), nil)
            }
        }, reduce: nil, version: version)
        return v
    }
}
