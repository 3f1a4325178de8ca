/// The index a query runs on, chosen as CouchDB 3.5 chooses (mango_cursor, mango_idx,
/// mango_cursor_view): an index is usable when the selector requires each of its columns
/// that the sort does not name and the sort follows its columns (after columns the
/// selector holds constant); partial indexes only when `use_index` names them; `use_index`
/// picks among the usable ones (or the others are used with a warning, or it is an error
/// without `allow_fallback`); a json index beats `_all_docs`; among json indexes the
/// longest prefix of columns with ranges wins, then the fewest columns, then the name.
public struct QueryPlan {
    public let index: MangoIndex
    /// The ranges of the index's leading columns that have one.
    let ranges: [FieldRange]
    /// No value can match (an empty range): nothing is scanned.
    let empty: Bool
    let useIndexWarning: String?
    /// Each index considered, for `_explain` (made only for it): usable, why not, its ranking.
    let candidates: [(index: MangoIndex, usable: Bool, reason: String, ranking: Int)]

    static func isUsable(_ idx: MangoIndex, _ sel: Selector, _ sort: [String]) -> Bool {
        if idx.isSpecial {
            if sort.isEmpty { return true }
            return sort == ["_id"] && sel.indexableFields.contains("_id")
        }
        let required = idx.columns.filter { !sort.contains($0) && $0 != "_id" && $0 != "_rev" }
        return sel.hasRequiredFields(required) && canUseSort(idx.columns[...], sort, sel)
    }

    private static func canUseSort(_ cols: ArraySlice<String>, _ sort: [String], _ sel: Selector) -> Bool {
        if sort.isEmpty { return true }
        guard let c = cols.first else { return false }
        if c == sort[0] { return cols.starts(with: sort) }
        return sel.isConstantField(c) && canUseSort(cols.dropFirst(), sort, sel)
    }

    /// The leading columns' ranges, while they have one (`indexable`: the selector's
    /// indexable fields); nil when one is empty.
    static func prefixRanges(_ idx: MangoIndex, _ sel: Selector, indexable: Set<String>) -> [FieldRange]? {
        var out: [FieldRange] = []
        for c in idx.columns {
            guard indexable.contains(c) else { break }
            guard let r = FieldRange.of(sel, field: c) else { return nil }
            out.append(r)
        }
        return out
    }

    /// The plan of `req`; its `candidates` only when `explaining` (a find does not read them).
    static func make(_ req: FindRequest, indexes: [MangoIndex], explaining: Bool = false) throws -> QueryPlan {
        let sel = req.selector, sort = req.sort.fields
        let indexable = sel.indexableFields
        let named: (MangoIndex) -> Bool = { i in
            guard let d = req.useIndex.first else { return false }
            return i.ddoc == d && (req.useIndex.count < 2 || i.name == req.useIndex[1])
        }
        let all = [MangoIndex.special] + indexes
        // Partial indexes only when use_index names them.
        let considered = all.filter { $0.partialFilter == nil || named($0) }
        let usable = considered.filter { isUsable($0, sel, sort) }
        if usable.isEmpty { throw MangoError.noUsableIndex }
        var pool = usable.filter(named)
        var warning: String? = nil
        if !req.useIndex.isEmpty && pool.isEmpty {
            let what = req.useIndex.count == 2 ? "\(req.useIndex[0]), \(req.useIndex[1])" : req.useIndex[0]
            guard req.allowFallback else {
                throw MangoError.invalidIndex("\(what) specified by `use_index` could not be found or it is not suitable.")
            }
            warning = req.useIndex.count == 2 ? "\(what) was not used because it is not a valid index for this query."
                : "\(what) was not used because it does not contain a valid index for this query."
        }
        if pool.isEmpty { pool = usable }
        let json = pool.filter { !$0.isSpecial }
        var chosen = MangoIndex.special
        var ranges: [FieldRange] = []
        var empty = false
        // The json indexes in CouchDB's order of preference (mango_cursor_view:
        // choose_best_index): the fewest indexed fields without a range, the fewest columns,
        // then by design document and name.
        let indexableSet = Set(indexable)
        let ranked = json.map { ($0, prefixRanges($0, sel, indexable: indexableSet)) }.sorted { a, b in
            let pa = a.1?.count ?? Int.max, pb = b.1?.count ?? Int.max
            if pa != pb { return pa > pb }
            if a.0.columns.count != b.0.columns.count { return a.0.columns.count < b.0.columns.count }
            return (a.0.ddoc ?? "") + "\u{0}" + a.0.name <= (b.0.ddoc ?? "") + "\u{0}" + b.0.name
        }
        if let best = ranked.first {
            chosen = best.0
            if let r = best.1 { ranges = r } else { empty = true }
        } else if let r = FieldRange.of(sel, field: "_id") {
            ranges = [r]
        } else {
            empty = true
        }
        let candidates = !explaining ? []
            : QueryPlan.candidates(all: all, considered: considered, usable: usable, pool: pool,
                                   ranked: ranked.map { ($0.0, $0.1?.count ?? 0) }, chosen: chosen,
                                   indexable: indexable.count, sortGiven: !sort.isEmpty)
        return QueryPlan(index: chosen, ranges: ranges, empty: empty, useIndexWarning: warning, candidates: candidates)
    }

