/// A parsed JSON value. Objects keep their members in input order; the canonical form
/// (JSONWriter.canonical) sorts them. Integers stay exact: within Int64 as `int`, beyond
/// it as `bigInteger` (CouchDB keeps such integers exactly, so a replicated body must too).
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    /// An integer literal outside Int64's range, kept as its decimal text. JSON's grammar
    /// allows no leading zeros, so the text is already its canonical form.
    case bigInteger(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    public var objectValue: JSONObject? { if case .object(let o) = self { return o } else { return nil } }
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 9.0e15: return Int64(d)
        default: return nil
        }
    }
    /// A number's value as a Double (a big integer rounded to the nearest); nil for others.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .bigInteger(let text): return Double(text)
        default: return nil
        }
    }
    public var isNull: Bool { if case .null = self { return true } else { return false } }
}

/// A JSON object: members in order, unique keys (the parser rejects duplicates).
public struct JSONObject: Equatable, Sendable {
    public var members: [(key: String, value: JSONValue)]

    public init(_ members: [(key: String, value: JSONValue)] = []) { self.members = members }

    public subscript(key: String) -> JSONValue? {
        get { members.first(where: { $0.key.utf8.elementsEqual(key.utf8) })?.value }
        set {
            if let i = members.firstIndex(where: { $0.key.utf8.elementsEqual(key.utf8) }) {
                if let newValue { members[i].value = newValue } else { members.remove(at: i) }
            } else if let newValue {
                members.append((key, newValue))
            }
        }
    }

    public var isEmpty: Bool { members.isEmpty }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        guard a.members.count == b.members.count else { return false }
        for (k, v) in a.members where b[k] != v { return false }
        return true
    }
}
