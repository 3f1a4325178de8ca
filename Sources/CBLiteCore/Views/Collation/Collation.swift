/// CouchDB's view collation:
///   null < false < true < numbers < strings < arrays < objects;
/// numbers by value; strings by the Unicode Collation Algorithm (ICU's root collator,
/// tertiary strength: "a" < "A" < "aa" < "b"); arrays item by item (a shorter prefix
/// first); objects member by member (name, then value), in their emitted order.
///
/// View indexes hold keys in their CollatableKey form, whose byte order is this order,
/// so SQLite sorts and searches them with plain byte comparisons. The functions here
/// compare JSON texts through the same encoding, so there is one definition of the order.
public enum Collation {
    /// -1, 0 or 1 as JSON text `a` sorts before, equal to, or after `b` (text that is not
    /// JSON sorts after all JSON, by bytes).
    public static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        let ka = a.withUnsafeBufferPointer { try? JSONParser.parse(bytes: $0) }.map { CollatableKey.encode($0) }
        let kb = b.withUnsafeBufferPointer { try? JSONParser.parse(bytes: $0) }.map { CollatableKey.encode($0) }
        switch (ka, kb) {
        case let (x?, y?): return CollatableKey.compare(x, y)
        case (nil, nil): return CollatableKey.compare(a, b)
        case (nil, _): return 1
        case (_, nil): return -1
        }
    }

    public static func compare(_ a: String, _ b: String) -> Int { compare(Array(a.utf8), Array(b.utf8)) }

    /// Compares two strings (decoded, no quotes) by the UCA, as index keys do.
    public static func compareStrings(_ a: String, _ b: String) -> Int {
        CollatableKey.compare(CollatableKey.encode(.string(a)), CollatableKey.encode(.string(b)))
    }

    /// The stored JSON text of a key or value: compact, object members in their given
    /// order (CouchDB compares objects member by member as emitted).
    public static func compactJSON(_ v: JSONValue) -> [UInt8] {
        var w = JSONWriter(canonical: false)
        w.write(v)
        return w.bytes
    }

    /// Validates JSON text and returns its stored form.
    public static func compactJSON(json: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        compactJSON(try JSONParser.parse(bytes: json))
    }
}
