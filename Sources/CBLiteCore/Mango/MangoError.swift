/// A Mango failure as CouchDB 3.5 names it (mango_error.erl): the HTTP status, the error
/// name and the reason text. The listener answers it as is; the C ABI passes it as a
/// CBLError whose message is "<error>: <reason>".
public struct MangoError: Error, CustomStringConvertible, Sendable, Equatable {
    public let status: Int
    public let error: String
    public let reason: String

    public init(_ status: Int, _ error: String, _ reason: String) {
        self.status = status
        self.error = error
        self.reason = reason
    }

    public var description: String { "\(error): \(reason)" }

    /// The engine's form (the C ABI's error code and message).
    public var cblError: CBLError {
        let s: Status
        switch status {
        case 400: s = .badRequest
        case 404: s = .notFound
        case 501: s = .notImplemented
        case 503: s = .busy
        default: s = .internalError
        }
        return CBLError(s, description)
    }

    static func badArg(_ op: String, _ arg: JSONValue) -> MangoError {
        MangoError(400, "bad_arg", "Bad argument for operator \(op): \(ErlangTerm.format(arg))")
    }
    static func invalidOperator(_ op: String) -> MangoError { MangoError(400, "invalid_operator", "Invalid operator: \(op)") }
    static func notSupported(_ op: String) -> MangoError { MangoError(400, "not_supported", "Unsupported operator: \(op)") }
    static func badField(_ sel: JSONValue) -> MangoError {
        MangoError(400, "bad_field", "Invalid field normalization on selector: \(ErlangTerm.format(sel))")
    }
    static let missingFieldName = MangoError(400, "invalid_selector", "One or more conditions is missing a field name.")
    static func invalidFieldName(_ f: String) -> MangoError { MangoError(400, "invalid_field_name", "Invalid field name: \(f)") }
    static func invalidSelectorJSON(_ v: JSONValue) -> MangoError {
        MangoError(400, "invalid_selector_json", "Selector must be a JSON object, not: \(ErlangTerm.format(v))")
    }
    static func missingKey(_ k: String) -> MangoError { MangoError(400, "missing_required_key", "Missing required key: \(k)") }
    static func invalidKey(_ k: String) -> MangoError { MangoError(400, "invalid_key", "Invalid key \(k) for this request.") }
    static let noUsableIndex = MangoError(400, "no_usable_index", "No index exists for this sort, try indexing by the sort fields.")
    static let mixedSort = MangoError(400, "unsupported_mixed_sort", "Sorts currently only support a single direction for all fields.")
    static func invalidIndex(_ reason: String) -> MangoError { MangoError(400, "invalid_index", reason) }
    static let indexNotFound = MangoError(404, "not_found", "missing")
}

/// Erlang's `~w` rendering of a JSON value as CouchDB holds it (jiffy's terms), which
/// CouchDB's error texts embed: strings as `<<bytes>>`, objects as `{[{Key,Value}]}`.
enum ErlangTerm {
    static func format(_ v: JSONValue) -> String {
        switch v {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .bigInteger(let t): return t
        case .double(let d): return float(d)
        case .string(let s): return "<<" + s.utf8.map { String($0) }.joined(separator: ",") + ">>"
        case .array(let a): return "[" + a.map(format).joined(separator: ",") + "]"
        case .object(let o):
            return "{[" + o.members.map { "{" + format(.string($0.key)) + "," + format($0.value) + "}" }.joined(separator: ",") + "]}"
        }
    }

    /// Erlang's shortest float text: "1.5", "1.0e20", "1.0e-7".
    private static func float(_ d: Double) -> String {
        var s = "\(d)"
        if let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            var mantissa = String(s[..<e]), exp = String(s[s.index(after: e)...])
            if !mantissa.contains(".") { mantissa += ".0" }
            if exp.hasPrefix("+") { exp.removeFirst() }
            s = mantissa + "e" + exp
        } else if !s.contains(".") {
            s += ".0"
        }
        return s
    }
}
