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
        // The head goes with the first piece: an error before it is still an error answer.
        var started = false
        try ViewResponse.answer(view, options) { piece in
            if !started { res.begin(status: 200); started = true }
            try res.write(piece)
        }
        try res.write([10])
    }

    /// POST `/{db}/_design/{ddoc}/_view/{view}/queries`: `{"queries": [options...]}` →
    /// `{"results": [answer...]}`.
    func viewQueries(_ name: String, _ ddoc: String, _ viewName: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        let view = try servedView(name, ddoc, viewName)
        var body = Array("{\"results\":[".utf8)
        for (i, o) in try req.queriesBody(limit: limits.maxBodyBytes).enumerated() {
            if i > 0 { body += Array(",\n".utf8) }
            // Whole before the head: an error in any query is that request's error answer.
            try ViewResponse.answer(view, o) { body += $0 }
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
    /// Runs one query (CouchDB's options) and hands its answer to `sink` in pieces of
    /// about `chunkBytes`, so an answer of any size is written in bounded memory. Bad
    /// options and a failing first read throw before `sink` is first called (an error
    /// answer can still be sent).
    static func answer(_ view: View, _ given: JSONObject, chunkBytes: Int = 64 * 1024,
                       to sink: ([UInt8]) throws -> Void) throws {
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
        // A full-text query's rows are matches (never reduced), its offset is its skip.
        let fullText = query.fullTextQuery != nil
        let aggregated = !fullText && ((view.hasReduce && query.reduce != false) || query.group || query.groupLevel > 0)
        var row = QueryRowRef()
        var more = try result.next(into: &row)
        var w = JSONWriter(capacity: chunkBytes + 4096)
        if aggregated || !query.sorted {
            w.append("{")
        } else {
            // CouchDB's offset: the rows before the first one answered (all of them when none is).
            var offset = result.totalRows
            if fullText {
                offset = query.skip
            } else if more, let id = row.sourceDocID ?? row.docID {
                offset = try rowsBefore(view, query, key: Array(row.key), docID: String(decoding: id, as: UTF8.self))
            }
            w.append("{\"total_rows\":\(result.totalRows),\"offset\":\(offset),")
        }
        if updateSeq { w.append("\"update_seq\":\(result.lastSequence),") }
        w.append("\"rows\":[")
        var first = true
        while more {
            w.append(first ? "\n{" : ",\n{")
            first = false
            // A linked document's row: "id" is the emitting document's, "doc" the linked one.
            if let id = row.sourceDocID ?? row.docID {
                w.append("\"id\":")
                w.writeString(utf8: id)
                w.append(",")
            }
            w.append("\"key\":")
            w.appendRaw(row.key)
            w.append(",\"value\":")
            if let v = row.value { w.appendRaw(v) } else { w.append("null") }
            if query.includeDocs && row.docID != nil {
                w.append(",\"doc\":")
                if let d = row.doc { w.appendRaw(d) } else { w.append("null") }
            }
            w.append("}")
            if w.bytes.count >= chunkBytes {
                try sink(w.bytes)
                w = JSONWriter(capacity: chunkBytes + 4096)
            }
            more = try result.next(into: &row)
        }
        w.append(first ? "]}" : "\n]}")
        try sink(w.bytes)
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
