/// How a full-text index cuts text into terms, the same way for the documents and for
/// the queries (FTS5 runs one tokenizer over both): Unicode words (FTS5's unicode61),
/// folded to lower case and stripped of diacritics by default; optionally stemmed with
/// Porter's English stemmer and with stop words left out (cblite_stop, a tokenizer
/// of ours: FTS5 has no stop words; Sources/CSQLCipher/include/cblite_fts.h).
public struct FullTextAnalyzer: Sendable, Equatable {
    /// Letters compared without their diacritics ("café" matches "cafe"; unicode61 folds
    /// those of Latin letters only). Words are cut at Unicode separators and punctuation:
    /// scripts written without spaces (Chinese, Japanese) are not split into words.
    public var foldDiacritics: Bool
    /// English stemming ("running" matches "runs").
    public var stemming: Bool
    /// Words never indexed nor searched, compared after folding.
    public var stopWords: [String]

    public init(foldDiacritics: Bool = true, stemming: Bool = false, stopWords: [String] = []) {
        self.foldDiacritics = foldDiacritics
        self.stemming = stemming
        self.stopWords = stopWords
    }

    /// A short English stop-word list, for callers that want one (nothing uses it by default).
    public static let englishStopWords = ["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
                                          "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
                                          "their", "then", "there", "these", "they", "this", "to", "was", "will", "with"]

    /// Stop words are single words without quotes or control characters (they go into
    /// the table's declaration).
    func validate() throws {
        for w in stopWords where w.isEmpty || w.contains(where: { $0.isWhitespace || $0 == "'" || $0 == "\"" || $0.asciiValue.map { $0 < 32 } ?? false }) {
            throw CBLError.badRequest("invalid stop word: \(w)")
        }
    }

    /// The FTS5 `tokenize` option's value (stop words under porter: they are matched
    /// before stemming).
    var tokenizeOption: String {
        var parts: [String] = []
        if stemming { parts.append("porter") }
        if !stopWords.isEmpty { parts.append("cblite_stop '\(stopWords.joined(separator: " "))'") }
        parts.append("unicode61 remove_diacritics \(foldDiacritics ? 2 : 0)")
        return parts.joined(separator: " ")
    }

    /// The `tokenize=...` argument of an FTS5 table's declaration.
    var fts5TokenizeArgument: String { "tokenize='" + tokenizeOption.replacing("'", with: "''") + "'" }

    /// Couchbase Lite 1.x's analysis of a view's text keys: folded, English stemming,
    /// English stop words.
    public static let textKeyDefault = FullTextAnalyzer(stemming: true, stopWords: englishStopWords)

    /// Its form in a design document's `analyzer` member.
    var json: JSONValue {
        .object(JSONObject([("name", .string("cblite")), ("fold_diacritics", .bool(foldDiacritics)),
                            ("stemming", .bool(stemming)), ("stop_words", .array(stopWords.map { .string($0) }))]))
    }

    /// Reads an `analyzer` member: cblite's own object, or CouchDB's analyzer names
    /// ("standard" and "english": Lucene's English analyzer stems and drops stop words).
    public init(json: JSONValue?) throws {
        self.init()
        switch json {
        case nil, .null: return
        case .string(let name)?: try self.init(named: name)
        case .object(let o)?:
            if case .string(let name)? = o["name"], name != "cblite" { try self.init(named: name); return }
            for (k, v) in o.members {
                switch (k, v) {
                case ("name", _): continue
                case ("fold_diacritics", .bool(let b)): foldDiacritics = b
                case ("stemming", .bool(let b)): stemming = b
                case ("stop_words", .array(let a)):
                    stopWords = try a.map {
                        guard case .string(let s) = $0 else { throw CBLError.badRequest("stop_words must be strings") }
                        return s
                    }
                default: throw CBLError.badRequest("invalid analyzer option: \(k)")
                }
            }
        default: throw CBLError.badRequest("analyzer must be a name or an object")
        }
        try validate()
    }

    private init(named name: String) throws {
        switch name {
        // "perfield": CouchDB's default for a text index (standard analysis of the text).
        case "standard", "simple", "perfield": self.init()
        case "english": self.init(stemming: true, stopWords: FullTextAnalyzer.englishStopWords)
        default: throw CBLError.badRequest("unknown analyzer: \(name)")
        }
    }
}