    /// `_explain`'s `index_candidates` as CouchDB 3.5 makes them (mango_cursor:
    /// extract_candidate_indexes): every index but the chosen one, each with whether it
    /// could serve, why it was not chosen, and its rank — partial indexes not named by
    /// `use_index` (is_partial), unusable ones (field_mismatch, sort_order_mismatch),
    /// usable ones `use_index` left out (excluded_by_user), `_all_docs` beside usable json
    /// indexes (unfavored_type) ranked after the json indexes, and the usable json indexes
    /// after the chosen one by their place in the order of preference (less_overlap,
    /// too_many_fields, alphabetically_comes_after). Listed as CouchDB's map of them
    /// folds: by design document then name, descending, `_all_docs` last.
    static func candidates(all: [MangoIndex], considered: [MangoIndex], usable: [MangoIndex], pool: [MangoIndex],
                           ranked: [(MangoIndex, Int)], chosen: MangoIndex, indexable: Int, sortGiven: Bool)
        -> [(index: MangoIndex, usable: Bool, reason: String, ranking: Int)] {
        func has(_ list: [MangoIndex], _ i: MangoIndex) -> Bool { list.contains { $0.ddoc == i.ddoc && $0.name == i.name } }
        let ofType = ranked.isEmpty ? pool.filter(\.isSpecial) : ranked.map(\.0)
        let partial = all.filter { !has(considered, $0) }
        let notUsable = considered.filter { !has(usable, $0) }
        let excluded = usable.filter { !has(pool, $0) }
        let unfavored = pool.filter { !has(ofType, $0) }
        let unfavoredRank = max(1, ranked.count)
        let excludedRank = unfavoredRank + (unfavored.isEmpty ? 0 : 1)
        let notUsableRank = excludedRank + (excluded.isEmpty ? 0 : 1)
        let partialRank = notUsableRank + (notUsable.isEmpty ? 0 : 1)      // no partition scopes: none out of scope
        let chosenWidth = chosen.columns.count
        var out: [(index: MangoIndex, usable: Bool, reason: String, ranking: Int)] = []
        for i in all where !(i.ddoc == chosen.ddoc && i.name == chosen.name) {
            if has(partial, i) {
                out.append((i, false, "is_partial", partialRank))
            } else if has(notUsable, i) {
                out.append((i, false, sortGiven ? "sort_order_mismatch" : "field_mismatch", notUsableRank))
            } else if has(excluded, i) {
                out.append((i, true, "excluded_by_user", excludedRank))
            } else if has(unfavored, i) {
                out.append((i, true, "unfavored_type", unfavoredRank))
            } else if let n = ranked.firstIndex(where: { $0.0.ddoc == i.ddoc && $0.0.name == i.name }) {
                let distance = indexable - ranked[n].1
                let reason = distance > 0 ? "less_overlap"
                    : (i.columns.count > chosenWidth ? "too_many_fields" : "alphabetically_comes_after")
                out.append((i, true, reason, n))
            }
        }
        return out.sorted { a, b in
            guard let da = a.index.ddoc else { return false }
            guard let db = b.index.ddoc else { return true }
            if da != db { return db.utf8.lexicographicallyPrecedes(da.utf8) }
            return b.index.name.utf8.lexicographicallyPrecedes(a.index.name.utf8)
        }
    }

    /// The key range of a json index scan (CollatableKey bytes), inclusive at both ends.
    var keyRange: QueryOptions.Range {
        var r = QueryOptions.Range()
        r.lower = IndexKeys.encode(IndexKeys.start(ranges), open: false)
        let e = IndexKeys.end(ranges)
        r.upper = IndexKeys.encode(e.values, open: e.open)
        return r
    }

    /// The document-ID bounds of an `_all_docs` scan (inclusive; the selector checks the rest).
    var idBounds: (lower: String?, upper: String?) {
        guard index.isSpecial, let r = ranges.first else { return (nil, nil) }
        return (r.low.json?.stringValue, r.high.json?.stringValue)
    }
}
