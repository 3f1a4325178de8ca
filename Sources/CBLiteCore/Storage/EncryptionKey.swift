/// A database encryption key: a password (stretched by SQLCipher's PBKDF2) or a raw
/// 256-bit key. It never appears in logs or error messages (no description of it is
/// ever printed: `description` is redacted).
public enum EncryptionKey: Equatable, Sendable, CustomStringConvertible {
    case password(String)
    case raw([UInt8])

    public var description: String { "<encryption key>" }

    /// Parses {"password": "..."} or {"raw_hex": "<64 hex digits>"}.
    public init(json: JSONValue) throws {
        guard let o = json.objectValue, o.members.count == 1, let (k, v) = o.members.first else {
            throw CBLError.badRequest("encryption key must be an object with \"password\" or \"raw_hex\"")
        }
        switch k {
        case "password":
            guard let s = v.stringValue, !s.isEmpty else { throw CBLError.badRequest("\"password\" must be a non-empty string") }
            self = .password(s)
        case "raw_hex":
            guard let s = v.stringValue, let bytes = Hex.decode(s), bytes.count == 32 else {
                throw CBLError.badRequest("\"raw_hex\" must be 64 hexadecimal digits (a 256-bit key)")
            }
            self = .raw(bytes)
        default:
            throw CBLError.badRequest("encryption key must be an object with \"password\" or \"raw_hex\"")
        }
    }

    public init(jsonText: String) throws {
        try self.init(json: try JSONParser.parse(jsonText))
    }

    /// What sqlite3_key receives: the password bytes, or SQLCipher's x'<hex>' raw form.
    var sqlcipherKeyBytes: [UInt8] {
        switch self {
        case .password(let p): return Array(p.utf8)
        case .raw(let b):
            let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
            var out: [UInt8] = Array("x'".utf8)
            for byte in b { out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 15)]) }
            out.append(UInt8(ascii: "'"))
            return out
        }
    }

    /// Key material for deriving other keys (attachment encryption): SHA-256 of a
    /// domain-separated encoding, so it is never the SQLCipher key itself.
    public var derivationSecret: [UInt8] {
        var h = SHA256()
        h.update(Array("cblite-key-v1:".utf8))
        switch self {
        case .password(let p): h.update([0]); h.update(Array(p.utf8))
        case .raw(let b): h.update([1]); h.update(b)
        }
        return h.finalize()
    }
}
