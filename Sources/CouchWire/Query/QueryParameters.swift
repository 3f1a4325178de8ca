import CBLiteBase

/// The decoded query string of a request, with typed accessors that follow CouchDB:
/// booleans are `true`/`false`, JSON-valued parameters (`open_revs`, `startkey`, `keys`,
/// `atts_since`, ...) are JSON text, and a malformed value is a 400, never ignored.
public struct QueryParameters: Sendable {
    public private(set) var items: [(name: String, value: String)] = []

    public init(_ items: [(name: String, value: String)] = []) { self.items = items }

    /// Parses `a=1&b=x%20y`. 400 for malformed escapes.
    public init(query: String) throws {
        for pair in query.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let eq = pair.firstIndex(of: UInt8(ascii: "="))
            let rawName = eq.map { pair[pair.startIndex..<$0] } ?? pair[...]
            let rawValue = eq.map { pair[pair.index(after: $0)...] } ?? pair[pair.endIndex...]
            guard let name = PercentDecoding.decode(rawName, plusAsSpace: true),
                  let value = PercentDecoding.decode(rawValue, plusAsSpace: true) else {
                throw CBLError(.badRequest, "malformed query string")
            }
            items.append((name, value))
        }
    }

    public subscript(name: String) -> String? { items.last { $0.name == name }?.value }

    public func has(_ name: String) -> Bool { items.contains { $0.name == name } }

    public func bool(_ name: String) throws -> Bool? {
        guard let v = self[name] else { return nil }
        switch v {
        case "true": return true
        case "false": return false
        default: throw CBLError(.badRequest, "invalid boolean parameter \(name)=\(v)")
        }
    }

    public func bool(_ name: String, default d: Bool) throws -> Bool { try bool(name) ?? d }

    public func int(_ name: String) throws -> Int64? {
        guard let v = self[name] else { return nil }
        guard let i = Int64(v) else { throw CBLError(.badRequest, "invalid integer parameter \(name)=\(v)") }
        return i
    }

    public func nonNegativeInt(_ name: String) throws -> Int64? {
        guard let i = try int(name) else { return nil }
        guard i >= 0 else { throw CBLError(.badRequest, "parameter \(name) must not be negative") }
        return i
    }

    /// A JSON-valued parameter.
    public func json(_ name: String) throws -> JSONValue? {
        guard let v = self[name] else { return nil }
        do { return try JSONParser.parse(v) } catch {
            throw CBLError(.badRequest, "parameter \(name) is not valid JSON: \(v)")
        }
    }

    /// A JSON array of strings (`atts_since`, `doc_ids`).
    public func stringArray(_ name: String) throws -> [String]? {
        guard let v = try json(name) else { return nil }
        guard let a = v.arrayValue, let strings = Optional(a.compactMap(\.stringValue)), strings.count == a.count else {
            throw CBLError(.badRequest, "parameter \(name) must be a JSON array of strings")
        }
        return strings
    }

    /// `open_revs=all` or `open_revs=["rev", ...]`.
    public func openRevs() throws -> OpenRevs? {
        guard let v = self["open_revs"] else { return nil }
        if v == "all" { return .all }
        guard let revs = try stringArray("open_revs") else { return nil }
        return .revs(revs)
    }

    /// `since=now`, a number, or an opaque sequence whose numeric prefix is ours
    /// ("12" or "12-g1AAA..."; a CouchDB-shaped sequence passed back verbatim).
    public func since() throws -> Since? {
        guard let v = self["since"] else { return nil }
        return try Since(v)
    }
}

public enum OpenRevs: Equatable, Sendable {
    case all
    case revs([String])
}

public enum Since: Equatable, Sendable {
    case now
    case sequence(Int64)

    public init(_ text: String) throws {
        if text == "now" { self = .now; return }
        var t = Substring(text)
        if t.hasPrefix("\"") && t.hasSuffix("\"") && t.count >= 2 { t = t.dropFirst().dropLast() }   // JSON string form
        let digits = t.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let n = Int64(digits), digits.count == t.count || t.dropFirst(digits.count).first == "-" else {
            throw CBLError(.badRequest, "Malformed sequence supplied in 'since' parameter.")
        }
        self = .sequence(n)
    }

    public init(json: JSONValue) throws {
        switch json {
        case .int(let i) where i >= 0: self = .sequence(i)
        case .string(let s): try self.init(s)
        default: throw CBLError(.badRequest, "Malformed sequence supplied in 'since' parameter.")
        }
    }
}
