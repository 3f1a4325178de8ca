/// Reduces a stream of rows into one value without holding them all: built-in reducers
/// accumulate natively; a custom reducer is called on chunks of `chunkSize` rows and its
/// partial results are re-reduced (rereduce = true), so memory stays bounded by the chunk
/// size however many rows the range holds.
final class Reduction {
    private let reducer: Reducer
    private let chunkSize: Int
    private(set) var rowCount: Int64 = 0

    // built-ins
    private var count: Int64 = 0
    private var sum = NumberSum()
    private var stats = Stats()
    private var sumVector: [NumberSum]?       // _sum over arrays of numbers

    // custom
    private var keys: [[UInt8]] = []
    private var values: [[UInt8]] = []
    private var partials: [[UInt8]] = []

    /// Rows per reduce call (tests lower it to see rereduce at work).
    nonisolated(unsafe) static var defaultChunkSize = 256

    init(_ reducer: Reducer, chunkSize: Int = Reduction.defaultChunkSize) {
        self.reducer = reducer
        self.chunkSize = max(2, chunkSize)
    }

    /// Adds a row (its key and value as JSON text; value nil when none was emitted).
    func add(key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>?) throws {
        rowCount += 1
        switch reducer {
        case .count:
            count += 1
        case .sum:
            let v = try parse(value)
            if case .array(let items) = v {
                if sumVector == nil { sumVector = [] }
                for (i, item) in items.enumerated() {
                    guard let n = Num(item) else { throw CBLError.badRequest("the _sum reducer needs numbers or arrays of numbers") }
                    if i >= sumVector!.count { sumVector!.append(NumberSum()) }
                    sumVector![i].add(n)
                }
            } else {
                guard let n = Num(v) else { throw CBLError.badRequest("the _sum reducer needs numbers or arrays of numbers") }
                sum.add(n)
            }
        case .stats:
            guard let n = Num(try parse(value)) else { throw CBLError.badRequest("the _stats reducer needs numbers") }
            stats.add(n)
        case .custom(let fn):
            keys.append(Array(key))
            values.append(value.map { Array($0) } ?? Array("null".utf8))
            if keys.count >= chunkSize {
                partials.append(try fn(keys, values, false))
                keys.removeAll(keepingCapacity: true)
                values.removeAll(keepingCapacity: true)
                if partials.count >= chunkSize {
                    partials = [try fn(nil, partials, true)]
                }
            }
        }
    }

    /// The reduced value as JSON.
    func finish() throws -> [UInt8] {
        switch reducer {
        case .count:
            return Array(String(count).utf8)
        case .sum:
            if var vector = sumVector {
                if sum.isUsed {                   // numbers mixed with arrays: add to item 0
                    if vector.isEmpty { vector.append(NumberSum()) }
                    vector[0].merge(sum)
                }
                return Collation.compactJSON(.array(vector.map { $0.value }))
            }
            return Collation.compactJSON(sum.value)
        case .stats:
            return Collation.compactJSON(stats.value)
        case .custom(let fn):
            if partials.isEmpty { return try fn(keys, values, false) }
            if !keys.isEmpty { partials.append(try fn(keys, values, false)) }
            keys.removeAll()
            values.removeAll()
            if partials.count == 1 { return partials[0] }
            return try fn(nil, partials, true)
        }
    }

    private func parse(_ value: UnsafeBufferPointer<UInt8>?) throws -> JSONValue {
        guard let value else { return .null }
        return try JSONParser.parse(bytes: value)
    }
}

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
