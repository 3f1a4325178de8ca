import ArgumentParser
import CBLiteCore

// encrypt, decrypt, rekey: one key change (Database.changeEncryptionKey) each. The new
// key comes from $CBLITE_DB_NEW_PASSWORD / $CBLITE_DB_NEW_KEY or the terminal, never
// from the command line (where `ps` would show it).

struct NewKeyOptions: ParsableArguments {
    @Flag(name: .customLong("new-password"), help: "The new key is a password: $CBLITE_DB_NEW_PASSWORD, else asked on the terminal.")
    var newPassword = false
    @Flag(name: .customLong("new-key"), help: "The new key is 64 hex digits: $CBLITE_DB_NEW_KEY, else asked on the terminal.")
    var newKey = false

    func key() throws -> EncryptionKey {
        guard newPassword || newKey else { throw ToolError.usage("give --new-password or --new-key") }
        return try Secrets.databaseKey(password: newPassword, raw: newKey, envPrefix: "CBLITE_DB_NEW", what: " new")!
    }
}

func changeKey(_ db: DatabaseOptions, to key: EncryptionKey?, command: String, verb: String) throws {
    try db.withDatabase { d in try Progress.activity(command, json: db.json) { try d.changeEncryptionKey(key) } }
    if db.json { print(JSONObject([(verb, .bool(true)), ("encrypted", .bool(key != nil))]).jsonText) }
    else { print("\(verb): \(key == nil ? "the database is no longer encrypted" : "the database is encrypted with the new key")") }
}

struct Encrypt: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Encrypt a plain database (every document and attachment is rewritten).")
    @OptionGroup var db: DatabaseOptions
    @OptionGroup var new: NewKeyOptions
    func run() throws {
        if db.password || db.rawKey { throw ToolError.usage("the database is not encrypted yet: use --new-password or --new-key") }
        try changeKey(db, to: try new.key(), command: "encrypt", verb: "encrypted")
    }
}

struct Decrypt: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove a database's encryption (give its key with --password or --raw-key).")
    @OptionGroup var db: DatabaseOptions
    func run() throws {
        guard db.password || db.rawKey else { throw ToolError.usage("give the database's key with --password or --raw-key") }
        try changeKey(db, to: nil, command: "decrypt", verb: "decrypted")
    }
}

struct Rekey: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Change an encrypted database's key (old: --password/--key, new: --new-password/--new-key).")
    @OptionGroup var db: DatabaseOptions
    @OptionGroup var new: NewKeyOptions
    func run() throws {
        guard db.password || db.rawKey else { throw ToolError.usage("give the database's current key with --password or --raw-key") }
        try changeKey(db, to: try new.key(), command: "rekey", verb: "rekeyed")
    }
}
