/// A parsed JSON value. Objects keep their members in input order; the canonical form
/// (JSONWriter.canonical) sorts them. Numbers that are integers within Int64 stay exact.
package enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    package var objectValue: JSONObject? { if case .object(let o) = self { return o } else { return nil } }
    package var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    package var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    package var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    package var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 9.0e15: return Int64(d)
        default: return nil
        }
    }
    package var isNull: Bool { if case .null = self { return true } else { return false } }
}

/// A JSON object: members in order, unique keys (the parser rejects duplicates).
package struct JSONObject: Equatable, Sendable {
    package var members: [(key: String, value: JSONValue)]

    package init(_ members: [(key: String, value: JSONValue)] = []) { self.members = members }

    package subscript(key: String) -> JSONValue? {
        get { members.first(where: { $0.key.utf8.elementsEqual(key.utf8) })?.value }
        set {
            if let i = members.firstIndex(where: { $0.key.utf8.elementsEqual(key.utf8) }) {
                if let newValue { members[i].value = newValue } else { members.remove(at: i) }
            } else if let newValue {
                members.append((key, newValue))
            }
        }
    }

    package var isEmpty: Bool { members.isEmpty }

    package static func == (a: JSONObject, b: JSONObject) -> Bool {
        guard a.members.count == b.members.count else { return false }
        for (k, v) in a.members where b[k] != v { return false }
        return true
    }
}
