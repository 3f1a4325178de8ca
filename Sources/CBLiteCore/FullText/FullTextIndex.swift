/// A full-text index of a collection, defined in a `language: "query"` design document
/// in the shape CouchDB gives its `text` indexes —
///
///     {"_id": "_design/<ddoc>", "language": "query", "indexes": {"<name>": {
///         "index": {"fields": [{"name": "title", "type": "string"}, ...],
///                   "partial_filter_selector": {...}},
///         "analyzer": {"name": "cblite", "fold_diacritics": true, "stemming": false, "stop_words": []}}}}
///
/// — rather than in a table of its own: the definition then replicates with the database
/// (to CouchDB too, which reads it as a text index), a design document written any way
/// (PUT, _bulk_docs, replication) defines it, and Mango's `$text` finds it where CouchDB
/// finds a text index. Its terms live in an FTS5 table (FullTextStorage), kept current
/// by FullTextUpdater from the documents' sequences, as views' indexes are.
public struct FullTextIndex: Sendable, Equatable {
    /// The design document's ID ("_design/...").
    public let ddoc: String
    public let name: String
    /// Dotted field paths (Mango's syntax: "a\\.b" for a member whose name holds a dot).
    /// A string is indexed; an array's strings (nested too) are, one after another.
    public let fields: [String]
    public let analyzer: FullTextAnalyzer
    /// Only documents it matches are indexed.
    public let partialFilter: Selector?

    public init(ddoc: String, name: String, fields: [String], analyzer: FullTextAnalyzer = FullTextAnalyzer(),
                partialFilter: Selector? = nil) throws {
        guard !name.isEmpty else { throw CBLError.badRequest("a full-text index needs a name") }
        guard !fields.isEmpty else { throw CBLError.badRequest("a full-text index needs at least one field") }
        guard Set(fields).count == fields.count else { throw CBLError.badRequest("a field is listed twice") }
        for f in fields { _ = try FieldPath(f) }
        try analyzer.validate()
        self.ddoc = MangoIndex.ddocID(ddoc)
        self.name = name
        self.fields = fields
        self.analyzer = analyzer
        self.partialFilter = partialFilter.flatMap { $0.isEmpty ? nil : $0 }
    }

    public static func == (a: FullTextIndex, b: FullTextIndex) -> Bool {
        a.ddoc == b.ddoc && a.name == b.name && a.version == b.version
    }

    // MARK: design documents

    /// The index of that name (in that design document, when given) among `indexes`; 404
    /// when there is none, 400 when the name is in several design documents and none is given.
    static func named(_ name: String, ddoc: String?, in indexes: [FullTextIndex]) throws -> FullTextIndex {
        let matches = indexes.filter { $0.name == name && (ddoc == nil || $0.ddoc == MangoIndex.ddocID(ddoc!)) }
        guard let first = matches.first else { throw CBLError.notFound("no full-text index named \"\(name)\"") }
        if matches.count > 1 { throw CBLError.badRequest("full-text index \"\(name)\" is in several design documents; name one") }
        return first
    }

    /// The member of the design document's `indexes` that defines it.
    var designJSON: JSONValue {
        var index: [(key: String, value: JSONValue)] = [
            ("fields", .array(fields.map { .object(JSONObject([("name", .string($0)), ("type", .string("string"))])) })),
        ]
        if let p = partialFilter { index.append(("partial_filter_selector", p.json)) }
        return .object(JSONObject([("index", .object(JSONObject(index))), ("analyzer", analyzer.json)]))
    }

    /// The indexes a design document defines (none unless its language is "query"; an
    /// entry that is not a valid full-text index is skipped, as CouchDB skips invalid ones).
    static func from(designDocument doc: JSONObject) -> [FullTextIndex] {
        guard doc["language"] == .string("query"), let id = doc["_id"]?.stringValue,
              case .object(let indexes)? = doc["indexes"] else { return [] }
        return indexes.members.compactMap { (name, v) in try? FullTextIndex(ddoc: id, name: name, json: v) }
    }

    /// The indexes the design documents define, by design document ID then name (byte order).
    static func defined(by documents: [DesignDocument]) -> [FullTextIndex] {
        documents.flatMap { from(designDocument: $0.body) }.sorted { QueryIndexNaming.listedBefore(($0.ddoc, $0.name), ($1.ddoc, $1.name)) }
    }

    /// Reads one `indexes` member.
    init(ddoc: String, name: String, json: JSONValue) throws {
        guard case .object(let o) = json, case .object(let index)? = o["index"],
              case .array(let fs)? = index["fields"] else {
            throw CBLError.badRequest("a text index needs index.fields, an array")
        }
        let fields: [String] = try fs.map {
            switch $0 {
            case .string(let s): return s
            case .object(let f):
                guard case .string(let n)? = f["name"] else { throw CBLError.badRequest("a field needs a name") }
                if let t = f["type"], t != .string("string") { throw CBLError.badRequest("only string fields are full-text indexed") }
                return n
            default: throw CBLError.badRequest("a field is a name or {\"name\": ..., \"type\": \"string\"}")
            }
        }
        var partial: Selector? = nil
        if let p = index["partial_filter_selector"] { partial = try Selector(p) }
        try self.init(ddoc: ddoc, name: name, fields: fields, analyzer: FullTextAnalyzer(json: o["analyzer"]),
                      partialFilter: partial)
    }

    /// Its entry in listings (`GET /db/_index` shows text indexes this way).
    public var json: JSONValue {
        var def: [(key: String, value: JSONValue)] = [
            ("fields", .array(fields.map { .object(JSONObject([($0, .string("string"))])) })),
        ]
        if let p = partialFilter { def.append(("partial_filter_selector", p.json)) }
        def.append(("analyzer", analyzer.json))
        return .object(JSONObject([("ddoc", .string(ddoc)), ("name", .string(name)), ("type", .string("text")),
                                   ("partitioned", .bool(false)), ("def", .object(JSONObject(def)))]))
    }

    // MARK: its storage

    /// The name its FTS5 table is registered under (FullTextStorage): control characters
    /// keep it apart from any name a caller can give.
    var storageName: String { "\u{1}text/" + ddoc + "/" + name }

    /// A changed definition rebuilds the index.
    var version: String {
        let text = JSONWriter.canonical(.array([.array(fields.map { .string($0) }), analyzer.json, partialFilter?.json ?? .null]))
        return "text1-" + SHA1.hash(text).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// What its updater indexes of a document.
    var source: FullTextSource {
        let paths = fields.compactMap { try? FieldPath($0) }
        let partial = partialFilter
        return FullTextSource(name: storageName, columns: fields, analyzer: analyzer, version: version) { doc in
            if let partial, !partial.matches(.object(try doc.object)) { return nil }
            return try paths.map { p in
                guard case .found(let v) = try doc.withJSON({ try p.lookup(inJSON: $0) }) else { return nil }
                return FullTextSource.text(of: v)
            }
        }
    }
}
