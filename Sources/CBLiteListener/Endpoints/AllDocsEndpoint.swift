import CBLiteCore
import CouchWire
import NIOHTTP1

/// `_all_docs` (GET, and POST with `{"keys": [...]}`) and `_design_docs`.
extension Router {
    func allDocs(_ name: String, _ req: Request, _ res: ResponseWriter, designOnly: Bool = false) throws {
        try requireMethod(req, [.GET, .HEAD, .POST])
        let coll = try collection(name)
        let q = req.query
        var keys = try keyList(q.json("keys"))
        if req.method == .POST {
            let body = try req.jsonObjectBody(limit: limits.maxBodyBytes)
            if let k = body["keys"] { keys = try keyList(k) }
        }
        let includeDocs = try q.bool("include_docs", default: false)
        let descending = try q.bool("descending", default: false)
        let inclusiveEnd = try q.bool("inclusive_end", default: true)
        let limit = try q.nonNegativeInt("limit") ?? -1
        let skip = try q.nonNegativeInt("skip") ?? 0
        var start = try stringKey(q, "startkey", "start_key") ?? q["startkey_docid"]
        var end = try stringKey(q, "endkey", "end_key") ?? q["endkey_docid"]
        if let k = try stringKey(q, "key", "key") { start = k; end = k }
        if designOnly {
            start = start ?? (descending ? "_design0" : "_design/")
            end = end ?? (descending ? "_design/" : "_design0")
        }

        let total = try coll.count
        res.begin(status: 200)
        try res.write(Array("{\"total_rows\":\(total),\"offset\":\(keys == nil ? skip : 0),\"rows\":[\n".utf8))
        var first = true
        func emit(_ row: [UInt8]) throws {
            try res.write((first ? [] : Array(",\n".utf8)) + row)
            first = false
        }
        if let keys {
            for key in keys {
                try emit(try keyedRow(coll, key, includeDocs: includeDocs))
            }
        } else {
            var rows = try coll.documents(startKey: start, endKey: end, descending: descending,
                                          limit: limit < 0 ? -1 : limit + (inclusiveEnd ? 0 : 1), skip: skip)
            if !inclusiveEnd, let end { rows.removeAll { $0.docID == end } }
            if limit >= 0 && rows.count > Int(limit) { rows.removeLast(rows.count - Int(limit)) }
            for r in rows {
                try emit(row(id: r.docID, rev: r.revID, deleted: false,
                             doc: includeDocs ? try? coll.get(docID: r.docID) : nil, includeDocs: includeDocs))
            }
        }
        try res.write(Array("\n]}\n".utf8))
    }


    private func keyList(_ v: JSONValue?) throws -> [String]? {
        guard let v else { return nil }
        guard let a = v.arrayValue else { throw CouchError.badRequest("`keys` member must be an array.") }
        return a.map { $0.stringValue ?? JSONWriter.canonicalString($0) }
    }

    private func stringKey(_ q: QueryParameters, _ a: String, _ b: String) throws -> String? {
        guard let v = try q.json(a) ?? q.json(b) else { return nil }
        guard let s = v.stringValue else { throw CouchError.badRequest("\(a) must be a JSON string for _all_docs") }
        return s
    }

    private func row(id: String, rev: String, deleted: Bool, doc: [UInt8]?, includeDocs: Bool) -> [UInt8] {
        var w = JSONWriter(canonical: false)
        w.append("{\"id\":"); w.writeString(id)
        w.append(",\"key\":"); w.writeString(id)
        w.append(",\"value\":{\"rev\":"); w.writeString(rev)
        if deleted { w.append(",\"deleted\":true") }
        w.appendByte(UInt8(ascii: "}"))
        if includeDocs {
            w.append(",\"doc\":")
            if let doc { w.appendRaw(doc) } else { w.append("null") }
        }
        w.appendByte(UInt8(ascii: "}"))
        return w.bytes
    }

    /// A row for a requested key: the document, its tombstone, or `not_found`.
    private func keyedRow(_ coll: Collection, _ key: String, includeDocs: Bool) throws -> [UInt8] {
        do {
            let doc = try coll.get(docID: key, options: .deleted)
            let o = try parseObject(doc)
            let deleted = o["_deleted"]?.boolValue == true
            return row(id: key, rev: o["_rev"]?.stringValue ?? "", deleted: deleted, doc: deleted ? nil : doc, includeDocs: includeDocs)
        } catch let e as CBLError where e.status == .notFound || e.status == .badRequest {
            var w = JSONWriter(canonical: false)
            w.writeObject(JSONObject([("key", .string(key)), ("error", .string("not_found"))]))
            return w.bytes
        }
    }
}
