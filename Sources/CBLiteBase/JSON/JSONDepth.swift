/// The nesting depth of a parsed value, for documents read inside a protocol message
/// (JSONParser.messageDepth): each is held to JSONParser.maxDepth, as a document parsed
/// alone is, before it is stored.
public enum JSONDepth {
    /// Levels of nested arrays and objects (a scalar: 0), counted with a stack of our own
    /// so that any depth is measured without recursion.
    public static func of(_ value: JSONValue) -> Int {
        var deepest = 0
        var pending: [(JSONValue, Int)] = [(value, 1)]
        while let (v, depth) = pending.popLast() {
            switch v {
            case .array(let items):
                deepest = max(deepest, depth)
                for item in items { pending.append((item, depth + 1)) }
            case .object(let o):
                deepest = max(deepest, depth)
                for m in o.members { pending.append((m.value, depth + 1)) }
            default: break
            }
        }
        return deepest
    }

    /// 400 "nesting deeper than N" for a document deeper than JSONParser.maxDepth.
    public static func checkDocument(_ body: JSONObject) throws {
        guard of(.object(body)) <= JSONParser.maxDepth else {
            throw CBLError.badRequest("invalid JSON: nesting deeper than \(JSONParser.maxDepth)")
        }
    }
}
