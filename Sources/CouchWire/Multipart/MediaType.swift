/// A Content-Type value: `type/subtype; name=value; name="quoted value"`. CouchDB writes
/// boundaries both quoted and bare (and bare ones may begin with "--").
public struct MediaType: Equatable, Sendable {
    public let type: String          // lowercased "type/subtype"
    public let parameters: [(name: String, value: String)]

    public init(type: String, parameters: [(name: String, value: String)] = []) {
        self.type = type.lowercased()
        self.parameters = parameters
    }

    public static func == (a: MediaType, b: MediaType) -> Bool {
        a.type == b.type && a.parameters.elementsEqual(b.parameters) { $0.name == $1.name && $0.value == $1.value }
    }

    /// nil when the value has no "type/subtype".
    public init?(_ header: String) {
        var fields = MediaType.splitParameters(header)
        guard !fields.isEmpty else { return nil }
        let t = fields.removeFirst().trimmingSpaces.lowercased()
        guard let slash = t.firstIndex(of: "/"), slash != t.startIndex, t.index(after: slash) != t.endIndex else { return nil }
        var params: [(String, String)] = []
        for f in fields {
            guard let eq = f.firstIndex(of: "=") else { continue }
            let name = f[..<eq].trimmingSpaces.lowercased()
            var value = f[f.index(after: eq)...].trimmingSpaces
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = MediaType.unquote(String(value.dropFirst().dropLast()))
            }
            params.append((name, value))
        }
        self.init(type: t, parameters: params)
    }

    public func parameter(_ name: String) -> String? {
        parameters.first { $0.name == name.lowercased() }?.value
    }

    public var isMultipart: Bool { type.hasPrefix("multipart/") }
    public var isJSON: Bool { type == "application/json" }

    /// The header value, boundary quoted as CouchDB writes it.
    public var headerValue: String {
        var s = type
        for p in parameters { s += "; \(p.name)=\"\(p.value)\"" }
        return s
    }

    /// Splits at ';' outside double quotes.
    static func splitParameters(_ s: String) -> [String] {
        var out: [String] = []
        var cur = ""
        var quoted = false
        var escaped = false
        for ch in s {
            if escaped { cur.append(ch); escaped = false; continue }
            if quoted && ch == "\\" { cur.append(ch); escaped = true; continue }
            if ch == "\"" { quoted.toggle() }
            if ch == ";" && !quoted { out.append(cur); cur = ""; continue }
            cur.append(ch)
        }
        out.append(cur)
        return out.filter { !$0.trimmingSpaces.isEmpty || out.count == 1 }
    }

    static func unquote(_ s: String) -> String {
        var out = ""
        var escaped = false
        for ch in s {
            if escaped { out.append(ch); escaped = false } else if ch == "\\" { escaped = true } else { out.append(ch) }
        }
        return out
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    package var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = lastIndex(where: { !isSpace($0) })!
        return String(self[start...end])
    }
}
