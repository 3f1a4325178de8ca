import CBLiteCore
import CouchWire

/// CouchDB's `AuthSession` cookie (couch_httpd_auth): base64url, unpadded, of
/// `NAME:TIME:MAC`, TIME the login's Unix time in uppercase hex and MAC the raw
/// HMAC-SHA256 of `NAME:TIME` under the server's secret followed by the user's password
/// salt (a new password ends the user's sessions). Valid for `[chttpd_auth] timeout`
/// seconds from TIME.
enum SessionCookie {
    static let name = "AuthSession"

    static func make(user: String, time: Int64, key: [UInt8]) -> String {
        let data = "\(user):\(String(time, radix: 16, uppercase: true))"
        return base64URL(Array((data + ":").utf8) + HMACSHA256.authenticationCode(Array(data.utf8), key: key))
    }

    /// The cookie's parts; nil when it is not three `:`-separated parts of base64url
    /// (CouchDB: 400 "Malformed AuthSession cookie").
    static func parse(_ value: String) -> (user: String, time: Int64?, data: [UInt8], mac: [UInt8])? {
        guard let bytes = fromBase64URL(value),
              let first = bytes.firstIndex(of: UInt8(ascii: ":")),
              let second = bytes[(first + 1)...].firstIndex(of: UInt8(ascii: ":")),
              let user = String(validating: bytes[..<first], as: UTF8.self),
              let timeText = String(validating: bytes[(first + 1)..<second], as: UTF8.self) else { return nil }
        return (user, Int64(timeText, radix: 16), Array(bytes[..<second]), Array(bytes[(second + 1)...]))
    }

    /// Whether `mac` authenticates `data` under `key` (constant time).
    static func isValid(data: [UInt8], mac: [UInt8], key: [UInt8]) -> Bool { HMACSHA256.isValid(mac, for: data, key: key) }

    /// `Set-Cookie` as CouchDB writes it; nil `value`: the empty cookie of a logout or a
    /// failed login (with the same lifetime, as CouchDB's).
    static func header(_ value: String?, now: Int64, timeout: Int) -> String {
        let expires = cookieDate(now + Int64(timeout))
        return "\(name)=\(value ?? ""); Version=1; Expires=\(expires); Max-Age=\(timeout); Path=/; HttpOnly"
    }

    /// "Sat, 28-Nov-2026 15:41:17 GMT": IMF-fixdate with the date's spaces as dashes (the
    /// cookie date CouchDB sends).
    static func cookieDate(_ unixSeconds: Int64) -> String {
        var parts = HTTPDate.imfFixdate(unixSeconds).split(separator: " ").map(String.init)
        parts[1...3] = [parts[1...3].joined(separator: "-")]
        return parts.joined(separator: " ")
    }

    private static func base64URL(_ bytes: [UInt8]) -> String {
        String(Base64.encode(bytes).compactMap { c -> Character? in
            switch c { case "+": return "-"; case "/": return "_"; case "=": return nil; default: return c }
        })
    }

    private static func fromBase64URL(_ text: String) -> [UInt8]? {
        guard !text.contains("+"), !text.contains("/"), !text.contains("=") else { return nil }
        return Base64.decode(String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 }))
    }
}
