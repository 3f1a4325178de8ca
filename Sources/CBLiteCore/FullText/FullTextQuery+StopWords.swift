extension FullTextQuery {
    /// The query with its stop-word terms left out, as Couchbase Lite 1.x ignored "noise
    /// words" in a view's full-text query (FTS5 would make such a term match nothing, and
    /// an AND holding one too): a term or phrase all of whose words are stop words goes,
    /// and the operators around it close up (AND, OR and NEAR keep the rest, NOT keeps its
    /// left side). nil when nothing is left. Words are compared lower-cased (the stop-word
    /// tokenizer compares them folded by the analyzer: words with diacritics in the list
    /// are matched only by the tokenizer, within phrases). A prefix is never a stop word.
    func droppingStopWords(_ stopWords: [String]) -> FullTextQuery? {
        let stop = Set(stopWords.map { $0.lowercased() })
        return stop.isEmpty ? self : dropping(stop)
    }

    private func dropping(_ stop: Set<String>) -> FullTextQuery? {
        switch self {
        case .phrase(let s, let prefix):
            if prefix { return self }
            let words = s.split { !($0.isLetter || $0.isNumber) }.map { $0.lowercased() }
            return !words.isEmpty && words.allSatisfy(stop.contains) ? nil : self
        case .and(let xs):
            let kept = xs.compactMap { $0.dropping(stop) }
            return kept.count > 1 ? .and(kept) : kept.first
        case .or(let xs):
            let kept = xs.compactMap { $0.dropping(stop) }
            return kept.count > 1 ? .or(kept) : kept.first
        case .not(let a, let b):
            guard let a = a.dropping(stop) else { return nil }
            return b.dropping(stop).map { .not(a, $0) } ?? a
        case .near(let xs, let d):
            let kept = xs.compactMap { $0.dropping(stop) }
            return kept.count > 1 ? .near(kept, distance: d) : kept.first
        case .field(let f, let x):
            return x.dropping(stop).map { .field(f, $0) }
        case .range, .value:
            return self                 // conditions on stored values: no words
        }
    }
}
