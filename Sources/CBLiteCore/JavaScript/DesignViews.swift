/// Views named "DDOC/VIEW" take their functions from the stored design document
/// `_design/DDOC` when none were registered through the API (registered ones win):
/// loaded when queried or updated, reloaded when the design document's revision changes;
/// the index is rebuilt only when the view's own code changes (viewSignature).
extension View {
    /// ("DDOC", "VIEW") for a name of that form.
    public var designViewName: (ddoc: String, view: String)? {
        guard let slash = name.firstIndex(of: "/") else { return nil }
        let ddoc = String(name[..<slash]), view = String(name[name.index(after: slash)...])
        return ddoc.isEmpty || view.isEmpty ? nil : (ddoc, view)
    }

    /// Loads (or drops) the design document's functions; nothing for other views. Queries
    /// and updates call it; callers that look at hasMap/hasReduce first call it too.
    public func loadDesignFunctions() throws {
        guard let (ddocName, viewName) = designViewName else { return }
        let origin = functionOrigin
        if origin.registered { return }
        guard let ddoc = try DesignDocument.load(collection, name: ddocName), let v = ddoc.view(viewName) else {
            if origin.designRevision != nil { setDesignFunctions(map: nil, reduce: nil, version: "", revision: nil) }
            return
        }
        if origin.designRevision == ddoc.revID { return }
        let reducer = try JSViewFunctions.reducer(v.reduce, ddoc, viewName)
        setDesignFunctions(map: JSViewFunctions.map(ddoc, viewName), reduce: reducer,
                           version: ddoc.viewSignature(viewName), revision: ddoc.revID)
    }
}

extension Collection {
    /// The view "DDOC/VIEW" when the stored design document `_design/DDOC` defines it.
    public func designView(named name: String) throws -> View? {
        let v = try view(named: name)
        guard let (ddoc, viewName) = v.designViewName,
              try DesignDocument.load(self, name: ddoc)?.view(viewName) != nil else { return nil }
        return v
    }
}

extension Collection {
    /// CouchDB's _view_cleanup: drops the indexes of design-document views that no stored
    /// design document defines any more, or whose code changed since they were built
    /// (the view would rebuild them anyway). Indexes of API-registered views are kept.
    /// Returns the names dropped.
    @discardableResult
    public func cleanUpDesignViews() throws -> [String] {
        var dropped: [String] = []
        for name in try viewNames() {
            let v = try view(named: name)
            guard let (ddoc, viewName) = v.designViewName, let st = try v.state(), st.version.hasPrefix(DesignDocument.signaturePrefix) else { continue }
            let design = try DesignDocument.load(self, name: ddoc)
            if design?.view(viewName) != nil && design?.viewSignature(viewName) == st.version { continue }
            try v.delete()
            dropped.append(name)
        }
        return dropped
    }

    /// CouchDB's view compaction (`POST /db/_compact/DDOC`): the design document's view
    /// indexes are SQLite tables of the database file, so compacting them is rewriting
    /// the file (Database.rewriteFile), which packs them with every other table and keeps
    /// every revision (unlike Database.compact). 404 when no design document `name` exists.
    public func compactDesignViews(name: String) throws {
        guard try DesignDocument.load(self, name: name) != nil else { throw CBLError(.notFound, "missing") }
        try database.rewriteFile()
    }

    /// The `_info` of design document `name` (CouchDB's view_index object): its views'
    /// least indexed sequence, the changes pending, a signature of its views' code.
    public func designInfo(name: String) throws -> JSONObject? {
        guard let design = try DesignDocument.load(self, name: name) else { return nil }
        var seq: Int64? = nil
        var signatures: [JSONValue] = []
        for v in design.viewNames {
            let indexed = try view(named: name + "/" + v).lastSequenceIndexed
            seq = min(seq ?? indexed, indexed)
            signatures.append(.string(design.viewSignature(v)))
        }
        let updateSeq = seq ?? 0
        let pending = JSONValue.int(max(0, try lastSequence - updateSeq))
        let signature = Hex.encode(SHA256.hash(JSONWriter.canonical(.array(signatures))).prefix(16))
        return JSONObject([
            ("name", .string(name)),
            ("view_index", .object(JSONObject([
                ("updates_pending", .object(JSONObject([("minimum", pending), ("preferred", pending), ("total", pending)]))),
                ("waiting_commit", .bool(false)), ("waiting_clients", .int(0)), ("updater_running", .bool(false)),
                ("update_seq", .int(updateSeq)),
                ("signature", .string(signature)), ("purge_seq", .int(0)), ("language", .string(design.language)),
                ("compact_running", .bool(false)),
            ]))),
        ])
    }
}
