import Glibc

/// What a database file looks like from its bytes, when SQLite refuses it (SQLITE_NOTADB):
/// SQLite cannot tell an encrypted file from a damaged one, so this tells them apart for
/// the error message. An SQLCipher file is uniformly random from its first byte; a plain
/// SQLite file starts with "SQLite format 3\0"; a plain file whose first page was garbled
/// still carries its schema's text (sqlite_master lives on page 1) or other plain bytes.
enum FileDiagnosis: Equatable {
    case missing
    case empty
    /// Starts with SQLite's magic header: a plain (unencrypted) database.
    case plainSQLite
    /// Random-looking throughout, in whole pages: encrypted (or indistinguishable from it).
    case looksEncrypted
    /// Anything else: not a database, or one whose header is damaged.
    case damaged

    static let sqliteMagic: [UInt8] = Array("SQLite format 3".utf8) + [0]

    static func classify(_ path: String) -> FileDiagnosis {
        guard let f = fopen(path, "rb") else { return .missing }
        defer { fclose(f) }
        var page = [UInt8](repeating: 0, count: 4096)
        let n = fread(&page, 1, page.count, f)
        if n == 0 { return .empty }
        page.removeSubrange(n...)
        if page.starts(with: sqliteMagic) { return .plainSQLite }
        fseek(f, 0, SEEK_END)
        let size = ftell(f)
        // SQLCipher writes whole pages of 512 bytes or more.
        if size < 512 || size % 512 != 0 { return .damaged }
        if containsSchemaText(page) { return .damaged }
        return looksRandom(page) ? .looksEncrypted : .damaged
    }

    /// "CREATE TABLE" in the first page: plain schema text survived a garbled header.
    private static func containsSchemaText(_ page: [UInt8]) -> Bool {
        let needle = Array("CREATE TABLE".utf8)
        guard page.count >= needle.count else { return false }
        for i in 0...(page.count - needle.count) where page[i] == needle[0] {
            if Array(page[i..<(i + needle.count)]) == needle { return true }
        }
        return false
    }

    /// Encrypted pages use nearly every byte value about equally: on a 4 KiB page, a byte
    /// value is seldom missing and none dominates. Zeros, text and b-tree pages fail this.
    private static func looksRandom(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 1024 else { return false }
        var counts = [Int](repeating: 0, count: 256)
        for b in bytes { counts[Int(b)] += 1 }
        let expected = Double(bytes.count) / 256
        let present = counts.filter { $0 > 0 }.count
        let maxCount = counts.max() ?? 0
        return present >= 240 && Double(maxCount) < expected * 3 + 8
    }

    /// The error for a file SQLite refused as "not a database", given whether a key was used.
    static func notADatabaseError(_ path: String, keyGiven: Bool, detail: Int32) -> CBLError {
        switch classify(path) {
        case .looksEncrypted:
            return CBLError(.unauthorized, keyGiven
                ? "wrong encryption key"
                : "the database is encrypted: an encryption key is required", detail: detail)
        case .plainSQLite where keyGiven:
            return CBLError(.unauthorized, "the database is not encrypted: open it without an encryption key", detail: detail)
        case .missing, .empty, .plainSQLite, .damaged:
            return CBLError(.internalError, damagedMessage, detail: detail)
        }
    }

    static let damagedMessage = "not a database, or the database file is damaged (its header is unreadable)"
}
