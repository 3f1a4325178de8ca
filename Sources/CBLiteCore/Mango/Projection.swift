/// A `fields` list: the result documents carry only these fields, nested as in the
/// document, in the list's order (mango_fields:extract); missing ones are left out.
struct Projection: Sendable {
    let paths: [FieldPath]

    init(_ v: JSONValue?) throws {
        guard let v else { paths = []; return }
        guard case .array(let items) = v else {
            throw MangoError(400, "invalid_fields", "Fields must be an array of strings, not: \(ErlangTerm.format(v))")
        }
        paths = try items.map { item in
            guard case .string(let s) = item else {
                throw MangoError(400, "invalid_field", "Invalid JSON for field spec: \(ErlangTerm.format(item))")
            }
            return try FieldPath(s)
        }
    }

    var isAll: Bool { paths.isEmpty }
    var names: [String] { paths.map(\.text) }

    func apply(_ doc: JSONValue) -> JSONValue {
        if paths.isEmpty { return doc }
        var out = JSONValue.object(JSONObject())
        for p in paths {
            if let v = p.value(in: doc) { Projection.set(&out, p.parts[...], v) }
        }
        return out
    }

    static func set(_ target: inout JSONValue, _ parts: ArraySlice<String>, _ v: JSONValue) {
        guard let first = parts.first, case .object(var o) = target else { return }
        if parts.count == 1 {
            o[first] = v
        } else {
            var child = o[first] ?? .object(JSONObject())
            if case .object = child {} else { child = .object(JSONObject()) }
            set(&child, parts.dropFirst(), v)
            o[first] = child
        }
        target = .object(o)
    }
}
