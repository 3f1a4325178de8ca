/// The body of a `_find` (or `_explain`) request, validated by CouchDB's rules
/// (mango_opts:validate_find): unknown keys, a missing selector and bad values are
/// errors with CouchDB's texts; `r`, `conflicts`, `update`, `stable`, `stale` and
/// `partition` are accepted.
public struct FindRequest: Sendable {
    public var selector: Selector
    var sort = SortSpec()
    var projection: Projection
    public var limit: Int64 = 25
    public var skip: Int64 = 0
    public var bookmark: String?
    /// [] / [ddoc] / [ddoc, name], design document IDs with their "_design/" prefix.
    public var useIndex: [String] = []
    public var allowFallback = true
    public var executionStats = false
    public var conflicts = false
    public var update = true
    public var stable = false
    public var r: Int64 = 1
    /// The request as given (for `_explain`'s "opts").
    let given: JSONObject

    public init(json text: String) throws {
        let v: JSONValue
        do { v = try JSONParser.parse(text) } catch { throw MangoError(400, "bad_request", "invalid UTF-8 JSON") }
        try self.init(v)
    }

    public init(_ body: JSONValue) throws {
        guard case .object(let o) = body else { throw MangoError(400, "bad_request", "Request body must be a JSON object") }
        given = o
        for (k, _) in o.members where !FindRequest.keys.contains(k) { throw MangoError.invalidKey(k) }
        guard let sel = o["selector"] else { throw MangoError.missingKey("selector") }
        selector = try Selector(sel)
        if let v = o["sort"] { sort = try SortSpec(v) }
        projection = try Projection(o["fields"])
        if let v = o["limit"] { limit = try FindRequest.nonNegative(v) }
        if let v = o["skip"] { skip = try FindRequest.nonNegative(v) }
        if let v = o["bookmark"], v != .string("nil") {
            guard case .string(let b) = v else {
                throw MangoError(400, "invalid_bookmark", "Invalid bookmark value: \(String(decoding: JSONWriter.ordered(v), as: UTF8.self))")
            }
            bookmark = b
        }
        if let v = o["use_index"] {
            switch v {
            case .string(let d): useIndex = [MangoIndex.ddocID(d)]
            case .array(let a) where a.count <= 2 && a.allSatisfy({ $0.stringValue != nil }):
                useIndex = a.enumerated().map { $0.offset == 0 ? MangoIndex.ddocID($0.element.stringValue!) : $0.element.stringValue! }
            default: throw MangoError(400, "invalid_value", "Invalid value for use_index: \(ErlangTerm.format(v))")
            }
        }
        allowFallback = try FindRequest.bool(o, "allow_fallback", true)
        executionStats = try FindRequest.bool(o, "execution_stats", false)
        conflicts = try FindRequest.bool(o, "conflicts", false)
        update = try FindRequest.bool(o, "update", true)
        stable = try FindRequest.bool(o, "stable", false)
        if let v = o["r"] {
            guard case .int(let n) = v, n > 0 else {
                throw MangoError(400, "invalid_pos_integer", "\(ErlangTerm.format(v)) is not an integer greater than zero")
            }
            r = n
        }
        if let v = o["partition"], v.stringValue == nil {
            throw MangoError(400, "invalid_string", "Invalid string: \(ErlangTerm.format(v))")
        }
    }

    static let keys: Set<String> = ["selector", "use_index", "bookmark", "limit", "skip", "sort", "fields", "partition",
                                    "r", "conflicts", "stale", "update", "stable", "execution_stats", "allow_fallback"]

    private static func nonNegative(_ v: JSONValue) throws -> Int64 {
        guard case .int(let n) = v, n >= 0 else {
            throw MangoError(400, "invalid_non_neg_integer", "\(ErlangTerm.format(v)) is not an integer greater than or equal to zero")
        }
        return n
    }

    private static func bool(_ o: JSONObject, _ k: String, _ def: Bool) throws -> Bool {
        guard let v = o[k] else { return def }
        guard case .bool(let b) = v else { throw MangoError(400, "invalid_boolean", "Invalid boolean value: \(ErlangTerm.format(v))") }
        return b
    }

    public var fields: [String] { projection.names }
    public var sortFields: [String] { sort.fields }
    public var sortDescending: Bool { sort.descending }
}
