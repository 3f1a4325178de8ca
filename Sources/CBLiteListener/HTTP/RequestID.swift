/// CouchDB's `X-Couch-Request-ID`: the client's own when it is one CouchDB accepts (1 to 36
/// characters of `[A-Za-z0-9_-]`), else 10 random hex digits, as CouchDB makes them. Logs on
/// both sides can then name the same request.
enum RequestID {
    static let header = "X-Couch-Request-ID"
    private static let maxLength = 36

    static func choose(clientGiven: String?) -> String {
        if let given = clientGiven, isValid(given) { return given }
        return generate()
    }

    static func isValid(_ id: String) -> Bool {
        let u = id.utf8
        return !u.isEmpty && u.count <= maxLength && u.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2D
        }
    }

    /// 40 random bits in one draw (one system call), as 10 lowercase hex digits.
    static func generate() -> String {
        var g = SystemRandomNumberGenerator()
        let bits = g.next() & 0xFF_FFFF_FFFF
        let s = String(bits, radix: 16)
        return String(repeating: "0", count: 10 - s.count) + s
    }
}
