import CBLiteCore
import CouchWire
import NIOHTTP1

/// Who may talk to the listener: Basic credentials or an `AuthSession` cookie against the
/// configured users. Without users, loopback clients only (unless the configuration opts
/// in to remote ones). Runs on the event loop before any body is read.
final class Authenticator: @unchecked Sendable {
    struct Outcome { let user: String?; let method: String? }

    /// How long a session cookie is valid (CouchDB's default, 600 s).
    static let sessionSeconds: Int64 = 600

    private let passwordDigests: [String: [UInt8]]
    private let allowRemoteWithoutAuth: Bool
    /// Signs session cookies; new for every listener, so a restart ends all sessions.
    /// 256 random bits from OpenSSL (which cannot fail once initialized: if it did, no
    /// cookie could be signed safely).
    private let sessionKey: [UInt8] = {
        do { return try secureRandomBytes(32) } catch { fatalError("no session key: \(error)") }
    }()

    /// Tokens the listener gives its own replications (`POST /_replicate` between two of
    /// its databases): each acts as the user who asked, until the job ends.
    private let grants = Monitor()
    private var grantedTokens: [String: String] = [:]

    /// A new bearer token acting as `user` (loopback requests only), until `revoke`.
    func grant(user: String) -> String {
        let token: String
        do { token = Hex.encode(try secureRandomBytes(32)) } catch { fatalError("no token: \(error)") }
        grants.locked { grantedTokens[token] = user }
        return token
    }

    func revoke(_ token: String) { _ = grants.locked { grantedTokens.removeValue(forKey: token) } }

    private func grantedUser(_ header: String, remoteIsLoopback: Bool) -> String? {
        guard remoteIsLoopback, header.hasPrefix("Bearer ") else { return nil }
        // A hash lookup: the tokens are 256 random bits, so its timing tells nothing useful.
        let token = String(header.dropFirst(7))
        return grants.locked { grantedTokens[token] }
    }

    init(users: [String: String], allowRemoteWithoutAuth: Bool) {
        passwordDigests = users.mapValues { SHA256.hash(Array($0.utf8)) }
        self.allowRemoteWithoutAuth = allowRemoteWithoutAuth
    }

    var requiresAuth: Bool { !passwordDigests.isEmpty }

    /// Compares digests in constant time (no timing hint about the password).
    func check(name: String, password: String) -> Bool {
        guard let expected = passwordDigests[name] else { return false }
        return constantTimeEqual(expected, SHA256.hash(Array(password.utf8)))
    }

    func authenticate(head: HTTPRequestHead, path: RequestPath, remoteIsLoopback: Bool) -> Result<Outcome, CouchError> {
        guard requiresAuth else {
            if remoteIsLoopback || allowRemoteWithoutAuth { return .success(Outcome(user: nil, method: nil)) }
            return .failure(.forbidden("Without users configured, this listener serves loopback clients only."))
        }
        if let header = head.headers.first(name: "Authorization") {
            if let user = grantedUser(header, remoteIsLoopback: remoteIsLoopback) { return .success(Outcome(user: user, method: "default")) }
            guard let (name, password) = Credentials.basic(header), check(name: name, password: password) else {
                return .failure(.unauthorized())
            }
            return .success(Outcome(user: name, method: "default"))
        }
        if let cookie = head.headers.first(name: "Cookie"), let value = Credentials.cookies(cookie)["AuthSession"],
           !value.isEmpty, let name = verifySession(value) {
            return .success(Outcome(user: name, method: "cookie"))
        }
        // Anonymous: the welcome, health and login endpoints only.
        let first = path.segments.first
        if path.segments.isEmpty || first == "_up" || first == "_session" { return .success(Outcome(user: nil, method: nil)) }
        return .failure(.unauthorized("You are not authorized to access this db."))
    }

    // MARK: session cookies: hex("name:expiry:hmac")

    func makeSession(user: String, now: Int64 = unixTimeMicrosNow() / 1_000_000) -> String {
        let payload = "\(user):\(String(now + Authenticator.sessionSeconds, radix: 16))"
        let mac = HMACSHA256.authenticationCode(Array(payload.utf8), key: sessionKey)
        return Hex.encode(Array((payload + ":").utf8) + mac)
    }

    func verifySession(_ value: String, now: Int64 = unixTimeMicrosNow() / 1_000_000) -> String? {
        guard let bytes = Hex.decode(value), bytes.count > 33 else { return nil }
        let mac = Array(bytes.suffix(32))
        let payloadBytes = Array(bytes.dropLast(33))
        guard bytes[bytes.count - 33] == UInt8(ascii: ":"),
              HMACSHA256.isValid(mac, for: payloadBytes, key: sessionKey),
              let payload = String(validating: payloadBytes, as: UTF8.self),
              let colon = payload.lastIndex(of: ":"),
              let expiry = Int64(payload[payload.index(after: colon)...], radix: 16), expiry > now else { return nil }
        let name = String(payload[..<colon])
        return passwordDigests[name] != nil ? name : nil
    }

    /// `Set-Cookie` for a new session (as CouchDB writes it), or the empty one after a
    /// failed login or a logout.
    func sessionCookieHeader(_ value: String?) -> String {
        guard let value else { return "AuthSession=; Version=1; Path=/; HttpOnly" }
        return "AuthSession=\(value); Version=1; Max-Age=\(Authenticator.sessionSeconds); Path=/; HttpOnly"
    }
}
