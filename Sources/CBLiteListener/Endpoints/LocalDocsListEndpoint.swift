import CBLiteCore
import CouchWire
import NIOHTTP1

/// `_local_docs`: the local documents by ID, as CouchDB lists them (`total_rows` and
/// `offset` null), with `keys` (GET or POST), the ID range, `descending`, `skip`, `limit`
/// and `include_docs`; `…/queries` runs several in one request.
extension Router {
    func localDocs(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD, .POST])
        let coll = try collection(name)
        var params = try Router.localDocsParameters(req.query)
        if req.method == .POST {
            try requireJSONContent(req)
            try Router.mergeLocalDocsBody(try req.jsonObjectBody(limit: limits.maxBodyBytes), into: &params)
        }
        let rows = try localDocsRows(coll, params)
        res.begin(status: 200)
        try res.write(rows + [10])
    }

    func localDocsQueries(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        try requireJSONContent(req)
        let coll = try collection(name)
        let base = try Router.localDocsParameters(req.query)
        let answers = try req.queriesBody(limit: limits.maxBodyBytes).map { o in
            var params = base
            try Router.mergeLocalDocsBody(o, into: &params)
            return try localDocsRows(coll, params)
        }
        res.begin(status: 200)
        try res.write(Array("{\"results\":[\n".utf8) + Array(answers.joined(separator: Array(",\n".utf8))) + Array("\n]}\n".utf8))
    }

    private static let localDocsNames: Set<String> = [
        "keys", "key", "startkey", "start_key", "endkey", "end_key", "inclusive_end", "descending", "skip", "limit", "include_docs",
    ]

    private static func localDocsParameters(_ q: QueryParameters) throws -> JSONObject {
        var params = JSONObject()
        for k in q.optionNames where localDocsNames.contains(k) {
            if let v = try q.json(k) { params[k] = v }
        }
        return params
    }

    private static func mergeLocalDocsBody(_ body: JSONObject, into params: inout JSONObject) throws {
        if let keys = body["keys"], keys.arrayValue == nil { throw CouchError.badRequest("`keys` body member must be an array.") }
        for (k, v) in body.members where localDocsNames.contains(k) { params[k] = v }
    }

    /// One answer, `{"total_rows":null,"offset":null,"rows":[…]}` (without the final newline).
    private func localDocsRows(_ coll: Collection, _ params: JSONObject) throws -> [UInt8] {
        func bool(_ k: String) throws -> Bool { try params[k].map { try $0.boolOption(k) } ?? false }
        func count(_ k: String) throws -> Int? {
            guard let v = params[k] else { return nil }
            guard let n = v.intValue, n >= 0 else { throw CouchError(status: 400, error: "query_parse_error", reason: "Invalid value for positive integer: \"\(k)\"") }
            return Int(n)
        }
        func id(_ a: String, _ b: String) -> String? { (params[a] ?? params[b])?.stringValue }
        let includeDocs = try bool("include_docs"), descending = try bool("descending")
        let inclusiveEnd = try params["inclusive_end"].map { try $0.boolOption("inclusive_end") } ?? true
        let limit = try count("limit") ?? Int.max, skip = try count("skip") ?? 0
        let stored = try coll.localDocuments()
        var keys = params["keys"]?.arrayValue ?? params["key"].map { [$0] }
        // Each row: a stored document, or a key with none (CouchDB's not_found row).
        var rows: [(key: JSONValue, doc: (id: String, rev: String, json: [UInt8])?)]
        if keys != nil {
            let byID = Dictionary(stored.map { ("_local/" + $0.id, $0) }, uniquingKeysWith: { a, _ in a })
            if descending { keys?.reverse() }
            rows = keys!.map { k in (k, k.stringValue.flatMap { byID[$0] }) }
        } else {
            var docs = stored
            let start = id("startkey", "start_key"), end = id("endkey", "end_key")
            docs = docs.filter { d in
                let w = "_local/" + d.id
                if let start, descending ? w > start : w < start { return false }
                if let end {
                    if descending ? w < end : w > end { return false }
                    if !inclusiveEnd && w == end { return false }
                }
                return true
            }
            if descending { docs.reverse() }
            rows = docs.map { (.string("_local/" + $0.id), $0) }
        }
        var w = JSONWriter(canonical: false)
        w.append("{\"total_rows\":null,\"offset\":null,\"rows\":[\n")
        for (i, row) in rows.dropFirst(skip).prefix(limit).enumerated() {
            if i > 0 { w.append(",\n") }
            guard let d = row.doc else {
                w.append("{\"key\":"); w.write(row.key); w.append(",\"error\":\"not_found\"}")
                continue
            }
            let wireID = "_local/" + d.id
            w.append("{\"id\":"); w.writeString(wireID)
            w.append(",\"key\":"); w.writeString(wireID)
            w.append(",\"value\":{\"rev\":"); w.writeString(d.rev); w.appendByte(UInt8(ascii: "}"))
            if includeDocs {
                var doc = try parseObject(d.json)
                doc["_id"] = .string(wireID)
                w.append(",\"doc\":"); w.writeObject(Router.idFirst(doc))
            }
            w.appendByte(UInt8(ascii: "}"))
        }
        w.append("\n]}")
        return w.bytes
    }
}
