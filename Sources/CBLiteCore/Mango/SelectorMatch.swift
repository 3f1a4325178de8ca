/// Whether a document (or a value, inside `$elemMatch` and the like) matches a selector,
/// by mango_selector:match's rules: a condition on a missing field fails (except
/// `$exists: false`), comparisons use the views' collation (CollatableKey) except on
/// `_id`, which compares raw (Erlang's term order: byte order for strings), and arrays
/// match as whole values except for `$in`, `$nin`, `$all`, `$size`, `$elemMatch` and
/// `$allMatch`.
extension Selector {
    public func matches(_ doc: JSONValue) -> Bool { Selector.match(root, doc) }

    /// The same over a stored document's JSON text, parsing only the fields the selector
    /// names (FieldPathScan) rather than the whole document.
    func matches(json: UnsafeBufferPointer<UInt8>) throws -> Bool { try Selector.match(root, json: json) }

    static func match(_ n: Node, json: UnsafeBufferPointer<UInt8>) throws -> Bool {
        try match(n) { p in try p.map { try $0.lookup(inJSON: json) } ?? .found(try JSONParser.parse(bytes: json)) }
    }

    static func match(_ n: Node, _ v: JSONValue) -> Bool {
        match(n) { p in p.map { $0.lookup(in: v) } ?? .found(v) }
    }

    /// `lookup` gives the value at a path (nil: the value matched itself).
    static func match(_ n: Node, _ lookup: (FieldPath?) throws -> FieldPath.Lookup) rethrows -> Bool {
        switch n {
        case .all: return true
        case .and(let items): return try items.allSatisfy { try match($0, lookup) }
        case .or(let items): return try items.isEmpty || items.contains { try match($0, lookup) }
        case .nor(let items): return try !items.contains { try match($0, lookup) }
        case .not(let x): return try !match(x, lookup)
        case .field(let p, let c):
            switch try lookup(p) {
            case .notFound: if case .exists(false) = c { return true } else { return false }
            case .badPath: return false
            case .found(let sub): return match(c, sub, raw: p?.text == "_id")
            }
        }
    }

    private static func cmp(_ v: JSONValue, _ o: Operand, raw: Bool) -> Int {
        if raw { return RawOrder.compare(v, o.value) }
        // The common cases without building the value's collation key: strings by ICU's
        // comparison (the order its sort keys reproduce), numbers by value.
        switch (v, o.value) {
        case (.string(var a), .string(var b)):
            return a.withUTF8 { pa in
                b.withUTF8 { pb in
                    // Equal bytes are equal strings (the common match) without ICU.
                    if pa.sameBytes(pb) { return 0 }
                    return ICU.shared.compare(pa, pb)
                }
            }
        case (.int, .int), (.int, .double), (.double, .int), (.double, .double):     // as doubles, as index keys
            let a = v.doubleValue!, b = o.value.doubleValue!
            return a == b ? 0 : (a < b ? -1 : 1)
        default: return CollatableKey.compare(CollatableKey.encode(v), o.key)
        }
    }

    static func match(_ c: Condition, _ v: JSONValue, raw: Bool) -> Bool {
        switch c {
        case .lt(let o): return cmp(v, o, raw: raw) < 0
        case .lte(let o): return cmp(v, o, raw: raw) <= 0
        case .eq(let o): return cmp(v, o, raw: raw) == 0
        case .ne(let o): return cmp(v, o, raw: raw) != 0
        case .gte(let o): return cmp(v, o, raw: raw) >= 0
        case .gt(let o): return cmp(v, o, raw: raw) > 0
        case .inList(let args):
            if case .array(let items) = v {
                return args.contains { a in items.contains { cmp($0, a, raw: raw) == 0 } }
            }
            return args.contains { cmp(v, $0, raw: raw) == 0 }
        case .nin(let args):
            if case .array = v { return !match(.inList(args), v, raw: raw) }
            return args.allSatisfy { cmp(v, $0, raw: raw) != 0 }
        case .exists(let should): return should          // reached only when the value is there
        case .type(let t): return t == typeName(v)
        case .size(let n):
            if case .array(let a) = v { return Int64(a.count) == n }
            return false
        case .mod(let d, let r):
            if case .int(let i) = v { return i % d == r }   // Erlang's rem: the dividend's sign
            return false
        case .regex(let re):
            if case .string(let s) = v { return re.search(s) }
            return false
        case .beginsWith(let prefix):
            if case .string(let s) = v { return s.utf8.starts(with: prefix.utf8) }
            return false
        case .all(let args):
            guard case .array(let items) = v, !args.isEmpty else { return false }
            // Exact term equality (lists:member), not collation; or the one argument is the whole array.
            if args.allSatisfy({ a in items.contains { RawOrder.identical($0, a) } }) { return true }
            if args.count == 1, case .array = args[0] { return RawOrder.identical(args[0], v) }
            return false
        case .elemMatch(let sub):
            guard case .array(let items) = v else { return false }
            return items.contains { match(sub, $0) }
        case .allMatch(let sub):
            guard case .array(let items) = v, !items.isEmpty else { return false }
            return items.allSatisfy { match(sub, $0) }
        case .keyMapMatch(let sub):
            guard case .object(let o) = v else { return false }
            return o.members.contains { match(sub, .string($0.key)) }
        case .not(let x): return !match(x, v, raw: raw)
        case .selector(let n): return match(n, v)
        }
    }

    /// mango_json:type's names.
    static func typeName(_ v: JSONValue) -> String {
        switch v {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double, .bigInteger: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

/// Erlang's term order and identity over jiffy's terms, which CouchDB applies to `_id`
/// (mango_json:cmp_raw) and to `$all`: numbers < atoms (false < null < true) < objects
/// < arrays < strings (bytes); 1 and 1.0 are ordered equal but are not the same term.
enum RawOrder {
    private static func rank(_ v: JSONValue) -> Int {
        switch v {
        case .int, .double, .bigInteger: return 0
        case .bool(false): return 1
        case .null: return 2
        case .bool(true): return 3
        case .object: return 4
        case .array: return 5
        case .string: return 6
        }
    }

    static func compare(_ a: JSONValue, _ b: JSONValue) -> Int {
        let ra = rank(a), rb = rank(b)
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case (.string(let x), .string(let y)):
            if x.utf8.elementsEqual(y.utf8) { return 0 }
            return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : 1
        case (.array(let x), .array(let y)):
            for (p, q) in zip(x, y) { let c = compare(p, q); if c != 0 { return c } }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        case (.object(let x), .object(let y)):
            // A tuple holding a list of {Key, Value} tuples: by the list.
            for (p, q) in zip(x.members, y.members) {
                let c = compare(.string(p.key), .string(q.key))
                if c != 0 { return c }
                let d = compare(p.value, q.value)
                if d != 0 { return d }
            }
            return x.members.count == y.members.count ? 0 : (x.members.count < y.members.count ? -1 : 1)
        default:
            let x = a.doubleValue ?? 0, y = b.doubleValue ?? 0
            return x == y ? 0 : (x < y ? -1 : 1)
        }
    }

    static func identical(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y
        case (.bigInteger(let x), .bigInteger(let y)): return x == y
        case (.string(let x), .string(let y)): return x.utf8.elementsEqual(y.utf8)
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
        case (.object(let x), .object(let y)):
            return x.members.count == y.members.count
                && zip(x.members, y.members).allSatisfy { $0.key.utf8.elementsEqual($1.key.utf8) && identical($0.value, $1.value) }
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        default: return false
        }
    }
}
