/// A Mango field name ("address.city", "a\\.b" for a member whose name holds a dot):
/// members of nested objects, or positions in arrays ("scores.0"), as mango_doc's
/// get_field reads them.
struct FieldPath: Equatable, Sendable {
    let text: String
    let parts: [String]
    /// The parts as a scan of JSON text compares and counts them (FieldPathScan), made once.
    let scanner: FieldPathScanner

    enum Lookup {
        case found(JSONValue)
        /// A member is missing: `$exists: false` holds.
        case notFound
        /// The path goes through a value that has no members (or an array position that is
        /// not there): no condition holds.
        case badPath
    }

    /// Splits at dots not preceded by a backslash, then drops the backslashes (mango_util's
    /// parse_field). An empty part is an error.
    init(_ text: String) throws {
        self.text = text
        parts = try FieldPath.split(text)
        scanner = FieldPathScanner(parts)
    }

    /// The parts follow from the text.
    static func == (a: FieldPath, b: FieldPath) -> Bool { a.text == b.text }

    private static func split(_ text: String) throws -> [String] {
        guard text.contains("\\") else {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            if parts.contains("") { throw MangoError.invalidFieldName(text) }
            return parts
        }
        var out: [String] = [], cur: [Character] = []
        var prev: Character? = nil
        for c in text {
            if c == "." && prev != "\\" {
                out.append(String(cur.filter { $0 != "\\" }))
                cur = []
            } else {
                cur.append(c)
            }
            prev = c
        }
        out.append(String(cur.filter { $0 != "\\" }))
        if out.contains("") { throw MangoError.invalidFieldName(text) }
        return out
    }

    func lookup(in value: JSONValue) -> Lookup {
        var v = value
        for p in parts {
            switch v {
            case .object(let o):
                guard let m = o[p] else { return .notFound }
                v = m
            case .array(let a):
                guard let i = Int(p), i >= 0, i < a.count, p.first != "+" else { return .badPath }
                v = a[i]
            default:
                return .badPath
            }
        }
        return .found(v)
    }

    /// The value at this path, nil when it is not there.
    func value(in v: JSONValue) -> JSONValue? {
        if case .found(let x) = lookup(in: v) { return x }
        return nil
    }
}
