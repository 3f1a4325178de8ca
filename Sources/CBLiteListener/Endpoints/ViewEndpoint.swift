import CBLiteCore
import CouchWire
import NIOHTTP1

/// `/{db}/_design/{ddoc}/_view/{view}[/queries]`: the views registered with
/// `Listener.serveView`, else the stored design document's JavaScript view (the engine's
/// view "ddoc/view", on the same index mechanism). CouchDB's query parameters
/// (JSON-valued), POST `{"keys": [...]}` and `{"queries": [...]}` (`/queries`), answered
/// in CouchDB's shape (ViewResponse).
extension Router {
    func view(_ name: String, _ ddoc: String, _ viewName: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD, .POST])
        let view = try servedView(name, ddoc, viewName)
        var options = JSONObject()
        for (k, v) in req.query.items {
            switch k {
            // Document IDs are given as they are, never as JSON.
            case "startkey_docid", "start_key_doc_id", "endkey_docid", "end_key_doc_id": options[k] = .string(v)
            // CouchDB's view parameters are JSON; a few (stale=ok, update=after) are bare words.
            default: options[k] = (try? JSONParser.parse(v)) ?? .string(v)
            }
        }
        if req.method == .POST {
            for (k, v) in try req.jsonObjectBody(limit: limits.maxBodyBytes).members { options[k] = v }
        }
        if options["queries"] != nil {
            throw CouchError.badRequest("The `queries` parameter is no longer supported at this endpoint")
        }
        res.sendJSON(200, raw: try ViewResponse.answer(view, options))
    }

    /// POST `/{db}/_design/{ddoc}/_view/{view}/queries`: `{"queries": [options...]}` →
    /// `{"results": [answer...]}`.
    func viewQueries(_ name: String, _ ddoc: String, _ viewName: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        let view = try servedView(name, ddoc, viewName)
        var body = Array("{\"results\":[".utf8)
        for (i, o) in try req.queriesBody(limit: limits.maxBodyBytes).enumerated() {
            if i > 0 { body += Array(",\n".utf8) }
            body += try ViewResponse.answer(view, o)
        }
        body += Array("]}".utf8)
        res.sendJSON(200, raw: body)
    }

    /// The view a request names: a registered one, else the design document's (404
    /// "missing" without the design document, "missing_named_view" without the view).
    private func servedView(_ name: String, _ ddoc: String, _ viewName: String) throws -> View {
        let coll = try collection(name)
        if let registered = server.views.view(database: name, designDoc: ddoc, name: viewName) { return registered }
        guard let design = try DesignDocument.load(coll, name: ddoc) else {
            throw CouchError.notFound(server.views.hasViews(database: name, designDoc: ddoc) ? "missing_named_view" : "missing")
        }
        if design.language != "javascript", design.body["views"]?.objectValue?[viewName] != nil {
            throw CouchError(status: 500, error: "unknown_query_language", reason: design.language)
        }
        guard design.view(viewName) != nil else { throw CouchError.notFound("missing_named_view") }
        return try coll.view(named: ddoc + "/" + viewName)
    }
}

/// A view's answer in CouchDB's shape: {"total_rows","offset",["update_seq"],"rows"} with
/// rows {"id","key","value"[,"doc"]}; reduced or grouped, {"rows"} of {"key","value"}.
enum ViewResponse {
    /// Runs one query (CouchDB's options) and writes its answer.
    static func answer(_ view: View, _ given: JSONObject) throws -> [UInt8] {
        try view.loadDesignFunctions()
        var options = given
        var updateSeq = false
        for (k, v) in given.members {
            switch k {
            case "update_seq":
                updateSeq = v.boolValue == true || v.stringValue == "true"
                options[k] = nil
            // CouchDB's clustering hints: one node here.
            case "stable", "conflicts", "partition": options[k] = nil
            // update=lazy: the rows as they are, the index brought up to date afterwards.
            case "update" where v.stringValue == "lazy": options[k] = .string("after")
            default: break
            }
        }
        let query: QueryOptions
        do { query = try QueryOptions(object: options) } catch let e as CBLError {
            throw CouchError(status: 400, error: "query_parse_error", reason: e.message)
        }
        try checkCouchRules(view, query, options)
        let result = try view.query(query)
        let aggregated = (view.hasReduce && query.reduce != false) || query.group || query.groupLevel > 0
        var w = JSONWriter(capacity: 1024)
        var rows = JSONWriter(capacity: 1024)
        var first = true
        var firstRow: (key: [UInt8], id: String)? = nil
        var row = QueryRowRef()
        while try result.next(into: &row) {
            rows.append(first ? "\n{" : ",\n{")
            first = false
            // A linked document's row: "id" is the emitting document's, "doc" the linked one.
            if let id = row.sourceDocID ?? row.docID {
                if firstRow == nil { firstRow = (Array(row.key), String(decoding: id, as: UTF8.self)) }
                rows.append("\"id\":")
                rows.writeString(utf8: id)
                rows.append(",")
            }
            rows.append("\"key\":")
            rows.appendRaw(row.key)
            rows.append(",\"value\":")
            if let v = row.value { rows.appendRaw(v) } else { rows.append("null") }
            if query.includeDocs && row.docID != nil {
                rows.append(",\"doc\":")
                if let d = row.doc { rows.appendRaw(d) } else { rows.append("null") }
            }
            rows.append("}")
        }
        if aggregated || !query.sorted {
            w.append("{")
        } else {
            let offset = try firstRow.map { try rowsBefore(view, query, key: $0.key, docID: $0.id) } ?? result.totalRows
            w.append("{\"total_rows\":\(result.totalRows),\"offset\":\(offset),")
        }
        if updateSeq { w.append("\"update_seq\":\(result.lastSequence),") }
        w.append("\"rows\":[")
        w.appendRaw(rows.bytes)
        w.append(first ? "]}" : "\n]}")
        return w.bytes
    }

    /// CouchDB's refusals the engine's options do not make (query_parse_error).
    private static func checkCouchRules(_ view: View, _ q: QueryOptions, _ options: JSONObject) throws {
        func refuse(_ reason: String) -> CouchError { CouchError(status: 400, error: "query_parse_error", reason: reason) }
        let reducing = view.hasReduce && q.reduce != false
        if !view.hasReduce && (q.group || q.groupLevel > 0) { throw refuse("Invalid use of grouping on a map view.") }
        if q.keys != nil && reducing && !q.group && q.groupLevel == 0 {
            throw refuse("Multi-key fetches for reduce views must use `group=true`")
        }
        let start = options["startkey"] ?? options["start_key"], end = options["endkey"] ?? options["end_key"]
        if let start, let end {
            let order = Collation.compare(Collation.compactJSON(start), Collation.compactJSON(end))
            if q.descending ? order < 0 : order > 0 {
                throw refuse("No rows can match your key range, reverse your start_key and end_key or set descending=true")
            }
        }
    }

    /// CouchDB's "offset": the index rows before the first row answered, in the query's
    /// order (a count over them).
    private static func rowsBefore(_ view: View, _ q: QueryOptions, key: [UInt8], docID: String) throws -> Int64 {
        var before = QueryOptions()
        before.descending = q.descending
        before.reduce = false
        before.update = .never
        before.endKey = try JSONParser.parse(String(decoding: key, as: UTF8.self))
        before.endKeyDocID = docID
        before.inclusiveEnd = false
        let result = try view.query(before)
        var n: Int64 = 0
        var row = QueryRowRef()
        while try result.next(into: &row) { n += 1 }
        return n
    }
}
