/// How a parsed query runs on FullTextStorage: its text part as one FTS5 MATCH (ranked
/// by BM25) and its value conditions (ranges, a number field's value) as SQL over the
/// stored values, AND-ed with it. A query whose top level (its AND-ed and excluded parts)
/// has no text has no MATCH: every hit scores alike (1, as Lucene's constant score for a
/// range); text under an OR with value conditions is a MATCH sub-query that does not rank.
struct FullTextQueryPlan {
    /// The FTS5 query of the ranked text part; nil when there is none.
    let match: String?
    /// The rest, for SQL; nil when there is none.
    let condition: FullTextStorage.Condition?

    /// `fields`: the index's columns; `only`: the columns unscoped terms are limited to
    /// (nil: all); `values`: the source's value fields.
    init(_ query: FullTextQuery, fields: [String], only: [String]?, values: [FullTextValueField]) {
        guard query.hasValues else {
            match = query.fts5(fields: fields, only: only)
            condition = nil
            return
        }
        func text(_ q: FullTextQuery) -> String { q.fts5(fields: fields, only: only) }
        func value(_ f: String) -> Int { values.firstIndex { $0.name == f } ?? -1 }
        func sql(_ q: FullTextQuery, scope: String?) -> FullTextStorage.Condition {
            if !q.hasValues { return .match(text(scope.map { .field($0, q) } ?? q)) }
            switch q {
            case .range(let f, let lower, let upper): return .range(field: value(f), lower: lower, upper: upper)
            case .value(let f, let v): return .range(field: value(f), lower: FullTextBound(v, inclusive: true), upper: FullTextBound(v, inclusive: true))
            case .and(let xs): return .and(xs.map { sql($0, scope: scope) })
            case .or(let xs): return .or(xs.map { sql($0, scope: scope) })
            case .not(let a, let b): return .and([sql(a, scope: scope), .not(sql(b, scope: scope))])
            case .field(let f, let x): return sql(x, scope: f)
            case .phrase, .near: return .match(text(q))           // no values: handled above
            }
        }
        // The top level's parts: AND-ed ones, and excluded ones (a NOT's right side).
        var parts: [(q: FullTextQuery, excluded: Bool)] = []
        func flatten(_ q: FullTextQuery, excluded: Bool) {
            switch q {
            case .and(let xs) where !excluded: xs.forEach { flatten($0, excluded: false) }
            case .not(let a, let b) where !excluded:
                flatten(a, excluded: false)
                parts.append((b, true))
            default: parts.append((q, excluded))
            }
        }
        flatten(query, excluded: false)
        let ranked = parts.filter { !$0.excluded && !$0.q.hasValues }.map(\.q)
        var rest: [FullTextStorage.Condition] = []
        var matchText: String? = ranked.isEmpty ? nil : text(ranked.count == 1 ? ranked[0] : .and(ranked))
        for (q, excluded) in parts where q.hasValues || (excluded && ranked.isEmpty) {
            let c = sql(q, scope: nil)
            rest.append(excluded ? .not(c) : c)
        }
        // Excluded text goes into the MATCH when there is one (FTS5's binary NOT).
        for (q, excluded) in parts where excluded && !q.hasValues && !ranked.isEmpty {
            matchText = "(" + matchText! + ") NOT (" + text(q) + ")"
        }
        match = matchText
        condition = rest.isEmpty ? nil : (rest.count == 1 ? rest[0] : .and(rest))
    }
}
