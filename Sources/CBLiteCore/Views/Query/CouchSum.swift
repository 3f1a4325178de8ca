/// CouchDB 3.5's `_sum` rules (couch_query_servers: builtin_sum_rows, sum_values,
/// sum_objects, sum_arrays), one value added to the sum so far at a time, from 0:
/// - numbers add; arrays add item by item, the longer's tail kept as it is; a number and an
///   array: the number goes to item 0 (so a sum of arrays has at least one item);
/// - objects add field by field, recursively, a field on one side only kept as it is; the
///   merged fields come in key order (bytewise), a lone object keeps its own order; an
///   object added to the integer 0 is taken whole;
/// - anything else stops the sum: the reduction becomes CouchDB's error object
///   {"error":"builtin_reduce_error","reason":…,"caused_by":V}, V being what CouchDB names
///   (the added value, or the sum's array tail when an item of it is not a number);
/// - an object whose "error" is "builtin_reduce_error" (a partial reduction that failed,
///   met when rereducing) stops the sum too: the reduction becomes that object.
/// Where CouchDB itself crashes (an object added to a number or array other than 0, or an
/// object with another "error" field: Erlang's case_clause, the view then fails), the
/// reduction is the error object, caused by that object.
enum CouchSum {
    static let reason = "The _sum function requires that map values be numbers, arrays of numbers, or objects. "
        + "Objects cannot be mixed with other data structures. Objects can be arbitrarily nested, provided that "
        + "the values for all fields are themselves numbers, arrays of numbers, or objects."

    /// Why a sum stops; `reduction` is what the reduction becomes.
    struct Stop: Error {
        let reduction: JSONValue
        static func invalid(_ cause: JSONValue) -> Stop {
            Stop(reduction: .object(JSONObject([("error", .string("builtin_reduce_error")),
                                                ("reason", .string(CouchSum.reason)), ("caused_by", cause)])))
        }
    }

    /// builtin_sum_rows: the values added in the order given, from 0.
    static func fold<S: Sequence>(_ values: S) -> JSONValue where S.Element == JSONValue {
        var sum = JSONValue.int(0)
        do {
            for v in values { try add(v, to: &sum) }
            return sum
        } catch let stop as Stop {
            return stop.reduction
        } catch {
            preconditionFailure("CouchSum throws only Stop")
        }
    }

    /// sum_values(value, sum).
    static func add(_ value: JSONValue, to sum: inout JSONValue) throws {
        switch value {
        case .int, .double, .bigInteger:
            switch sum {
            case .int, .double, .bigInteger: sum = plus(sum, value)
            case .array: try addArray([value], to: &sum)
            default: throw Stop.invalid(value)
            }
        case .array(let items):
            switch sum {
            case .array: try addArray(items, to: &sum)
            case .int, .double, .bigInteger:
                sum = .array([sum])
                try addArray(items, to: &sum)
            default: throw Stop.invalid(value)
            }
        case .object(let object):
            if let marker = object["error"] {
                if marker == .string("builtin_reduce_error") { throw Stop(reduction: value) }
                throw Stop.invalid(value)                    // CouchDB: case_clause
            }
            switch sum {
            case .int(0): sum = value
            case .object(let other): sum = .object(try addObject(object, to: other))
            default: throw Stop.invalid(value)               // CouchDB: case_clause
            }
        default:
            throw Stop.invalid(value)
        }
    }

    /// sum_arrays(sum, items): `sum` is an array; it is updated in place.
    private static func addArray(_ items: [JSONValue], to sum: inout JSONValue) throws {
        guard case .array(var acc) = sum else { preconditionFailure("addArray needs an array sum") }
        sum = .null                                          // acc uniquely referenced: updated in place
        let common = min(acc.count, items.count)
        for i in 0..<common {
            let x = acc[i], y = items[i]
            guard isNumber(x), isNumber(y) else { throw Stop.invalid(.array(Array(acc[i...]))) }
            acc[i] = plus(x, y)
        }
        if items.count > common { acc.append(contentsOf: items.dropFirst(common)) }
        sum = .array(acc)
    }

    /// sum_objects(sort(value), sort(sum)): both sides' fields merged in key order.
    private static func addObject(_ value: JSONObject, to sum: JSONObject) throws -> JSONObject {
        let a = sortedMembers(value), b = sortedMembers(sum)
        var out: [(key: String, value: JSONValue)] = []
        out.reserveCapacity(max(a.count, b.count))
        var i = 0, j = 0
        while i < a.count && j < b.count {
            if a[i].key.utf8.elementsEqual(b[j].key.utf8) {
                var merged = b[j].value
                try add(a[i].value, to: &merged)
                out.append((a[i].key, merged))
                i += 1; j += 1
            } else if precedes(a[i].key, b[j].key) {
                out.append(a[i]); i += 1
            } else {
                out.append(b[j]); j += 1
            }
        }
        out.append(contentsOf: a[i...])
        out.append(contentsOf: b[j...])
        return JSONObject(out)
    }

    private static func sortedMembers(_ o: JSONObject) -> [(key: String, value: JSONValue)] {
        o.members.sorted { precedes($0.key, $1.key) }
    }

    /// Erlang's order of binaries: bytewise.
    private static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    private static func isNumber(_ v: JSONValue) -> Bool { Num(v) != nil }

    /// Two numbers added as every built-in reducer adds them (NumberSum: exact while both
    /// are integers and the sum fits Int64, else a Double).
    private static func plus(_ a: JSONValue, _ b: JSONValue) -> JSONValue {
        var sum = NumberSum()
        sum.add(Num(a)!)
        sum.add(Num(b)!)
        return sum.value
    }
}
