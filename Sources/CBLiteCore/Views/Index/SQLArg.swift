/// A bound SQL parameter.
enum SQLArg {
    case blob([UInt8])
    case string(String)
    case int(Int64)

    func bind(_ s: Statement, _ i: Int32) {
        switch self {
        case .blob(let b): s.bindBlob(i, b)
        case .string(let x): s.bind(i, x)
        case .int(let n): s.bind(i, n)
        }
    }
}
