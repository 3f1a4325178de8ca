/// The part of a selector a json index's row key decides: the comparisons ($lt $lte $eq
/// $ne $gte $gt) and `$exists: true` on the index's columns at the selector's top level
/// (its `$and`). They are checked on the row's CollatableKey before its document is read
/// — a row they reject costs no read — and not again on the document, which is checked
/// against the rest (`residual`) only; a selector that is all key conditions (an
/// equality or a range) is not evaluated on documents at all.
///
/// Exact because a row's key is the document's values when it was indexed, compared in
/// the order `Selector.cmp` compares them (CollatableKey: ICU's sort keys order strings as
/// its comparison does; numbers as doubles, -0 as 0; the rest by their keys). A document
/// read at a later revision than the row's (its sequence changed) is checked against the
/// whole selector instead. `_id` and `_rev` compare raw (RawOrder), so they are left to
/// the residual.
struct KeyFilter {
    private struct Check {
        let column: Int
        let op: Op
        let operand: [UInt8]            // CollatableKey.encodeItem of the operand
    }
    private enum Op { case lt, lte, eq, ne, gte, gt, exists }

    private let checks: [Check]
    /// The keys (CollatableKey) outside which a condition on the first column rejects every
    /// row: at least `lower`, below `upper` (see `split`).
    private let bounds: (lower: [UInt8]?, upper: [UInt8]?)
    /// `upper` is an open key (`[X, <above every value>]`), which no stored key equals.
    private let upperIsOpen: Bool
    /// Every row within the bounds passes every check: the checks are the first column's
    /// comparisons (not `$ne`) and `$exists`, which the bounds are exactly.
    let boundsDecide: Bool
    let residual: Selector.Node
    /// The residual matches every document.
    let residualIsEmpty: Bool

    /// nil when no condition is decided by the key (the whole selector is the residual).
    init?(_ selector: Selector, columns: [String]) {
        let items: [Selector.Node]
        switch selector.root {
        case .and(let a): items = a
        case .field: items = [selector.root]
        default: return nil
        }
        var checks: [Check] = []
        var rest: [Selector.Node] = []
        var lower: [UInt8]?, upper: [UInt8]?, upperIsOpen = false
        for item in items {
            guard case .field(let p?, let c) = item, p.text != "_id", p.text != "_rev",
                  let column = columns.firstIndex(of: p.text), let check = KeyFilter.check(column, c) else {
                rest.append(item)
                continue
            }
            checks.append(check)
            if column == 0 { KeyFilter.narrow(&lower, &upper, &upperIsOpen, c) }
        }
        guard !checks.isEmpty else { return nil }
        self.checks = checks
        bounds = (lower, upper)
        self.upperIsOpen = upperIsOpen
        boundsDecide = checks.allSatisfy { $0.op == .exists || ($0.column == 0 && $0.op != .ne) }
        residual = rest.isEmpty ? .all : (rest.count == 1 ? rest[0] : .and(rest))
        residualIsEmpty = rest.isEmpty
    }

    private static func check(_ column: Int, _ c: Selector.Condition) -> Check? {
        func make(_ op: Op, _ o: Selector.Operand) -> Check { Check(column: column, op: op, operand: CollatableKey.encodeItem(o.value)) }
        switch c {
        case .lt(let o): return make(.lt, o)
        case .lte(let o): return make(.lte, o)
        case .eq(let o): return make(.eq, o)
        case .ne(let o): return make(.ne, o)
        case .gte(let o): return make(.gte, o)
        case .gt(let o): return make(.gt, o)
        case .exists(true): return Check(column: column, op: .exists, operand: [])   // every indexed document has its columns
        default: return nil
        }
    }

    /// Narrows the keys a first column's condition accepts: item 0 below X is every key
    /// below `[X]`; above X, every key above `[X, <above every value>]`.
    private static func narrow(_ lower: inout [UInt8]?, _ upper: inout [UInt8]?, _ upperIsOpen: inout Bool,
                               _ c: Selector.Condition) {
        func exactly(_ o: Selector.Operand) -> [UInt8] { CollatableKey.encode(.array([o.value])) }
        func above(_ o: Selector.Operand) -> [UInt8] { IndexKeys.encode([o.value], open: true) }
        func atLeast(_ k: [UInt8]) { if lower.map({ CollatableKey.compare(k, $0) > 0 }) ?? true { lower = k } }
        func below(_ k: [UInt8], open: Bool) {
            if upper.map({ CollatableKey.compare(k, $0) < 0 }) ?? true { upper = k; upperIsOpen = open }
        }
        switch c {
        case .lt(let o): below(exactly(o), open: false)
        case .lte(let o): below(above(o), open: true)
        case .eq(let o): atLeast(exactly(o)); below(above(o), open: true)
        case .gte(let o): atLeast(exactly(o))
        case .gt(let o): atLeast(above(o))
        default: break
        }
    }

    /// A scan range split by the bounds, in key order: the rows `below` the lower bound and
    /// `above` the upper one are rejected by the filter whatever their keys hold, and need
    /// not be read, only counted (CouchDB examines a range's every row: a `$lt 40`'s scan
    /// ends after the rows of `[40]`, and its `total_keys_examined` counts them); the rows
    /// `within` are read. nil for a part that holds no row. Within and the parts are each
    /// the range intersected with a side of a bound, so they are disjoint when the bounds
    /// are ordered; bounds that admit no key make the whole range a part (`below`).
    func split(_ range: QueryOptions.Range) -> (below: QueryOptions.Range?, within: QueryOptions.Range?,
                                                 above: QueryOptions.Range?) {
        let (lower, upper) = bounds
        if let lower, let upper, CollatableKey.compare(lower, upper) >= 0 { return (range, nil, nil) }
        var within = range, below: QueryOptions.Range?, above: QueryOptions.Range?
        if let lower, range.lower.map({ CollatableKey.compare(lower, $0) > 0 }) ?? true {
            within.lower = lower; within.lowerDocID = nil; within.lowerInclusive = true
            var b = range
            if range.upper.map({ CollatableKey.compare(lower, $0) <= 0 }) ?? true {
                b.upper = lower; b.upperDocID = nil; b.upperInclusive = false
            }
            below = b
        }
        if let upper {
            let c = range.upper.map { CollatableKey.compare(upper, $0) } ?? -1
            // Equal to the range's end: the rows of that very key, when the range holds them
            // and a stored key can be it (an open key cannot).
            if c < 0 || (c == 0 && (range.upperInclusive || range.upperDocID != nil) && !upperIsOpen) {
                var a = range
                if range.lower.map({ CollatableKey.compare(upper, $0) > 0 }) ?? true {
                    a.lower = upper; a.lowerDocID = nil; a.lowerInclusive = true
                }
                above = a
            }
            if c <= 0 { within.upper = upper; within.upperDocID = nil; within.upperInclusive = false }
        }
        return (below, within, above)
    }

    /// Whether the row whose CollatableKey is `key` passes every key condition.
    func accepts(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        for c in checks where c.op != .exists {
            guard let start = CollatableKey.itemStart(key, at: c.column) else { return false }
            let r = c.operand.withUnsafeBufferPointer { CollatableKey.compareItem(key, at: start, $0) }
            let ok: Bool
            switch c.op {
            case .lt: ok = r < 0
            case .lte: ok = r <= 0
            case .eq: ok = r == 0
            case .ne: ok = r != 0
            case .gte: ok = r >= 0
            case .gt: ok = r > 0
            case .exists: ok = true
            }
            if !ok { return false }
        }
        return true
    }
}
