/// CouchDB's _stats: {"sum","count","min","max","sumsqr"}.
struct Stats {
    var sum = NumberSum()
    var sumsqr = NumberSum()
    var count: Int64 = 0
    var min: Num?
    var max: Num?

    mutating func add(_ n: Num) {
        count += 1
        sum.add(n)
        switch n {
        case .int(let i) where i.magnitude < 3_037_000_499: sumsqr.add(.int(i * i))
        default: sumsqr.add(.double(n.double * n.double))
        }
        if min == nil || n.double < min!.double { min = n }
        if max == nil || n.double > max!.double { max = n }
    }

    var value: JSONValue {
        func v(_ n: Num?) -> JSONValue {
            switch n { case .int(let i)?: return .int(i); case .double(let d)?: return .double(d); case nil: return .null }
        }
        return .object(JSONObject([("sum", sum.value), ("count", .int(count)), ("min", v(min)), ("max", v(max)),
                                   ("sumsqr", sumsqr.value)]))
    }
}
