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
    /// row: at least `lower`, below `upper`. A scan reads its range's end rows too (a
    /// `$lt 40`'s `[40]`, as CouchDB does), and need not read their documents.
    let documentKeys: (lower: [UInt8]?, upper: [UInt8]?)
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
        var lower: [UInt8]?, upper: [UInt8]?
        for item in items {
            guard case .field(let p?, let c) = item, p.text != "_id", p.text != "_rev",
                  let column = columns.firstIndex(of: p.text), let check = KeyFilter.check(column, c) else {
                rest.append(item)
                continue
            }
            checks.append(check)
            if column == 0 { KeyFilter.narrow(&lower, &upper, c) }
        }
        guard !checks.isEmpty else { return nil }
        self.checks = checks
        documentKeys = (lower, upper)
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
    private static func narrow(_ lower: inout [UInt8]?, _ upper: inout [UInt8]?, _ c: Selector.Condition) {
        func exactly(_ o: Selector.Operand) -> [UInt8] { CollatableKey.encode(.array([o.value])) }
        func above(_ o: Selector.Operand) -> [UInt8] { IndexKeys.encode([o.value], open: true) }
        func atLeast(_ k: [UInt8]) { if lower.map({ CollatableKey.compare(k, $0) > 0 }) ?? true { lower = k } }
        func below(_ k: [UInt8]) { if upper.map({ CollatableKey.compare(k, $0) < 0 }) ?? true { upper = k } }
        switch c {
        case .lt(let o): below(exactly(o))
        case .lte(let o): below(above(o))
        case .eq(let o): atLeast(exactly(o)); below(above(o))
        case .gte(let o): atLeast(exactly(o))
        case .gt(let o): atLeast(above(o))
        default: break
        }
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
