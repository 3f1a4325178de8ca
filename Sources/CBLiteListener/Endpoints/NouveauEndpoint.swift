import CBLiteCore
import CouchWire
import NIOHTTP1

/// CouchDB 3.5's Nouveau endpoints on the full-text engine (CBLiteCore's NouveauIndex):
/// `GET|POST /{db}/_design/{ddoc}/_nouveau/{name}` (q, limit, bookmark, include_docs; in
/// the query string or a JSON body) and `GET /{db}/_design/{ddoc}/_nouveau_info/{name}`.
/// Hits come by relevance or by `sort` (`"-year<double>"`); `counts` and `ranges` (facets)
/// are refused with a 400 that says so.
extension Router {
    func nouveau(_ name: String, _ ddoc: String, _ what: String, _ index: String, _ req: Request, _ res: ResponseWriter) throws {
        let coll = try collection(name)
        if what == "_nouveau_info" {
            try requireMethod(req, [.GET, .HEAD])
            return res.sendJSON(200, try coll.nouveauInfo(ddoc: ddoc, index: index))
        }
        try requireMethod(req, [.GET, .POST])
        var p = JSONObject()
        if req.method == .POST {
            guard case .object(let o) = try req.jsonBody(limit: limits.maxBodyBytes) else {
                throw CouchError.badRequest("the body must be a JSON object")
            }
            p = o
        } else {
            for (k, v) in req.query.items {
                p[k] = k == "q" || k == "bookmark" ? .string(v) : ((try? JSONParser.parse(v)) ?? .string(v))
            }
        }
        for (k, v) in p.members {
            switch k {
            case "q", "query", "limit", "bookmark", "include_docs", "update", "locale", "top_n": continue
            case "sort": continue
            case "counts", "ranges":
                throw CouchError.badRequest("\(k) is not supported by cblite's nouveau indexes (no facets)")
            default: throw CouchError.badRequest("invalid parameter: \(k)")
            }
        }
        guard case .string(let q)? = p["q"] ?? p["query"] else { throw CouchError.badRequest("q parameter is required") }
        var limit = 25
        if let l = p["limit"] {
            guard case .int(let n) = l, n >= 0, n <= 200 else { throw CouchError.badRequest("limit must be an integer from 0 to 200") }
            limit = Int(n)
        }
        var bookmark: String? = nil
        if let b = p["bookmark"], b != .null {
            guard case .string(let s) = b else { throw CouchError.badRequest("bookmark must be a string") }
            bookmark = s
        }
        var includeDocs = false
        if let i = p["include_docs"] {
            guard case .bool(let b) = i else { throw CouchError.badRequest("include_docs must be a boolean") }
            includeDocs = b
        }
        var sort: [NouveauSort] = []
        switch p["sort"] {
        case nil, .null?: break
        case .string(let s)?: sort = try NouveauSort.parse(s).map { [$0] } ?? []
        case .array(let items)?:
            sort = try items.compactMap {
                guard case .string(let s) = $0 else { throw CouchError.badRequest("sort items must be strings") }
                return try NouveauSort.parse(s)
            }
        default: throw CouchError.badRequest("sort must be a string or an array of strings")
        }
        res.sendJSON(200, try coll.nouveauSearch(ddoc: ddoc, index: index, query: q, limit: limit, bookmark: bookmark,
                                                 includeDocs: includeDocs, sort: sort))
    }
}
