/// The range of values a selector allows one field, from its $lt $lte $eq $gte $gt
/// conditions seen through `$and` (mango_idx_view:range): the bounds narrow as each
/// condition is AND'ed in; nil when no value can match. Other conditions are left to
/// the filter that every row then passes.
struct FieldRange {
    enum Bound {
        case min, max
        case value(JSONValue, key: [UInt8])

        var isSpecial: Bool { if case .value = self { return false } else { return true } }
        var json: JSONValue? { if case .value(let v, _) = self { return v } else { return nil } }
    }
    enum Op { case gt, gte, eq, lt, lte }

    var lowOp = Op.gt, low = Bound.min
    var highOp = Op.lt, high = Bound.max

    static func compare(_ a: Bound, _ b: Bound) -> Int {
        switch (a, b) {
        case (.min, .min), (.max, .max): return 0
        case (.min, _), (_, .max): return -1
        case (_, .min), (.max, _): return 1
        case (.value(_, let x), .value(_, let y)): return CollatableKey.compare(x, y)
        }
    }

    static func of(_ selector: Selector, field: String) -> FieldRange? {
        var r: FieldRange? = FieldRange()
        func walk(_ n: Selector.Node) {
            guard r != nil else { return }
            switch n {
            case .and(let items): items.forEach(walk)
            case .field(let p?, let c) where p.text == field: r = r!.narrowed(c)
            default: break
            }
        }
        walk(selector.root)
        return r
    }

    private enum Pos { case min, low, mid, high, max }

    private func pos(_ arg: Bound) -> Pos {
        let l = FieldRange.compare(arg, low)
        if l < 0 { return .min }
        if l == 0 { return .low }
        let h = FieldRange.compare(arg, high)
        return h < 0 ? .mid : (h == 0 ? .high : .max)
    }

    private func narrowed(_ c: Selector.Condition) -> FieldRange? {
        var r = self
        let point: FieldRange = {
            var p = self
            if case .eq(let o) = c { p.lowOp = .eq; p.low = .value(o.value, key: o.key); p.highOp = .eq; p.high = p.low }
            if case .lte(let o) = c { p.lowOp = .eq; p.low = .value(o.value, key: o.key); p.highOp = .eq; p.high = p.low }
            if case .gte(let o) = c { p.lowOp = .eq; p.low = .value(o.value, key: o.key); p.highOp = .eq; p.high = p.low }
            return p
        }()
        switch c {
        case .lt(let o):
            let a = Bound.value(o.value, key: o.key)
            switch pos(a) {
            case .min, .low: return nil
            case .mid, .high: r.highOp = .lt; r.high = a
            case .max: break
            }
        case .lte(let o):
            let a = Bound.value(o.value, key: o.key)
            switch pos(a) {
            case .min: return nil
            case .low: return lowOp == .gte || lowOp == .eq ? point : nil
            case .mid: r.highOp = .lte; r.high = a
            case .high, .max: break
            }
        case .eq(let o):
            let a = Bound.value(o.value, key: o.key)
            switch pos(a) {
            case .min, .max: return nil
            case .low: return lowOp == .gte || lowOp == .eq ? point : nil
            case .mid: return point
            case .high: return highOp == .lte || highOp == .eq ? point : nil
            }
        case .gte(let o):
            let a = Bound.value(o.value, key: o.key)
            switch pos(a) {
            case .min, .low: break
            case .mid: r.lowOp = .gte; r.low = a
            case .high: return highOp == .lte || highOp == .eq ? point : nil
            case .max: return nil
            }
        case .gt(let o):
            let a = Bound.value(o.value, key: o.key)
            switch pos(a) {
            case .min: break
            case .low, .mid: r.lowOp = .gt; r.low = a
            case .high, .max: return nil
            }
        default: break
        }
        return r
    }
}

/// The start and end keys of an index scan from its columns' ranges
/// (mango_idx_view:start_key/end_key): the start takes each range's lower value until one
/// is unbounded; the end each upper value until one is unbounded, then a key above every
/// value ("<MAX>" in `_explain`).
enum IndexKeys {
    static func start(_ ranges: [FieldRange]) -> [JSONValue] {
        var out: [JSONValue] = []
        for r in ranges {
            guard let v = r.low.json else { break }
            out.append(v)
        }
        return out
    }

    /// The end's values; `open`: it ends with the above-everything key.
    static func end(_ ranges: [FieldRange]) -> (values: [JSONValue], open: Bool) {
        var out: [JSONValue] = []
        for r in ranges {
            guard let v = r.high.json else { return (out, true) }
            out.append(v)
        }
        return (out, true)
    }

    /// CollatableKey bytes of an array key made of `values` and, when `open`, a last item
    /// above every value (the values then a prefix: their numbers keep their 8 bytes).
    static func encode(_ values: [JSONValue], open: Bool) -> [UInt8] {
        guard open else { return CollatableKey.encode(.array(values)) }
        var k = CollatableKey.encodePrefix(.array(values))
        k.removeLast()                     // the array's end
        k.append(0xFF)                     // above every type tag
        return k
    }
}
