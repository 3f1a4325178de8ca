import CBLiteCore
import CouchWire
import NIOHTTP1

/// Mango over HTTP, in CouchDB's shapes: `POST /{db}/_find` (documents streamed as they
/// are found), `POST /{db}/_explain`, `GET|POST /{db}/_index` and
/// `DELETE /{db}/_index/{ddoc}/json/{name}`. Indexes are `language: "query"` design
/// documents, as CouchDB stores them (CBLiteCore's Mango module).
extension Router {
    func mango(_ name: String, _ what: String, _ rest: [String], _ req: Request, _ res: ResponseWriter) throws {
        do {
            switch what {
            case "_find": try find(name, req, res)
            case "_explain":
                try requireMethod(req, [.POST])
                let coll = try collection(name)
                let body = try mangoBody(req)
                if let text = try coll.textExplain(body, databaseName: name) { return res.sendJSON(200, text) }
                res.sendJSON(200, try coll.explain(try FindRequest(body), databaseName: name))
            default: try mangoIndex(name, rest, req, res)
            }
        } catch let e as MangoError {
            throw CouchError(status: e.status, error: e.error, reason: e.reason)
        }
    }

    /// The JSON body, with CouchDB's words when it is not JSON.
    private func mangoBody(_ req: Request) throws -> JSONValue {
        do { return try req.jsonBody(limit: limits.maxBodyBytes) } catch let e as CouchError where e.status == 400 {
            throw CouchError(status: 400, error: "bad_request", reason: "invalid UTF-8 JSON")
        }
    }

    private func find(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        let coll = try collection(name)
        let body = try mangoBody(req)
        if let text = try coll.textFind(body) { return try textFound(text, res) }
        let request = try FindRequest(body)
        let cursor = try coll.find(request)
        // The first document is read before the answer starts, so that an error is a status.
        var next = try cursor.nextJSON()
        res.begin(status: 200)
        try res.write(Array("{\"docs\":[".utf8))
        var first = true
        while let doc = next {
            try res.write((first ? [] : [UInt8(ascii: ",")]) + doc)
            first = false
            next = try cursor.nextJSON()
        }
        var tail = JSONWriter(canonical: false)
        tail.append("],\"bookmark\":")
        tail.writeString(cursor.bookmark)
        if let w = cursor.warning {
            tail.append(",\"warning\":")
            tail.writeString(w)
        }
        if request.executionStats {
            tail.append(",\"execution_stats\":")
            tail.write(cursor.executionStats)
        }
        tail.append("}\n")
        try res.write(tail.bytes)
    }

    /// A `$text` query's page (TextFind), in `_find`'s shape.
    private func textFound(_ page: (docs: [[UInt8]], bookmark: String), _ res: ResponseWriter) throws {
        var out = JSONWriter(canonical: false)
        out.append("{\"docs\":[")
        for (i, d) in page.docs.enumerated() {
            if i > 0 { out.append(",") }
            out.appendRaw(d)
        }
        out.append("],\"bookmark\":")
        out.writeString(page.bookmark)
        out.append("}\n")
        res.begin(status: 200)
        try res.write(out.bytes)
    }

    private func mangoIndex(_ name: String, _ rest: [String], _ req: Request, _ res: ResponseWriter) throws {
        let coll = try collection(name)
        if !rest.isEmpty {
            try requireMethod(req, [.DELETE])
            // {ddoc}/json/{name} or _design/{ddoc}/json/{name}
            let parts = rest.first == "_design" ? Array(rest.dropFirst()) : rest
            guard parts.count == 3 else { throw CouchError.notFound("missing") }
            try coll.deleteMangoIndex(ddoc: parts[0], type: parts[1], name: parts[2])
            return res.sendJSON(200, .object(JSONObject([("ok", .bool(true))])))
        }
        switch req.method {
        case .GET:
            func int(_ k: String) throws -> Int? {
                guard let t = req.query[k] else { return nil }
                guard let n = Int(t), n >= (k == "limit" ? 1 : 0) else {
                    throw CouchError(status: 500, error: "invalid_list_index_params", reason: "Index parameter ranges: limit > 1, skip > 0")
                }
                return n
            }
            res.sendJSON(200, try coll.mangoIndexListJSON(limit: try int("limit"), skip: try int("skip") ?? 0))
        case .POST:
            let r = try coll.createMangoIndex(try mangoBody(req))
            res.sendJSON(200, .object(JSONObject([("result", .string(r.result)), ("id", .string(r.id)), ("name", .string(r.name))])))
        default:
            throw CouchError.methodNotAllowed("GET,POST")
        }
    }
}
