/// The JSON form of a full-text index definition that the C ABI, the tool and Python
/// take (one reader for all):
///
///     {"name": "n", "ddoc": "d"?, "fields": ["title", "body"],
///      "analyzer": "english" | {"fold_diacritics": true, "stemming": false, "stop_words": [...]}?,
///      "partial_filter_selector": {...}?}
///
/// Without "ddoc" the design document is `_design/<name>`.
extension FullTextIndex {
    public init(definition json: JSONValue) throws {
        guard case .object(let o) = json else { throw CBLError.badRequest("a full-text index definition is a JSON object") }
        for (k, _) in o.members where !["name", "ddoc", "fields", "analyzer", "partial_filter_selector"].contains(k) {
            throw CBLError.badRequest("invalid key in a full-text index definition: \(k)")
        }
        guard case .string(let name)? = o["name"] else { throw CBLError.badRequest("a full-text index needs a \"name\" (a string)") }
        var ddoc = name
        if let d = o["ddoc"] {
            guard case .string(let s) = d, !s.isEmpty else { throw CBLError.badRequest("\"ddoc\" must be a non-empty string") }
            ddoc = s
        }
        guard case .array(let fs)? = o["fields"], !fs.isEmpty else {
            throw CBLError.badRequest("a full-text index needs \"fields\", a non-empty array of field names")
        }
        let fields: [String] = try fs.map {
            guard case .string(let s) = $0 else { throw CBLError.badRequest("\"fields\" must hold strings") }
            return s
        }
        let partial = try o["partial_filter_selector"].map { v in
            do { return try Selector(v) } catch let e as MangoError { throw e.cblError }
        }
        try self.init(ddoc: ddoc, name: name, fields: fields, analyzer: FullTextAnalyzer(json: o["analyzer"]), partialFilter: partial)
    }
}
