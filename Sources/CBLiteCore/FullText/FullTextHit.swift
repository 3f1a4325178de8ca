/// One document a search found.
public struct FullTextHit: Sendable, Equatable {
    public let docID: String
    /// The document's sequence when it was indexed.
    public let sequence: Int64
    /// BM25 relevance: higher is better (comparable within one search only).
    public let score: Double
    /// The matched fields' snippets, the matched terms highlighted, in the index's field order.
    public let snippets: [(field: String, text: String)]
    /// The document's JSON, when asked for.
    public let document: [UInt8]?
    /// The hit's values of the request's `sort` fields (nil: it has none).
    public var sortValues: [FullTextValue?] = []

    public static func == (a: FullTextHit, b: FullTextHit) -> Bool {
        a.docID == b.docID && a.score == b.score && a.document == b.document
            && a.snippets.map(\.field) == b.snippets.map(\.field) && a.snippets.map(\.text) == b.snippets.map(\.text)
    }
}

extension FullTextHit {
    /// The hit as JSON: {"id", "score", "snippets": {field: text}, "doc"?}.
    public var json: JSONValue {
        var m: [(key: String, value: JSONValue)] = [("id", .string(docID)), ("score", .double(score)),
                                                    ("snippets", .object(JSONObject(snippets.map { ($0.field, .string($0.text)) })))]
        if let d = document, let v = try? d.withUnsafeBufferPointer({ try JSONParser.parse(bytes: $0) }) { m.append(("doc", v)) }
        return .object(JSONObject(m))
    }
}
