import CBLiteCore

/// A password as CouchDB keeps its admins' (`[admins]`), never the password itself:
///   `-pbkdf2:sha256-DERIVED,SALT,ITERATIONS`   what CouchDB 3.4+ writes, and cblite;
///   `-pbkdf2-DERIVED,SALT,ITERATIONS`          PBKDF2-HMAC-SHA1 (CouchDB before 3.4);
///   `-pbkdf2:sha-…`                            the same, named;
///   `-hashed-SHA1HEX,SALT`                     SHA-1 of password + salt (CouchDB 1.x).
/// DERIVED is the key in lowercase hex; SALT is text, used as its UTF-8 bytes (CouchDB's are
/// 32 hex digits).
struct PasswordHash: Sendable, Equatable {
    enum Scheme: Sendable, Equatable { case pbkdf2(PBKDF2.PRF), simple }

    let scheme: Scheme
    let derived: [UInt8]
    let salt: String
    let iterations: Int

    /// CouchDB's default (`[chttpd_auth] iterations`).
    static let defaultIterations = 50_000

    /// Whether a configured value is already a hash (CouchDB's `get_unhashed_admins` test).
    static func isHash(_ text: String) -> Bool { text.hasPrefix("-pbkdf2") || text.hasPrefix("-hashed-") }

    init(scheme: Scheme, derived: [UInt8], salt: String, iterations: Int) {
        self.scheme = scheme
        self.derived = derived
        self.salt = salt
        self.iterations = iterations
    }

    /// Parses a stored hash; nil when `text` is not one of the forms above.
    init?(_ text: String) {
        let scheme: Scheme, rest: Substring
        if text.hasPrefix("-pbkdf2:sha256-") { (scheme, rest) = (.pbkdf2(.sha256), text.dropFirst(15)) }
        else if text.hasPrefix("-pbkdf2:sha-") { (scheme, rest) = (.pbkdf2(.sha1), text.dropFirst(12)) }
        else if text.hasPrefix("-pbkdf2-") { (scheme, rest) = (.pbkdf2(.sha1), text.dropFirst(8)) }
        else if text.hasPrefix("-hashed-") { (scheme, rest) = (.simple, text.dropFirst(8)) }
        else { return nil }
        let parts = rest.split(separator: ",", omittingEmptySubsequences: false)
        guard let derived = parts.first.flatMap({ Hex.decode(String($0)) }), !derived.isEmpty else { return nil }
        switch scheme {
        case .simple:
            guard parts.count == 2, derived.count == 20 else { return nil }
            self.init(scheme: scheme, derived: derived, salt: String(parts[1]), iterations: 1)
        case .pbkdf2:
            // An iteration count past a few million only makes every login slow.
            guard parts.count == 3, let n = Int(parts[2]), n >= 1, n <= 10_000_000, derived.count <= 64 else { return nil }
            self.init(scheme: scheme, derived: derived, salt: String(parts[1]), iterations: n)
        }
    }

    /// A new PBKDF2-HMAC-SHA256 hash of `password` with a random salt (CouchDB's form).
    static func make(_ password: String, iterations: Int = defaultIterations) -> PasswordHash {
        let salt: String
        do { salt = Hex.encode(try secureRandomBytes(16)) } catch { fatalError("no random salt: \(error)") }
        let key = PBKDF2.deriveKey(password: Array(password.utf8), salt: Array(salt.utf8), iterations: iterations,
                                   prf: .sha256, outputByteCount: 32)
        return PasswordHash(scheme: .pbkdf2(.sha256), derived: key, salt: salt, iterations: iterations)
    }

    var text: String {
        switch scheme {
        case .simple: return "-hashed-\(Hex.encode(derived)),\(salt)"
        case .pbkdf2(.sha1): return "-pbkdf2-\(Hex.encode(derived)),\(salt),\(iterations)"
        case .pbkdf2(.sha256): return "-pbkdf2:sha256-\(Hex.encode(derived)),\(salt),\(iterations)"
        }
    }

    /// Whether `password` is the one hashed, compared in constant time.
    func verify(_ password: String) -> Bool {
        let computed: [UInt8]
        switch scheme {
        case .simple: computed = SHA1.hash(Array(password.utf8) + Array(salt.utf8))
        case .pbkdf2(let prf):
            computed = PBKDF2.deriveKey(password: Array(password.utf8), salt: Array(salt.utf8), iterations: iterations,
                                        prf: prf, outputByteCount: derived.count)
        }
        return constantTimeEqual(computed, derived)
    }
}
