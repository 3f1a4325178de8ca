import CBLiteCore
import CouchWire
import NIOHTTP1

/// Who a request is (its UserContext), from an `AuthSession` cookie or `Authorization:
/// Basic` credentials, in CouchDB's order (cookie first). Runs on the event loop before
/// any body is read; what the user may then do is Authorization's.
///
/// The users: the listener configuration's (`users`, server admins unless given `roles`)
/// and the server admins of `[admins]` (`/_node/_local/_config/admins`), both kept as
/// PBKDF2 hashes (PasswordHash). Without any, the listener serves everyone as a server
/// admin ("admin party"), loopback clients only unless the configuration opts in to remote
/// ones.
final class Authenticator: @unchecked Sendable {
    struct Outcome {
        let userCtx: UserContext
        let method: String?
        /// Basic credentials of a known user whose password was not verified before: a
        /// PBKDF2 (tens of ms) is too slow for the event loop, so the request's worker
        /// verifies them (`check`) before anything else (Router.authorize), its body held
        /// until then.
        var unverified: (name: String, password: String)? = nil
    }

    /// What a login checks: the password's hash, and the roles it gives.
    struct Account { let hash: PasswordHash; let roles: [String] }

    private let configured: [String: Account]
    /// The `_users` database's users (set once, before the listener serves).
    weak var users: UsersDatabase?
    private let config: ServerConfig
    private let allowRemoteWithoutAuth: Bool

    /// Passwords already verified, by user: the hash they matched and a keyed digest of the
    /// password (never the password), so that Basic credentials on every request cost one
    /// HMAC instead of a PBKDF2 (CouchDB's auth cache does the same for its users). A
    /// changed password (a new hash) is verified again.
    private let verified = Monitor()
    private var verifiedPasswords: [String: (hash: String, tag: [UInt8])] = [:]
    private let cacheKey: [UInt8]
    /// Makes the cookie secret once (`[chttpd_auth] secret`), when none is configured.
    private let secretLock = Monitor()

    /// Tokens the listener gives its own replications (`POST /_replicate` between two of
    /// its databases): each acts as the user who asked, until the job ends.
    private let grants = Monitor()
    private var grantedTokens: [String: String] = [:]

    init(configuration: ListenerConfiguration, config: ServerConfig) {
        let cacheKey = Authenticator.randomBytes(32)
        var accounts: [String: Account] = [:], known: [String: (hash: String, tag: [UInt8])] = [:]
        for (name, password) in configuration.users {
            let roles = configuration.userRoles[name] ?? [UserContext.adminRole]
            if let hash = PasswordHash(password) {
                accounts[name] = Account(hash: hash, roles: roles)
            } else {
                // Given in clear: hashed here, and known as verified (no second PBKDF2 at the first login).
                let hash = PasswordHash.make(password)
                accounts[name] = Account(hash: hash, roles: roles)
                known[name] = (hash.text, HMACSHA256.authenticationCode(Array(password.utf8), key: cacheKey))
            }
        }
        configured = accounts
        verifiedPasswords = known
        self.cacheKey = cacheKey
        self.config = config
        allowRemoteWithoutAuth = configuration.allowRemoteWithoutAuth
    }

    private static func randomBytes(_ n: Int) -> [UInt8] {
        // OpenSSL's generator cannot fail once initialized; if it did, nothing could be signed safely.
        do { return try secureRandomBytes(n) } catch { fatalError("no random bytes: \(error)") }
    }

    /// Whether requests need credentials: some user is configured (a PUT into `[admins]`
    /// ends the admin party at once, as in CouchDB 1.x).
    var requiresAuth: Bool { !configured.isEmpty || config.hasValues("admins") }

    func account(_ name: String) -> Account? {
        if let a = configured[name] { return a }
        if let admin = config.value("admins", name).flatMap(PasswordHash.init) { return Account(hash: admin, roles: [UserContext.adminRole]) }
        return users?.account(name)
    }

    /// The user `name` is when `password` is theirs; nil otherwise. A PBKDF2 unless the
    /// password was verified before.
    func check(name: String, password: String) -> UserContext? {
        guard let account = account(name) else { return nil }
        if let user = knownUser(name, password, account) { return user }
        guard account.hash.verify(password) else { return nil }
        verified.locked { verifiedPasswords[name] = (account.hash.text, tag(password)) }
        return UserContext(name: name, roles: account.roles)
    }

    private func tag(_ password: String) -> [UInt8] { HMACSHA256.authenticationCode(Array(password.utf8), key: cacheKey) }

    /// The user, when this password was verified against the account's current hash (one HMAC).
    private func knownUser(_ name: String, _ password: String, _ account: Account) -> UserContext? {
        guard let known = verified.locked({ verifiedPasswords[name] }), known.hash == account.hash.text,
              constantTimeEqual(known.tag, tag(password)) else { return nil }
        return UserContext(name: name, roles: account.roles)
    }

