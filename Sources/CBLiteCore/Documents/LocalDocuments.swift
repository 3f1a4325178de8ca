/// Local documents: per collection, never replicated or in the changes feed, one body
/// and a revision "0-<n>" each (checkpoints and app-private data).
extension Collection {
    /// How a local write's revision relates to the stored one.
    public enum LocalRevisionRule: Sendable {
        /// The write names the current revision (none to create): otherwise 409.
        case mustMatch
        /// CouchDB 3's rule: nothing conflicts; the new revision is the one named plus one
        /// ("0-1" when none is named), whatever is stored.
        case followsGiven
    }

    private static func localRev(_ n: Int64) -> String { "0-\(n)" }

    private static func parseLocalRev(_ s: String, allowZero: Bool = false) throws -> Int64 {
        guard s.hasPrefix("0-"), let n = Int64(s.dropFirst(2)), n > 0 || (allowZero && n == 0) else {
            throw CBLError.badRequest("invalid local revision ID \"\(s)\"")
        }
        return n
    }

    private static func validateLocalID(_ id: String) throws {
        let u = id.utf8
        guard !u.isEmpty, u.count <= 1024 else { throw CBLError.badRequest("local document ID must be 1 to 1024 bytes") }
        guard !u.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw CBLError.badRequest("local document ID must not contain control characters")
        }
    }

    public func getLocal(id: String) throws -> [UInt8] {
        try check()
        try Collection.validateLocalID(id)
        return try store.read { conn in
            let s = try conn.prepare("SELECT rev, body FROM localdocs WHERE coll=? AND id=?")
            defer { s.reset() }
            s.bind(1, self.id).bind(2, id)
            guard try s.step() else { throw CBLError.notFound("local document \"\(id)\" does not exist") }
            return DocumentJSON.render(docID: id, rev: Collection.localRev(s.int(0)), deleted: false, body: s.bytes(1))
        }
    }

    /// Every local document of the collection, by ID (CouchDB's `_local_docs`).
    public func localDocuments() throws -> [(id: String, rev: String, json: [UInt8])] {
        try check()
        return try store.read { conn in
            let s = try conn.prepare("SELECT id, rev, body FROM localdocs WHERE coll=? ORDER BY id")
            defer { s.reset() }
            s.bind(1, self.id)
            var out: [(id: String, rev: String, json: [UInt8])] = []
            while try s.step() {
                let id = s.string(0) ?? ""
                let rev = Collection.localRev(s.int(1))
                out.append((id, rev, DocumentJSON.render(docID: id, rev: rev, deleted: false, body: s.bytes(2))))
            }
            return out
        }
    }

    public func putLocal(id: String, json: String, parent: String?, rule: LocalRevisionRule = .mustMatch) throws -> String {
        try check()
        try Collection.validateLocalID(id)
        let object = try JSONParser.parseObject(json)
        for (k, _) in object.members where k.hasPrefix("_") && k != "_id" && k != "_rev" {
            throw CBLError.badRequest("property \"\(k)\" is reserved in local documents")
        }
        if let bodyID = object["_id"]?.stringValue, bodyID != id { throw CBLError.badRequest("\"_id\" differs from the local document ID") }
        let parentText = parent ?? object["_rev"]?.stringValue
        let parentN = try parentText.map { try Collection.parseLocalRev($0, allowZero: rule == .followsGiven) }
        var w = JSONWriter()
        w.writeObject(object) { $0 == "_id" || $0 == "_rev" }
        let body = w.bytes
        return try store.write(timeoutMs: database.busyTimeoutMs) { conn, _ in
            let s = try conn.prepare("SELECT rev FROM localdocs WHERE coll=? AND id=?")
            s.bind(1, self.id).bind(2, id)
            let current: Int64? = try s.step() ? s.int(0) : nil
            s.reset()
            switch (current, parentN) {
            case _ where rule == .followsGiven: break
            case (nil, nil): break
            case (nil, .some): throw CBLError.conflict("local document \"\(id)\" does not exist, so it has no revision to update")
            case (.some, nil): throw CBLError.conflict("local document \"\(id)\" already exists")
            case (.some(let c), .some(let p)) where c != p:
                throw CBLError.conflict("local document update conflict: \(Collection.localRev(p)) is not current")
            default: break
            }
            let next = (rule == .followsGiven ? parentN ?? 0 : current ?? 0) + 1
            let u = try conn.prepare("INSERT OR REPLACE INTO localdocs(coll, id, rev, body) VALUES (?,?,?,?)")
            u.bind(1, self.id).bind(2, id).bind(3, next).bindText(4, body)
            try u.run()
            return Collection.localRev(next)
        }
    }

    public func deleteLocal(id: String, parent: String?) throws {
        try check()
        try Collection.validateLocalID(id)
        let parentN = try parent.map { try Collection.parseLocalRev($0) }
        try store.write(timeoutMs: database.busyTimeoutMs) { conn, _ in
            let s = try conn.prepare("SELECT rev FROM localdocs WHERE coll=? AND id=?")
            s.bind(1, self.id).bind(2, id)
            let current: Int64? = try s.step() ? s.int(0) : nil
            s.reset()
            guard let current else { throw CBLError.notFound("local document \"\(id)\" does not exist") }
            if let parentN, parentN != current { throw CBLError.conflict("local document delete conflict") }
            let d = try conn.prepare("DELETE FROM localdocs WHERE coll=? AND id=?")
            d.bind(1, self.id).bind(2, id)
            try d.run()
        }
    }
}

extension Collection {
    // MARK: the list as cbl_local_list gives it

    /// `[{"id": local_id, "rev": "0-n"}, ...]`, by ID; with `includeDocs` each has its `doc`.
    /// The IDs are bare (as cbl_local_list documents them): the listener adds `_local/`.
    public func localDocumentsJSON(includeDocs: Bool) throws -> [UInt8] {
        JSONWriter.ordered(.array(try localDocuments().map { d in
            var o = JSONObject([("id", .string(d.id)), ("rev", .string(d.rev))])
            if includeDocs { o["doc"] = try d.json.withUnsafeBufferPointer { try JSONParser.parse(bytes: $0) } }
            return .object(o)
        }))
    }
}
