/// A Nouveau index of a design document, CouchDB 3.5's shape —
///
///     "nouveau": {"NAME": {"index": "function (doc) { index('text', 'title', doc.title, {store: true}); }",
///                          "default_analyzer": "standard", "field_analyzers": {...}}}
///
/// — searched on the full-text engine (FullTextSource): its index function runs in the
/// design document's pooled JavaScript contexts (the prelude's `index()` collects the
/// fields) and each `text` or `string` field becomes a column (`title:coffee`); `double`
/// and `string` fields' values are also stored as values (FullTextValue: ranges such as
/// `year:[2000 TO *]`, `year:2001`, sorting). The fields are those the function's
/// `index()` calls name with string literals, read from its source: FTS5's columns are
/// fixed per index version, and a changed function is a new version (a rebuild). One analyzer serves the whole index (FTS5
/// has one tokenizer per table): `default_analyzer`; `field_analyzers` must agree with it.
public struct NouveauIndex: Sendable {
    public let ddoc: DesignDocument
    public let name: String
    /// The index function's source.
    public let function: String
    public let analyzer: FullTextAnalyzer
    /// The text fields, in the order the function names them.
    public let columns: [String]
    /// The `double` fields (numbers) and the `string` fields (whole strings), in that order.
    public let valueFields: [FullTextValueField]

    /// The index `name` of the design document; 404 when it has none of that name, 400 when
    /// its definition is not one cblite can run.
    public init(_ ddoc: DesignDocument, name: String) throws {
        guard ddoc.language == "javascript", case .object(let def)? = ddoc.body["nouveau"]?.objectValue?[name] else {
            throw CBLError.notFound("missing")
        }
        guard case .string(let function)? = def["index"] else { throw CBLError.badRequest("nouveau index \(name) has no index function") }
        let analyzer = try NouveauIndex.analyzer(def["default_analyzer"])
        if case .object(let per)? = def["field_analyzers"] {
            for (field, a) in per.members where try NouveauIndex.analyzer(a) != analyzer {
                throw CBLError.badRequest("field_analyzers.\(field): one analyzer serves every field of a cblite nouveau index (its default_analyzer)")
            }
        }
        self.ddoc = ddoc
        self.name = name
        self.function = function
        self.analyzer = analyzer
        let fields = NouveauIndex.fields(in: function)
        self.columns = fields.filter { $0.type == "text" || $0.type == "string" }.map(\.name)
        self.valueFields = fields.filter { $0.type == "double" }.map { FullTextValueField($0.name, numeric: true) }
            + fields.filter { $0.type == "string" }.map { FullTextValueField($0.name, numeric: false) }
    }

    /// CouchDB's analyzer names: "standard" (and "simple", "keyword", "whitespace", all
    /// read as the standard one) or "english" (stemming, stop words).
    static func analyzer(_ v: JSONValue?) throws -> FullTextAnalyzer {
        switch v {
        case nil, .null?: return FullTextAnalyzer()
        case .string(let n)? where ["simple", "keyword", "whitespace"].contains(n): return FullTextAnalyzer()
        default: return try FullTextAnalyzer(json: v)
        }
    }

    /// The field names of `index('text'|'string', 'NAME', ...)` calls written with literals.
    static func fieldNames(in source: String) -> [String] {
        fields(in: source).filter { $0.type == "text" || $0.type == "string" }.map(\.name)
    }

