/// A parsed full-text query. The syntax (checked here, so that a mistake is reported
/// with its position in our words before FTS5 sees anything):
///
///     coffee milk            both terms (AND is implied)
///     coffee AND milk        both; OR: either; a NOT b: a without b (NOT needs a left side)
///     "flat white"           a phrase; data* : a prefix ("flat wh"* too)
///     coffee NEAR milk       within 10 terms of each other; NEAR/3: within 3;
///     NEAR(coffee milk tea, 5)   FTS5's form
///     title:coffee           a term, phrase or (group) in one field only
///     +coffee -decaf         Lucene's required and excluded terms (a query that only excludes is an error)
///     ( ... )                grouping
///
/// Operators are upper-case (lower-case "and" is a term). Precedence, loosest first: OR,
/// AND, NOT, NEAR. Terms and phrases are tokenized by the index's analyzer, as documents are.
public indirect enum FullTextQuery: Equatable, Sendable {
    /// Words to match in sequence (one word: a term); `prefix`: the last one is a prefix.
    case phrase(String, prefix: Bool)
    case and([FullTextQuery])
    case or([FullTextQuery])
    /// Matches of the first that do not match the second.
    case not(FullTextQuery, FullTextQuery)
    /// Phrases within `distance` terms of each other.
    case near([FullTextQuery], distance: Int)
    /// A query limited to one field (a name the index's fields list).
    case field(String, FullTextQuery)
    /// Documents whose stored value of a value field (FullTextSource.valueFields) lies
    /// within the bounds (nil: open), Lucene's `year:[2000 TO *]`, `title:{a TO b]`.
    case range(String, lower: FullTextBound?, upper: FullTextBound?)
    /// Documents with this stored value of a value field (`year:2001` on a number field).
    case value(String, FullTextValue)

    public static let defaultNearDistance = 10

    /// Parses a query; `fields`: the index's field names, which field-scoped terms must name.
    public init(_ text: String, fields: [String]) throws {
        var p = FullTextQueryParser(text, fields: fields)
        self = try p.parse()
    }

    /// Parses a query in Lucene's syntax (`FullTextQueryParser.Lucene`): `fields` as above,
    /// `numbers` and `strings` the value fields compared as numbers or whole strings.
    public init(lucene text: String, fields: [String], numbers: [String], strings: [String]) throws {
        var p = FullTextQueryParser(text, fields: fields, lucene: .init(numbers: numbers, strings: strings))
        self = try p.parse()
    }

    /// The FTS5 query string, columns named as FullTextStorage names them; `fields`: the
    /// index's field names, `only`: the fields unscoped terms are limited to (nil: all).
    func fts5(fields: [String], only: [String]? = nil) -> String {
        let body = render(fields)
        guard let only else { return body }
        let cols = only.compactMap { fields.firstIndex(of: $0) }.map(FullTextStorage.columnName).joined(separator: " ")
        return "{\(cols)} : (\(body))"
    }

    private func render(_ fields: [String]) -> String {
        switch self {
        case .phrase(let s, let prefix):
            return "\"" + s.replacing("\"", with: "\"\"") + "\"" + (prefix ? " *" : "")
        case .and(let xs): return "(" + xs.map { $0.render(fields) }.joined(separator: " AND ") + ")"
        case .or(let xs): return "(" + xs.map { $0.render(fields) }.joined(separator: " OR ") + ")"
        case .not(let a, let b): return "(" + a.render(fields) + " NOT " + b.render(fields) + ")"
        case .near(let xs, let d): return "NEAR(" + xs.map { $0.render(fields) }.joined(separator: " ") + ", \(d))"
        case .field(let f, let x):
            let col = FullTextStorage.columnName(fields.firstIndex(of: f) ?? 0)
            if case .phrase = x { return "{\(col)} : " + x.render(fields) }
            if case .near = x { return "{\(col)} : " + x.render(fields) }
            return "{\(col)} : (" + x.render(fields) + ")"
        case .range, .value:
            preconditionFailure("value conditions are not FTS5 syntax (FullTextQueryPlan takes them out)")
        }
    }

    /// Whether the query compares stored values anywhere (then FullTextQueryPlan splits it).
    var hasValues: Bool {
        switch self {
        case .phrase: return false
        case .range, .value: return true
        case .and(let xs), .or(let xs), .near(let xs, _): return xs.contains { $0.hasValues }
        case .not(let a, let b): return a.hasValues || b.hasValues
        case .field(_, let x): return x.hasValues
        }
    }

    /// The field names a query scopes terms to (checked against the index by the parser).
    public var scopedFields: [String] {
        switch self {
        case .phrase: return []
        case .and(let xs), .or(let xs), .near(let xs, _): return xs.flatMap(\.scopedFields)
        case .not(let a, let b): return a.scopedFields + b.scopedFields
        case .field(let f, let x): return [f] + x.scopedFields
        case .range(let f, _, _), .value(let f, _): return [f]
        }
    }
}

/// One end of a range: the value and whether it is included (`[`, `]`) or not (`{`, `}`).
public struct FullTextBound: Equatable, Sendable {
    public let value: FullTextValue
    public let inclusive: Bool

    public init(_ value: FullTextValue, inclusive: Bool) {
        self.value = value
        self.inclusive = inclusive
    }
}
