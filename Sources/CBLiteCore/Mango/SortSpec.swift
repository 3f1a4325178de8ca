/// A `sort`: fields in order, one direction for all (mango_sort.erl).
struct SortSpec: Sendable {
    var fields: [String] = []
    var descending = false

    init() {}

    init(_ v: JSONValue) throws {
        guard case .array(let items) = v else {
            throw MangoError(400, "invalid_sort_json", "Sort must be an array of sort specs, not: \(ErlangTerm.format(v))")
        }
        var dirs: [Bool] = []
        for item in items {
            switch item {
            case .string(let f) where !f.isEmpty:
                fields.append(f); dirs.append(false)
            case .object(let o) where o.members.count == 1:
                let (f, d) = o.members[0]
                guard d == .string("asc") || d == .string("desc") else {
                    throw MangoError(400, "invalid_sort_dir", "Invalid sort direction: \(ErlangTerm.format(d))")
                }
                fields.append(f); dirs.append(d == .string("desc"))
            default:
                throw MangoError(400, "invalid_sort_field", "Invalid sort field: \(ErlangTerm.format(item))")
            }
        }
        if Set(dirs).count > 1 { throw MangoError.mixedSort }
        descending = dirs.first ?? false
    }

    /// `{"field": "asc"}` objects, as `_explain` and index definitions show fields.
    static func json(_ fields: [String], descending: Bool = false) -> JSONValue {
        .array(fields.map { .object(JSONObject([($0, .string(descending ? "desc" : "asc"))])) })
    }
}