    /// The (type, name) of `index('text'|'string'|'double', 'NAME', ...)` calls written with
    /// literals, in order (a name given another type again keeps its first).
    static func fields(in source: String) -> [(type: String, name: String)] {
        let s = Array(source.unicodeScalars)
        var out: [(type: String, name: String)] = []
        var i = 0
        func skipSpace() { while i < s.count, s[i].properties.isWhitespace { i += 1 } }
        func literal() -> String? {
            guard i < s.count, s[i] == "'" || s[i] == "\"" else { return nil }
            let q = s[i]
            var t = ""
            i += 1
            while i < s.count, s[i] != q {
                if s[i] == "\\", i + 1 < s.count { i += 1 }
                t.unicodeScalars.append(s[i])
                i += 1
            }
            i += 1
            return t
        }
        let word = Array("index".unicodeScalars)
        while i + word.count < s.count {
            let boundary = i == 0 || !(s[i - 1].properties.isAlphabetic || s[i - 1] == "_" || s[i - 1] == "." || s[i - 1] == "$")
            guard boundary, Array(s[i..<i + word.count]) == word else { i += 1; continue }
            i += word.count
            skipSpace()
            guard i < s.count, s[i] == "(" else { continue }
            i += 1
            skipSpace()
            guard let type = literal(), ["text", "string", "double"].contains(type) else { continue }
            skipSpace()
            guard i < s.count, s[i] == "," else { continue }
            i += 1
            skipSpace()
            if let field = literal(), !field.isEmpty, !out.contains(where: { $0.name == field }) { out.append((type, field)) }
        }
        return out
    }

    /// The storage name (a control character keeps it apart from any index name).
    var storageName: String { "\u{1}nouveau/" + ddoc.id + "/" + name }

    /// Changes with the function and the analyzer: the index is rebuilt then.
    var version: String {
        let text = JSONWriter.canonical(.array([.string(function), analyzer.json]))
        return "nouveau1-" + Hex.encode(SHA256.hash(text))
    }

    /// The fields the function gives a document: [type, name, value, options] rows; nil
    /// when it failed on it (the document is left out, as CouchDB leaves it out, and logged).
    func fields(_ docJSON: [UInt8], docID: String) throws -> [JSONValue]? {
        let args = JSONWriter.ordered(.string(name)).prepending("[") + Array(",".utf8) + docJSON + Array("]".utf8)
        let out: [UInt8]
        do {
            out = try ddoc.withEngine { try $0.call("__cbl_nouveau", argumentsJSON: args) }
        } catch let failure as JSFailure {
            Loggers.query.warning("\(ddoc.id)/_nouveau/\(name): the index function failed on document \"\(docID)\", which the index skips: \(failure)")
            return nil
        }
        guard case .array(let rows) = try out.withUnsafeBufferPointer({ try JSONParser.parse(bytes: $0) }) else { return [] }
        return rows
    }

    /// What the full-text engine stores of each document.
    public var source: FullTextSource {
        let index = self
        return FullTextSource(name: storageName, columns: columns, analyzer: analyzer, version: version, valueFields: valueFields) { doc in
            guard let rows = try index.fields(doc.json, docID: doc.docID) else { return nil }
            return index.row(rows)
        }
    }

    /// A document's row from its `fields` rows: texts by column, values by value field (a
    /// `double` field's numbers, a `string` field's strings).
    func row(_ rows: [JSONValue]) -> FullTextRow {
        var out = FullTextRow(texts: [String?](repeating: nil, count: columns.count))
        for case .array(let r) in rows where r.count == 4 {
            guard case .string(let type) = r[0], case .string(let field) = r[1] else { continue }
            if type == "text" || type == "string", let c = columns.firstIndex(of: field), let t = FullTextSource.text(of: r[2]) {
                out.texts[c] = out.texts[c].map { $0 + "\n" + t } ?? t
            }
            guard let v = valueFields.firstIndex(where: { $0.name == field && $0.numeric == (type == "double") }) else { continue }
            switch r[2] {
            case .int(let n) where type == "double": out.values.append((v, .number(Double(n))))
            case .double(let d) where type == "double": out.values.append((v, .number(d)))
            case .string(let t) where type == "string": out.values.append((v, .string(t)))
            default: continue
            }
        }
        return out
    }

    /// The stored fields among a document's `fields` rows (`{store: true}`, and `stored`
    /// fields), as a hit's `fields`.
    static func storedFields(_ rows: [JSONValue]) -> JSONObject {
        var out = JSONObject()
        for case .array(let r) in rows where r.count == 4 {
            guard case .string(let type) = r[0], case .string(let field) = r[1] else { continue }
            if type == "stored" || r[3].objectValue?["store"] == .bool(true) { out[field] = r[2] }
        }
        return out
    }
}

private extension Array where Element == UInt8 {
    func prepending(_ s: String) -> [UInt8] { Array(s.utf8) + self }
}
