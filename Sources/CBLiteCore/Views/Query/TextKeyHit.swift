/// How a text key matched a view's full-text query (QueryOptions.fullTextQuery): what
/// Couchbase Lite 1.x's CBLFullTextQueryRow told. A full-text query's row carries it as its
/// key (the JSON of `json`), its value and document being the row's as emitted:
///
///     {"text": "the emitted text", "score": 1.25,
///      "matches": [{"term": 0, "range": [4, 6]}, ...], "snippet": "…<b>coffee</b>…" | null}
///
/// `matches`: every matched word of the text, in text order; `term` numbers the query's
/// words from 0 in the order they appear in the query (after analysis: stop words
/// dropped, a repeated word keeping its first number; a phrase's words each have one);
/// `range`: [start, length] in UTF-8 bytes of `text` (the C ABI's unit; bindings convert).
public struct TextKeyHit: Sendable, Equatable {
    public struct Match: Sendable, Equatable {
        /// The matched word of the query.
        public let term: Int
        /// UTF-8 byte offsets in the text.
        public let range: Range<Int>

        public init(term: Int, range: Range<Int>) {
            self.term = term
            self.range = range
        }
    }

    /// The text the map function emitted (Emitter.emit(text:)).
    public let text: String
    /// BM25 relevance: higher is better (comparable within one query only).
    public let score: Double
    public let matches: [Match]
    /// The text around the matches, marked (QueryOptions.fullTextSnippets); nil when not asked.
    public let snippet: String?

    public init(text: String, score: Double, matches: [Match], snippet: String?) {
        self.text = text
        self.score = score
        self.matches = matches
        self.snippet = snippet
    }

    /// The number of matched words (Couchbase Lite 1.x's matchCount: every occurrence, as
    /// its rows counted them).
    public var matchCount: Int { matches.count }

    /// The text a match covers.
    public func matchedText(_ i: Int) -> String {
        let r = matches[i].range
        return String(decoding: Array(text.utf8)[r], as: UTF8.self)
    }

    public var json: JSONValue {
        let ms: [JSONValue] = matches.map {
            .object(JSONObject([("term", .int(Int64($0.term))),
                                ("range", .array([.int(Int64($0.range.lowerBound)), .int(Int64($0.range.count))]))]))
        }
        return .object(JSONObject([("text", .string(text)), ("score", .double(score)), ("matches", .array(ms)),
                                   ("snippet", snippet.map { .string($0) } ?? .null)]))
    }

    /// Reads the JSON form (a full-text query row's key).
    public init(json: JSONValue) throws {
        func bad() -> CBLError { CBLError.badRequest("not a full-text match") }
        guard case .object(let o) = json, case .string(let text)? = o["text"], case .array(let ms)? = o["matches"] else { throw bad() }
        let score: Double
        switch o["score"] {
        case .double(let d)?: score = d
        case .int(let i)?: score = Double(i)
        default: throw bad()
        }
        let matches: [Match] = try ms.map { m in
            guard case .object(let mo) = m, case .int(let t)? = mo["term"], case .array(let r)? = mo["range"], r.count == 2,
                  case .int(let start) = r[0], case .int(let length) = r[1], start >= 0, length >= 0 else { throw bad() }
            return Match(term: Int(t), range: Int(start)..<Int(start + length))
        }
        self.init(text: text, score: score, matches: matches, snippet: o["snippet"]?.stringValue)
    }

    /// The match of a full-text query's row.
    public init(row: QueryRow) throws {
        try self.init(json: row.key.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) })
    }

    /// Reads cblite_matches' "term start length" triples.
    static func matches(_ triples: String) -> [Match] {
        let n = triples.split(separator: " ").compactMap { Int($0) }
        return stride(from: 0, to: n.count - 2, by: 3).map { Match(term: n[$0], range: n[$0 + 1]..<(n[$0 + 1] + n[$0 + 2])) }
    }
}
