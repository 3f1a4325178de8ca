/// The Mango indexes of a collection: read from its `language: "query"` design
/// documents, created and deleted by writing them (POST/DELETE /db/_index's rules), and
/// their view indexes dropped with them.
extension Collection {
    /// The live design documents (ID range "_design/"…"_design0"), parsed (read again
    /// only when one changed: DesignDocumentCache).
    func designDocuments() throws -> [JSONObject] {
        try store.designDocuments.current(self).documents.map(\.body)
    }

    /// The json indexes, by design document ID then name (byte order), as CouchDB lists them.
    public func mangoIndexes() throws -> [MangoIndex] {
        try store.designDocuments.current(self).value(MangoIndex.defined)
    }

    /// The json indexes a find chooses from: after a change of the design documents, the
    /// view indexes of those they no longer define are dropped first (once per change).
    func mangoIndexesForFind() throws -> [MangoIndex] {
        try store.designDocuments.current(self).indexes(MangoIndex.defined) { try dropOrphanMangoViews(keeping: $0) }
    }

    /// `GET /db/_index`'s answer: the special `_all_docs` index, then the json, text and nouveau ones.
    public func mangoIndexListJSON(limit: Int? = nil, skip: Int = 0) throws -> JSONValue {
        let all = [MangoIndex.special.json] + (try mangoIndexes().map(\.json) + textIndexes().map(\.json)
            + mangoNouveauIndexes().map(\.json)).sorted(by: TextIndexDefinition.listed)
        let page = all.dropFirst(skip).prefix(limit ?? all.count)
        return .object(JSONObject([("total_rows", .int(Int64(all.count))), ("indexes", .array(Array(page)))]))
    }

    /// Creates a json index from `POST /db/_index`'s body; returns "created" or "exists",
    /// the design document ID and the index name.
    public func createMangoIndex(_ body: JSONValue) throws -> (result: String, id: String, name: String) {
        guard case .object(let o) = body else { throw MangoError(400, "bad_request", "Request body must be a JSON object") }
        for (k, _) in o.members where !["index", "type", "name", "ddoc", "w", "partitioned"].contains(k) {
            throw MangoError.invalidKey(k)
        }
        guard let def = o["index"] else { throw MangoError.missingKey("index") }
        if let t = o["type"] {
            guard case .string(let type) = t else { throw MangoError.invalidIndex("Invalid type for index: \(ErlangTerm.format(t))") }
            if type == "text" { return try createTextIndex(mango: o) }
            if type == "nouveau" { return try createNouveauIndex(mango: o) }
            if type != "json" { throw MangoError.invalidIndex("Invalid type for index: \(type)") }
        }
        guard case .object(let d) = def else {
            throw MangoError.invalidIndex("JSON indexes must be an object, not: \(ErlangTerm.format(def))")
        }
        for (k, _) in d.members where k != "fields" && k != "partial_filter_selector" { throw MangoError.invalidKey(k) }
        guard let f = d["fields"] else { throw MangoError.missingKey("fields") }
        let sort = try SortSpec(f)
        guard !sort.fields.isEmpty else { throw MangoError.invalidIndex("Index fields must not be empty.") }
        for field in sort.fields { _ = try FieldPath(field) }
        var partial: Selector? = nil
        if let p = d["partial_filter_selector"] {
            let s = try Selector(p)
            partial = s.isEmpty ? nil : s
        }
        let names = try QueryIndexNaming.names(o, definition: def)
        let ddocID = MangoIndex.ddocID(names.ddoc)
        let name = names.name
        let index = MangoIndex(ddoc: ddocID, name: name, columns: sort.fields, partialFilter: partial)

        let existing = parsedDesignDocument(ddocID)
        if let obj = existing {
            guard obj["language"] == .string("query") else {
                throw MangoError(400, "invalid_ddoc_lang",
                                 "Existing design doc has an invalid language: \(ErlangTerm.format(obj["language"] ?? .null))")
            }
            if let old = MangoIndex.from(designDocument: obj).first(where: { $0.name == name }), old.sameDefinition(index) {
                return ("exists", ddocID, name)
            }
        }
        try putQueryIndexEntry(existing, ddocID: ddocID, member: "views", name: name, definition: index.viewJSON(givenDef: def))
        try? index.view(in: self).delete()           // an index of the same name's former definition
        return ("created", ddocID, name)
    }

    /// Deletes a json index (`DELETE /db/_index/<ddoc>/json/<name>`); the design document
    /// goes when it has nothing left but its language. 404 when there is no such index.
    public func deleteMangoIndex(ddoc: String, type: String, name: String) throws {
        let ddocID = MangoIndex.ddocID(ddoc)
        if type == "text" { return try deleteTextIndex(mango: ddocID, name: name) }
        if type == "nouveau" { return try deleteNouveauIndex(mango: ddocID, name: name) }
        guard type == "json", let obj = parsedDesignDocument(ddocID),
              let index = MangoIndex.from(designDocument: obj).first(where: { $0.name == name }) else { throw MangoError.indexNotFound }
        try removeQueryIndexEntry(obj, ddocID: ddocID, member: "views", name: name)
        try? index.view(in: self).delete()
    }

    /// Drops the view indexes of Mango indexes no design document defines any more (one
    /// deleted or changed by replication or a document write). A find that raced the
    /// deletion of its index may leave one behind: it goes at the next change.
    func dropOrphanMangoViews(keeping live: [MangoIndex]) throws {
        let names = Set(live.map(\.viewName))
        for n in try store.read({ conn in try ViewStorage.names(conn, collectionID: id) })
        where n.hasPrefix(MangoIndex.viewPrefix) && !names.contains(n) {
            try? View(collection: self, name: n).delete()
        }
    }
}
