/// A JSON number, exact while integral within Int64 (a reduce sums an integer beyond it
/// as its Double, as a JavaScript reduce would).
enum Num {
    case int(Int64), double(Double)
    init?(_ v: JSONValue) {
        switch v {
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .bigInteger: self = .double(v.doubleValue!)
        default: return nil
        }
    }
    var double: Double {
        switch self { case .int(let i): return Double(i); case .double(let d): return d }
    }
}
