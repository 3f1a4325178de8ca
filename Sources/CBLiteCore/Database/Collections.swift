/// Scopes and collections (Couchbase Lite 3.x): the default collection always exists;
/// named ones are created, listed, opened and deleted here.
extension Database {
    public static let defaultName = "_default"

    /// 1–251 bytes of ASCII letters, digits, '_', '-', '%', not starting with '_' or '%';
    /// "_default" is the one reserved name allowed.
    public static func validateCollectionName(_ name: String, what: String) throws {
        if name == defaultName { return }
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 251 else { throw CBLError.badRequest("\(what) name must be 1 to 251 bytes") }
        guard bytes[0] != UInt8(ascii: "_") && bytes[0] != UInt8(ascii: "%") else {
            throw CBLError.badRequest("\(what) name must not start with '_' or '%': \"\(name)\"")
        }
        let ok = bytes.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || c == UInt8(ascii: "_") || c == UInt8(ascii: "-") || c == UInt8(ascii: "%")
        }
        guard ok else { throw CBLError.badRequest("\(what) name may only contain letters, digits, '_', '-' and '%': \"\(name)\"") }
    }

    public func defaultCollection() throws -> Collection {
        try checkOpen()
        return Collection(database: self, id: 1, scope: Database.defaultName, name: Database.defaultName)
    }

    /// An existing collection, or nil.
    public func collection(scope: String?, name: String) throws -> Collection? {
        try checkOpen()
        let scope = scope ?? Database.defaultName
        try Database.validateCollectionName(scope, what: "scope")
        try Database.validateCollectionName(name, what: "collection")
        let id: Int64? = try store.read { conn in
            let s = try conn.prepare("SELECT id FROM collections WHERE scope=? AND name=?")
            defer { s.reset() }
            s.bind(1, scope).bind(2, name)
            return try s.step() ? s.int(0) : nil
        }
        return id.map { Collection(database: self, id: $0, scope: scope, name: name) }
    }

    public func createCollection(scope: String?, name: String) throws -> Collection {
        if let c = try collection(scope: scope, name: name) { return c }
        let scope = scope ?? Database.defaultName
        if scope == Database.defaultName && name == Database.defaultName { return try defaultCollection() }
        let id: Int64 = try store.write(timeoutMs: busyTimeoutMs) { conn, _ in
            let s = try conn.prepare("INSERT INTO collections(scope, name) VALUES (?, ?) ON CONFLICT(scope, name) DO NOTHING")
            s.bind(1, scope).bind(2, name)
            try s.run()
            let q = try conn.prepare("SELECT id FROM collections WHERE scope=? AND name=?")
            defer { q.reset() }
            q.bind(1, scope).bind(2, name)
            guard try q.step() else { throw CBLError.internalError("collection was not created") }
            let id = q.int(0)
            try conn.exec(Schema.createCollection(id))
            return id
        }
        return Collection(database: self, id: id, scope: scope, name: name)
    }

    public func deleteCollection(scope: String?, name: String) throws {
        let scope = scope ?? Database.defaultName
        if scope == Database.defaultName && name == Database.defaultName {
            throw CBLError(.forbidden, "the default collection cannot be deleted")
        }
        guard let c = try collection(scope: scope, name: name) else {
            throw CBLError.notFound("collection \(scope).\(name) does not exist")
        }
        try store.write(timeoutMs: busyTimeoutMs) { conn, txn in
            let s = try conn.prepare("DELETE FROM collections WHERE id=?")
            s.bind(1, c.id)
            try s.run()
            let l = try conn.prepare("DELETE FROM localdocs WHERE coll=?")
            l.bind(1, c.id)
            try l.run()
            try conn.exec("DROP TABLE IF EXISTS \(Schema.docTable(c.id))")
            try ViewIndexRegistry.collectionDeleted(conn, collectionID: c.id)
            try PurgeHistory.collectionDeleted(conn, collectionID: c.id)
            txn.forget(c.id)
        }
        store.markCollectionDeleted(c.id)
    }

    public func scopeNames() throws -> [String] {
        try checkOpen()
        return try store.read { conn in
            let s = try conn.prepare("SELECT DISTINCT scope FROM collections ORDER BY scope")
            defer { s.reset() }
            var out: [String] = []
            while try s.step() { out.append(s.string(0) ?? "") }
            return out
        }
    }

    /// The collection names of a scope; 404 when the scope has none.
    public func collectionNames(scope: String?) throws -> [String] {
        try checkOpen()
        let scope = scope ?? Database.defaultName
        try Database.validateCollectionName(scope, what: "scope")
        let names: [String] = try store.read { conn in
            let s = try conn.prepare("SELECT name FROM collections WHERE scope=? ORDER BY name")
            defer { s.reset() }
            s.bind(1, scope)
            var out: [String] = []
            while try s.step() { out.append(s.string(0) ?? "") }
            return out
        }
        guard !names.isEmpty else { throw CBLError.notFound("scope \"\(scope)\" does not exist") }
        return names
    }

    /// Every collection's ID and table (maintenance, expiration).
    func allCollectionIDs() throws -> [Int64] {
        try store.read { try collectionIDs($0) }
    }

    func collectionIDs(_ conn: Connection) throws -> [Int64] {
        let s = try conn.prepare("SELECT id FROM collections ORDER BY id")
        defer { s.reset() }
        var out: [Int64] = []
        while try s.step() { out.append(s.int(0)) }
        return out
    }
}
