import CBLiteCore

/// The TXT metadata a cblite listener advertises with its service (DNS-SD, RFC 6763 §6):
/// `txtvers=1`, `tls=0|1`, `sha256=<certificate fingerprint>` (with TLS: what a peer pins),
/// and the served database names, comma-separated (a database name never holds a comma),
/// in `db`, then `db2`, `db3`… when one item (at most 255 bytes) cannot hold them all.
/// The whole record stays within `maxBytes` (RFC 6763 §6.2 advises under 1300 bytes for one
/// packet); names that do not fit are left out and `db_more=1` says so.
public struct ServiceTXT: Equatable, Sendable {
    public var databases: [String]
    public var tls: Bool
    public var sha256: String?
    /// Some database names did not fit in the record.
    public var moreDatabases = false
    /// Every item as advertised, known or not (other implementations add their own).
    public var items: [String: String] = [:]

    public static let maxBytes = 1300
    static let maxItemBytes = 255

    public init(databases: [String], tls: Bool, sha256: String?) {
        self.databases = databases
        self.tls = tls
        self.sha256 = sha256
    }

    /// The items, in order, each `key=value`.
    public func build() -> [String] {
        var out = ["txtvers=1", "tls=\(tls ? 1 : 0)"]
        if let sha256 { out.append("sha256=\(sha256)") }
        // Room for the names: the record's budget less what is already used, each item
        // costing its length byte, and `db_more=1` kept in reserve.
        var budget = Self.maxBytes - out.reduce(0) { $0 + 1 + $1.utf8.count } - (1 + "db_more=1".utf8.count)
        var chunks: [String] = []       // the values of db, db2, db3…
        var left = false
        for name in databases {
            let n = name.utf8.count
            if let last = chunks.last, Self.key(chunks.count).utf8.count + 1 + last.utf8.count + 1 + n <= Self.maxItemBytes,
               1 + n <= budget {
                chunks[chunks.count - 1] += "," + name
                budget -= 1 + n
                continue
            }
            let item = Self.key(chunks.count + 1).utf8.count + 1 + n
            guard item <= Self.maxItemBytes, 1 + item <= budget else { left = true; break }
            chunks.append(name)
            budget -= 1 + item
        }
        for (i, value) in chunks.enumerated() { out.append("\(Self.key(i + 1))=\(value)") }
        if left { out.append("db_more=1") }
        return out
    }

    /// Reads the items of a TXT record (any peer's: unknown keys are kept in `items`, a
    /// key without `=` is a boolean attribute, the first of a repeated key wins as RFC 6763
    /// §6.4 says).
    public init(parsing raw: [String]) {
        var items: [String: String] = [:]
        for item in raw where !item.isEmpty {
            let key: String, value: String
            if let eq = item.firstIndex(of: "=") {
                key = String(item[..<eq]).lowercased()
                value = String(item[item.index(after: eq)...])
            } else {
                key = item.lowercased()
                value = ""
            }
            if !key.isEmpty && items[key] == nil { items[key] = value }
        }
        var names: [String] = []
        var chunk = 1
        while let list = items[Self.key(chunk)] {
            names += list.split(separator: ",").map(String.init)
            chunk += 1
        }
        self.init(databases: names, tls: items["tls"] == "1", sha256: items["sha256"].flatMap { Self.isFingerprint($0) ? $0.lowercased() : nil })
        moreDatabases = items["db_more"] == "1"
        self.items = items
    }

    /// The key of the n-th item of database names (from 1).
    static func key(_ n: Int) -> String { n == 1 ? "db" : "db\(n)" }

    static func isFingerprint(_ s: String) -> Bool {
        s.utf8.count == 64 && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) }
    }
}
