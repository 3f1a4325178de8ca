import CBLiteCore

/// DNS-SD service types: `_name._tcp` or `_name._udp` (RFC 6763 §7), the name 1 to 15
/// letters, digits and hyphens. Checked here so a typo is a 400, not an Avahi failure later.
public enum ServiceType {
    /// CouchDB's protocol, the default for a cblite listener.
    public static let couchDB = "_couchdb._tcp"

    public static func validate(_ type: String) throws {
        let parts = type.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1] == "_tcp" || parts[1] == "_udp", parts[0].hasPrefix("_"),
              (2...16).contains(parts[0].utf8.count),
              parts[0].utf8.dropFirst().allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0) || $0 == 0x2d }) else {
            throw CBLError(.badRequest, "DNS-SD: \"\(type)\" is not a service type (_name._tcp or _name._udp)")
        }
    }

    /// A service instance name: 1 to 63 bytes of UTF-8 without control characters (RFC 6763 §4.1.1).
    public static func validate(name: String) throws {
        guard (1...63).contains(name.utf8.count), !name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
            throw CBLError(.badRequest, "DNS-SD: a service name has 1 to 63 bytes and no control characters")
        }
    }
}
