/// A JSON number, exact while integral.
enum Num {
    case int(Int64), double(Double)
    init?(_ v: JSONValue) {
        switch v {
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        default: return nil
        }
    }
    var double: Double {
        switch self { case .int(let i): return Double(i); case .double(let d): return d }
    }
}
