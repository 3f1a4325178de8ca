/// The JSON form of a search that the C ABI, the tool and Python take:
///
///     {"query": "coffee NEAR milk", "fields": ["title"]?, "selector": {...}?,
///      "limit": 25?, "skip": 0?, "bookmark": "..."?, "include_docs": false?,
///      "snippets": true | false | {"open": "<b>", "close": "</b>", "ellipsis": "…", "tokens": 16}?}
///
/// "limit" is 25 when absent, as CouchDB's searches and _find (a result is held whole).
extension FullTextSearchRequest {
    public static let defaultJSONLimit = 25

    public init(json: JSONValue) throws {
        guard case .object(let o) = json else { throw CBLError.badRequest("a search request is a JSON object") }
        for (k, _) in o.members where !["query", "fields", "selector", "limit", "skip", "bookmark", "include_docs", "snippets", "ddoc"].contains(k) {
            throw CBLError.badRequest("invalid key in a search request: \(k)")
        }
        guard case .string(let q)? = o["query"] else { throw CBLError.badRequest("a search needs a \"query\" (a string)") }
        self.init(query: q, limit: FullTextSearchRequest.defaultJSONLimit)
        if let v = o["fields"] {
            let names = v.arrayValue?.compactMap(\.stringValue)
            guard let names, names.count == v.arrayValue?.count else {
                throw CBLError.badRequest("\"fields\" must be an array of field names")
            }
            fields = names
        }
        if let v = o["selector"] {
            do { selector = try Selector(v) } catch let e as MangoError { throw e.cblError }
            if selector!.isEmpty { selector = nil }
        }
        func count(_ k: String) throws -> Int? {
            guard let v = o[k] else { return nil }
            guard case .int(let i) = v, i >= 0, i <= Int64(Int32.max) else { throw CBLError.badRequest("\"\(k)\" must be a whole number ≥ 0") }
            return Int(i)
        }
        if let l = try count("limit") { limit = l }
        skip = try count("skip") ?? 0
        if let v = o["bookmark"], v != .null {
            guard case .string(let b) = v else { throw CBLError.badRequest("\"bookmark\" must be a string") }
            bookmark = b
        }
        if let v = o["include_docs"] {
            guard case .bool(let b) = v else { throw CBLError.badRequest("\"include_docs\" must be true or false") }
            includeDocs = b
        }
        if let v = o["snippets"] { snippets = try FullTextSnippetStyle(option: v, name: "snippets") }
    }

    /// The design document a JSON request names ("ddoc"), if any.
    public static func ddoc(in json: JSONValue) -> String? { json.objectValue?["ddoc"]?.stringValue }
}