    /// The user a granted token acts as: the account's roles; the `_replicator` database's
    /// jobs without an `owner` act as the listener itself, a server admin (that database is
    /// the server admins' unless its `_security` says otherwise).
    private func userContext(_ name: String) -> UserContext {
        if let account = account(name) { return UserContext(name: name, roles: account.roles) }
        return UserContext(name: name, roles: name == ReplicatorDatabase.name ? [UserContext.adminRole] : [])
    }

    // MARK: requests

    func authenticate(head: HTTPRequestHead, path: RequestPath, remoteIsLoopback: Bool) -> Result<Outcome, CouchError> {
        guard requiresAuth else {
            if remoteIsLoopback || allowRemoteWithoutAuth { return .success(Outcome(userCtx: .adminParty, method: nil)) }
            return .failure(.forbidden("Without users configured, this listener serves loopback clients only."))
        }
        if let cookie = head.headers.first(name: "Cookie"), let value = Credentials.cookies(cookie)[SessionCookie.name], !value.isEmpty {
            guard let session = SessionCookie.parse(value) else {
                return .failure(.badRequest("Malformed AuthSession cookie. Please clear your cookies."))
            }
            // An expired or forged cookie is no credential (CouchDB goes on to the next handler).
            if let user = verifySession(session) { return .success(Outcome(userCtx: user, method: "cookie")) }
        }
        if let header = head.headers.first(name: "Authorization") {
            if let name = grantedUser(header, remoteIsLoopback: remoteIsLoopback) {
                return .success(Outcome(userCtx: userContext(name), method: "default"))
            }
            if header.split(separator: " ", maxSplits: 1).first?.lowercased() == "basic" {
                guard let (name, password) = Credentials.basic(header), let account = account(name) else {
                    return .failure(.unauthorized())
                }
                if let user = knownUser(name, password, account) { return .success(Outcome(userCtx: user, method: "default")) }
                return .success(Outcome(userCtx: .anonymous, method: "default", unverified: (name, password)))
            }
            // Another scheme (a Bearer token not granted here: cblite has no JWT handler) is
            // no credential, as for CouchDB's default handler.
        }
        return .success(Outcome(userCtx: .anonymous, method: nil))
    }

    /// `WWW-Authenticate` for a 401, only when asked for: the client's
    /// `X-CouchDB-WWW-Authenticate` (echoed), else `[chttpd] WWW-Authenticate`. Without it,
    /// browsers show no login box for XHR clients (CouchDB's reason for the default).
    func challenge(_ head: HTTPRequestHead) -> [(String, String)] {
        guard let value = head.headers.first(name: "X-CouchDB-WWW-Authenticate") ?? config.value("chttpd", "WWW-Authenticate") else {
            return []
        }
        return [("WWW-Authenticate", value)]
    }

    // MARK: sessions

    /// `[chttpd_auth] timeout` (CouchDB's default 600 s).
    var sessionTimeout: Int { config.value("chttpd_auth", "timeout").flatMap(Int.init) ?? 600 }

    /// `[chttpd_auth] secret`, made (random, kept in the configuration, so sessions survive
    /// a restart as CouchDB's do) on first use.
    private func secret() -> [UInt8] {
        if let s = config.value("chttpd_auth", "secret") { return Array(s.utf8) }
        return secretLock.locked {
            if let s = config.value("chttpd_auth", "secret") { return Array(s.utf8) }
            let s = Hex.encode(Authenticator.randomBytes(16))
            do { _ = try config.set("chttpd_auth", "secret", s) } catch {
                Loggers.listener.warning("the session secret was not saved (\(error)): sessions end with this listener")
            }
            return Array(s.utf8)
        }
    }

    private func sessionKey(_ account: Account) -> [UInt8] { secret() + Array(account.hash.salt.utf8) }

    func makeSession(user: String, now: Int64 = unixTimeMicrosNow() / 1_000_000) -> String? {
        guard let account = account(user) else { return nil }
        return SessionCookie.make(user: user, time: now, key: sessionKey(account))
    }

    private func verifySession(_ s: (user: String, time: Int64?, data: [UInt8], mac: [UInt8]),
                               now: Int64 = unixTimeMicrosNow() / 1_000_000) -> UserContext? {
        guard let time = s.time, now < time + Int64(sessionTimeout), let account = account(s.user),
              SessionCookie.isValid(data: s.data, mac: s.mac, key: sessionKey(account)) else { return nil }
        return UserContext(name: s.user, roles: account.roles)
    }

    /// `Set-Cookie` for a new session, or the empty one after a failed login or a logout.
    func sessionCookieHeader(_ value: String?) -> String {
        SessionCookie.header(value, now: unixTimeMicrosNow() / 1_000_000, timeout: sessionTimeout)
    }

    // MARK: tokens for the listener's own replications

    /// A new bearer token acting as `user` (loopback requests only), until `revoke`.
    func grant(user: String) -> String {
        let token = Hex.encode(Authenticator.randomBytes(32))
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
}
