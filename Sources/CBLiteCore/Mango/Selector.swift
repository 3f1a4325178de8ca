/// A Mango selector, normalized (SelectorNormalizer) and compiled: field paths parsed,
/// comparison operands encoded once in the views' collation (CollatableKey), regular
/// expressions compiled. `json` is the normalized form, as `_explain` shows it and as a
/// partial index's design document stores it.
public struct Selector: @unchecked Sendable {
    public let json: JSONValue
    let root: Node

    /// A value compared in CouchDB's collation: the JSON and its collation key.
    struct Operand {
        let value: JSONValue
        let key: [UInt8]
        init(_ v: JSONValue) { value = v; key = CollatableKey.encode(v) }
    }

    indirect enum Node {
        case all
        case and([Node]), or([Node]), nor([Node]), not(Node)
        /// A condition on the value at a path (nil: the value itself, inside `$elemMatch` and the like).
        case field(FieldPath?, Condition)
    }

    indirect enum Condition {
        case lt(Operand), lte(Operand), eq(Operand), ne(Operand), gte(Operand), gt(Operand)
        case inList([Operand]), nin([Operand])
        case exists(Bool), type(String), size(Int64), mod(Int64, Int64), regex(MangoRegex), beginsWith(String)
        case all([JSONValue])
        case elemMatch(Node), allMatch(Node), keyMapMatch(Node)
        case not(Condition)
        /// A sub-selector in a condition's place (`{"$and": [...]}` under `$elemMatch`).
        case selector(Node)
    }

    /// Validates and normalizes `value` (CouchDB's errors when it is not a selector).
    public init(_ value: JSONValue) throws {
        guard case .object = value else { throw MangoError.invalidSelectorJSON(value) }
        json = try SelectorNormalizer.normalize(value)
        root = try Selector.node(json)
    }

    public init(json text: String) throws {
        try self.init(try JSONParser.parse(text))
    }

    /// `{}`: every document.
    public var isEmpty: Bool { if case .all = root { return true } else { return false } }

    static func node(_ v: JSONValue) throws -> Node {
        guard case .object(let o) = v else { throw MangoError.badField(v) }
        if o.isEmpty { return .all }
        guard o.members.count == 1 else { throw MangoError.badField(v) }
        let (k, arg) = o.members[0]
        switch k {
        case "$and", "$or", "$nor":
            let items = try (arg.arrayValue ?? []).map(node)
            return k == "$and" ? .and(items) : (k == "$or" ? .or(items) : .nor(items))
        case "$not": return .not(try node(arg))
        default:
            if k.hasPrefix("$") {
                return .field(nil, try condition(v))         // a bare condition on the value itself
            }
            return .field(k.isEmpty ? nil : try FieldPath(k), try condition(arg))
        }
    }

    static func condition(_ v: JSONValue) throws -> Condition {
        guard let (k, arg) = SelectorNormalizer.only(v) else { return .eq(Operand(v)) }
        switch k {
        case "$lt": return .lt(Operand(arg))
        case "$lte": return .lte(Operand(arg))
        case "$eq": return .eq(Operand(arg))
        case "$ne": return .ne(Operand(arg))
        case "$gte": return .gte(Operand(arg))
        case "$gt": return .gt(Operand(arg))
        case "$in": return .inList((arg.arrayValue ?? []).map(Operand.init))
        case "$nin": return .nin((arg.arrayValue ?? []).map(Operand.init))
        case "$exists": return .exists(arg.boolValue ?? false)
        case "$type": return .type(arg.stringValue ?? "")
        case "$size": return .size(arg.intValue ?? -1)
        case "$mod":
            let a = arg.arrayValue ?? []
            return .mod(a.first?.intValue ?? 1, a.last?.intValue ?? 0)
        case "$regex":
            guard let s = arg.stringValue, let re = MangoRegex(s) else { throw MangoError.badArg(k, arg) }
            return .regex(re)
        case "$beginsWith": return .beginsWith(arg.stringValue ?? "")
        case "$all": return .all(arg.arrayValue ?? [])
        case "$elemMatch": return .elemMatch(try node(arg))
        case "$allMatch": return .allMatch(try node(arg))
        case "$keyMapMatch": return .keyMapMatch(try node(arg))
        case "$not": return .not(try condition(arg))
        case "$and", "$or", "$nor": return .selector(try node(v))
        default:
            if k.hasPrefix("$") { throw MangoError.invalidOperator(k) }
            return .selector(try node(v))
        }
    }

    // MARK: what the planner reads

    /// The fields the selector restricts with conditions an index range can serve
    /// ($lt $lte $eq $gt $gte) seen through `$and` (mango_idx_view:indexable_fields), sorted.
    var indexableFields: [String] {
        var out = Set<String>()
        func walk(_ n: Node) {
            switch n {
            case .and(let items): items.forEach(walk)
            case .field(let p?, let c):
                switch c {
                case .lt, .lte, .eq, .gt, .gte: out.insert(p.text)
                default: break
                }
            default: break
            }
        }
        walk(root)
        return out.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Every field the selector names at its top levels (through $and, $or, $nor, $not).
    var fieldNames: [String] {
        var out: [String] = []
        func walk(_ n: Node) {
            switch n {
            case .and(let items), .or(let items), .nor(let items): items.forEach(walk)
            case .not(let x): walk(x)
            case .field(let p?, _): if !out.contains(p.text) { out.append(p.text) }
            default: break
            }
        }
        walk(root)
        return out
    }

    /// Whether every matching document must have all of `required`
    /// (mango_selector:has_required_fields): seen through `$and`, and through `$or`
    /// when each branch requires the field; `$exists: false` requires nothing.
    func hasRequiredFields(_ required: [String]) -> Bool {
        if case .all = root { return false }
        return Selector.requires([root], required)
    }

    private static func requires(_ nodes: [Node], _ required: [String]) -> Bool {
        if required.isEmpty { return true }
        guard let first = nodes.first else { return false }
        let rest = Array(nodes.dropFirst())
        switch first {
        case .and(let items) where rest.isEmpty: return requires(items, required)   // CouchDB sees through a lone $and only
        case .or(let items):
            let f = required[0]
            if items.allSatisfy({ requires([$0], [f]) }) { return requires(rest, Array(required.dropFirst())) }
            return requires(rest, required)
        case .field(let p?, let c):
            if case .exists(false) = c { return requires(rest, required) }
            return requires(rest, required.filter { $0 != p.text })
        default:
            return requires(rest, required)
        }
    }

    /// Whether the selector holds `field` to one value ($eq seen through $and): such a
    /// column does not change an index's order (mango_selector:is_constant_field).
    func isConstantField(_ field: String) -> Bool {
        func walk(_ n: Node) -> Bool {
            switch n {
            case .and(let items): return items.contains(where: walk)
            case .field(let p?, .eq): return p.text == field
            default: return false
            }
        }
        return walk(root)
    }
}
