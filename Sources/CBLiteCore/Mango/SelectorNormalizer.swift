/// CouchDB's three normalization passes over a selector (mango_selector:normalize), on
/// JSON: operators validated and implicit ones made explicit (norm_ops), field names
/// pushed down to their conditions as full dotted paths (norm_fields), and negations
/// moved down to the conditions by De Morgan's laws (norm_negations). Matching, index
/// choice and `_explain` all read the normalized form, so the passes decide semantics
/// (`{"$not": {"a": {"$gt": 1}}}` becomes `{"a": {"$lte": 1}}`, which needs `a` to exist).
enum SelectorNormalizer {
    static func normalize(_ selector: JSONValue) throws -> JSONValue {
        if case .object(let o) = selector, o.isEmpty { return selector }
        let n = try negations(try fields(try ops(selector)))
        guard case .object(let o) = n else { throw MangoError.badField(n) }
        if o.members.contains(where: { $0.key.isEmpty }) { throw MangoError.missingFieldName }
        return n
    }

    static func single(_ k: String, _ v: JSONValue) -> JSONValue { .object(JSONObject([(k, v)])) }

    /// The one member of a one-member object.
    static func only(_ v: JSONValue) -> (key: String, value: JSONValue)? {
        if case .object(let o) = v, o.members.count == 1 { return o.members[0] }
        return nil
    }

    // MARK: norm_ops

    static func ops(_ v: JSONValue) throws -> JSONValue {
        guard case .object(let o) = v, !o.isEmpty else { return single("$eq", v) }     // a bare value: equality
        if o.members.count > 1 { return single("$and", .array(try o.members.map { try ops(single($0.key, $0.value)) })) }
        let (k, arg) = o.members[0]
        guard k.hasPrefix("$") else { return single(k, try ops(arg)) }
        switch k {
        case "$and", "$or", "$nor":
            guard case .array(let a) = arg else { throw MangoError.badArg(k, arg) }
            return single(k, .array(try a.map(ops)))
        case "$not", "$elemMatch", "$allMatch", "$keyMapMatch":
            guard case .object = arg else { throw MangoError.badArg(k, arg) }
            return single(k, try ops(arg))
        case "$in", "$nin", "$all":
            guard case .array = arg else { throw MangoError.badArg(k, arg) }
        case "$exists":
            guard case .bool = arg else { throw MangoError.badArg(k, arg) }
        case "$type":
            guard case .string = arg else { throw MangoError.badArg(k, arg) }
        case "$beginsWith":
            guard case .string = arg else { throw MangoError.badArg(k, arg) }
        case "$mod":
            // CouchDB accepts a 0 divisor and then fails the query with 500 badarith.
            guard case .array(let a) = arg, a.count == 2, case .int(let d) = a[0], case .int = a[1], d != 0 else {
                throw MangoError.badArg(k, arg)
            }
        case "$regex":
            guard case .string(let re) = arg, MangoRegex(re) != nil else { throw MangoError.badArg(k, arg) }
        case "$size":
            guard case .int(let n) = arg, n >= 0 else { throw MangoError.badArg(k, arg) }
        case "$lt", "$lte", "$eq", "$ne", "$gte", "$gt":
            break
        case "$text":
            // TextFind takes it from the top of a selector; anywhere else a text index cannot answer it.
            throw MangoError(400, "invalid_operator", "$text must be at the top of the selector (or in its top $and)")
        case "$where", "$geoWithin", "$geoIntersects", "$near", "$nearSphere":
            throw MangoError.notSupported(k)
        default:
            throw MangoError.invalidOperator(k)
        }
        return v
    }

    // MARK: norm_fields

    static func fields(_ v: JSONValue) throws -> JSONValue {
        if case .object(let o) = v, o.isEmpty { return v }
        return try fields(v, path: "")
    }

    private static func fields(_ v: JSONValue, path: String) throws -> JSONValue {
        guard let (k, arg) = only(v) else {
            if case .object(let o) = v, o.isEmpty { return single(path, v) }
            throw MangoError.badField(v)
        }
        switch k {
        case "$and", "$or", "$nor":
            guard case .array(let a) = arg else { throw MangoError.badField(v) }
            return single(k, .array(try a.map { try fields($0, path: path) }))
        case "$not":
            return single(k, try fields(arg, path: path))
        case "$elemMatch", "$allMatch", "$keyMapMatch":
            return single(path, single(k, try fields(arg)))
        default:
            if k.hasPrefix("$") { return single(path, v) }
            return try fields(arg, path: path.isEmpty ? k : path + "." + k)
        }
    }

    // MARK: norm_negations

    static func negations(_ v: JSONValue) throws -> JSONValue {
        guard let (k, arg) = only(v) else { return v }
        switch k {
        case "$not": return try negate(arg)
        case "$nor": return single("$and", .array(try (arg.arrayValue ?? []).map(negate)))
        case "$and", "$or": return single(k, .array(try (arg.arrayValue ?? []).map(negations)))
        case "$elemMatch", "$allMatch", "$keyMapMatch": return single(k, try negations(arg))
        default: return v
        }
    }

    private static let negatedComparison = ["$lt": "$gte", "$lte": "$gt", "$eq": "$ne", "$ne": "$eq", "$gte": "$lt",
                                            "$gt": "$lte", "$in": "$nin", "$nin": "$in"]

    private static func negate(_ v: JSONValue) throws -> JSONValue {
        guard let (k, arg) = only(v) else { return single("$not", v) }
        switch k {
        case "$not": return try negations(arg)
        case "$nor": return single("$or", .array(try (arg.arrayValue ?? []).map(negations)))
        case "$and": return single("$or", .array(try (arg.arrayValue ?? []).map(negate)))
        case "$or": return single("$and", .array(try (arg.arrayValue ?? []).map(negate)))
        case "$exists": return single(k, .bool(!(arg.boolValue ?? false)))
        default:
            if let n = negatedComparison[k] { return single(n, arg) }
            if k.hasPrefix("$") { return single("$not", v) }
            return single(k, try negate(arg))
        }
    }
}
