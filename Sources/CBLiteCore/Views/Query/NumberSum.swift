/// A sum that stays an exact integer while every addend is one (and it does not overflow).
struct NumberSum {
    private var int: Int64 = 0
    private var dbl: Double = 0
    private var isDouble = false
    private(set) var isUsed = false

    mutating func add(_ n: Num) {
        isUsed = true
        switch n {
        case .int(let i) where !isDouble:
            let (r, o) = int.addingReportingOverflow(i)
            if o { isDouble = true; dbl = Double(int) + Double(i) } else { int = r }
        default:
            if !isDouble { isDouble = true; dbl = Double(int) }
            dbl += n.double
        }
    }

    mutating func merge(_ o: NumberSum) {
        if o.isDouble { add(.double(o.dbl)) } else { add(.int(o.int)) }
    }

    var value: JSONValue { isDouble ? .double(dbl) : .int(int) }
}
