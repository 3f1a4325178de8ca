/// A reduce function: either one of the built-in reducers, computed natively, or a
/// custom function of (keys, values, rereduce) returning JSON. With rereduce, keys is nil
/// and values are results of earlier calls.
public enum Reducer {
    public typealias Function = (_ keys: [[UInt8]]?, _ values: [[UInt8]], _ rereduce: Bool) throws -> [UInt8]
    case count
    case sum
    case stats
    case approxCountDistinct
    /// The API's callbacks: keys are the rows' keys; rereduce only joins chunks' results.
    case custom(Function)
    /// CouchDB's reduce (a design document's JavaScript): each key is `[key, docID]`, and
    /// every answered value is a rereduce of partial results, even of one — CouchDB
    /// rereduces its B-tree nodes' and shards' results, and a function may tell.
    case couch(Function)

    /// `_count`, `_sum`, `_stats`, `_approx_count_distinct`; nil for any other name.
    public init?(builtin name: String) {
        switch name {
        case "_count": self = .count
        case "_sum": self = .sum
        case "_stats": self = .stats
        case "_approx_count_distinct": self = .approxCountDistinct
        default: return nil
        }
    }

    /// The reducer a caller asked for: a built-in by name or a custom function, never both
    /// (400); nil when neither (a map-only view).
    public static func chosen(builtin: String?, custom: Reducer?) throws -> Reducer? {
        if builtin != nil && custom != nil { throw CBLError.badRequest("give either a reduce callback or a built-in reducer, not both") }
        guard let builtin else { return custom }
        guard let r = Reducer(builtin: builtin) else {
            throw CBLError.badRequest("unknown built-in reducer \"\(builtin.prefix(80))\" (use _count, _sum, _stats or _approx_count_distinct)")
        }
        return r
    }
}
