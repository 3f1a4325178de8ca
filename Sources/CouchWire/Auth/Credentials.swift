import CBLiteBase

/// Reading credentials off a request: `Authorization: Basic`, the `AuthSession` cookie,
/// and `/_session` login bodies (form or JSON).
public enum Credentials {
    /// (name, password) of a `Basic` authorization header; nil if it is not one or malformed.
    public static func basic(_ header: String) -> (name: String, password: String)? {
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let decoded = Base64.decode(parts[1].trimmingSpaces),
              let text = String(validating: decoded, as: UTF8.self),
              let colon = text.firstIndex(of: ":") else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    /// The cookies of a `Cookie` header, name -> value (the first of a name wins).
    public static func cookies(_ header: String) -> [String: String] {
        var out: [String: String] = [:]
        for pair in header.split(separator: ";") {
            guard let eq = pair.firstIndex(of: "=") else { continue }
            let name = pair[..<eq].trimmingSpaces
            var value = pair[pair.index(after: eq)...].trimmingSpaces
            if value.count >= 2 && value.hasPrefix("\"") && value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            if out[name] == nil { out[name] = value }
        }
        return out
    }

    /// `application/x-www-form-urlencoded` fields; nil when malformed.
    public static func formFields(_ body: [UInt8]) -> [(name: String, value: String)]? {
        var out: [(String, String)] = []
        for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let eq = pair.firstIndex(of: UInt8(ascii: "="))
            let rawName = eq.map { pair[pair.startIndex..<$0] } ?? pair[...]
            let rawValue = eq.map { pair[pair.index(after: $0)...] } ?? pair[pair.endIndex...]
            guard let n = PercentDecoding.decode(rawName, plusAsSpace: true),
                  let v = PercentDecoding.decode(rawValue, plusAsSpace: true) else { return nil }
            out.append((n, v))
        }
        return out
    }
}
