import CBLiteCore
import CouchWire
import NIOHTTP1

/// What a replicator asks of a peer: `_revs_diff`, `_bulk_docs`, `_bulk_get`.
extension Router {
    func revsDiff(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        let coll = try collection(name)
        let body = try req.jsonObjectBody(limit: limits.maxBodyBytes)
        var request: [(docID: String, revs: [String])] = []
        for (id, v) in body.members {
            guard let a = v.arrayValue, let revs = Optional(a.compactMap(\.stringValue)), revs.count == a.count else {
                throw CouchError.badRequest("each document must map to a list of revision IDs")
            }
            request.append((id, revs))
        }
        var out = JSONObject()
        for r in try coll.revsDiff(request) {
            var entry = JSONObject([("missing", .array(r.missing.map { .string($0) }))])
            if !r.possibleAncestors.isEmpty { entry["possible_ancestors"] = .array(r.possibleAncestors.map { .string($0) }) }
            out.members.append((r.docID, .object(entry)))
        }
        res.sendJSON(200, .object(out))
    }

    func bulkDocs(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        try requireJSONContent(req)
        let coll = try collection(name)
        let body = try req.jsonObjectBody(limit: limits.maxBodyBytes)
        guard let docsValue = body["docs"]?.arrayValue else { throw CouchError.badRequest("POST body must include `docs` parameter.") }
        if body["all_or_nothing"]?.boolValue == true {
            throw CouchError.notImplemented("all_or_nothing is not supported (CouchDB 2+ dropped it too): send the documents without it")
        }
        var docs: [JSONObject] = []
        for d in docsValue {
            guard let o = d.objectValue else { throw CouchError.badRequest("Document must be a JSON object") }
            docs.append(o)
        }
        let newEdits = body["new_edits"]?.boolValue ?? true
        var out: [JSONValue] = []
        if newEdits {
            for r in try coll.saveDocuments(docs) {
                if let e = r.error {
                    out.append(.object(JSONObject([("id", .string(r.docID))] + CouchError(e).members)))
                } else {
                    out.append(.object(JSONObject([("ok", .bool(true)), ("id", .string(r.docID)), ("rev", .string(r.revID ?? ""))])))
                }
            }
        } else {
            // CouchDB answers only the failures when new_edits is false.
            for r in try coll.insertExistingRevisions(docs.map { Collection.ExistingRevision(body: $0) }) {
                if let e = r.error {
                    var o = JSONObject([("id", .string(r.docID))])
                    if let rev = r.revID { o["rev"] = .string(rev) }
                    o.members += CouchError(e).members
                    out.append(.object(o))
                }
            }
        }
        res.sendJSON(201, .array(out))
    }

    func bulkGet(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        let coll = try collection(name)
        let body = try req.jsonObjectBody(limit: limits.maxBodyBytes)
        guard let docs = body["docs"]?.arrayValue else { throw CouchError.badRequest("Missing JSON list of 'docs'.") }
        var requests: [Collection.BulkGetRequest] = []
        for d in docs {
            guard let o = d.objectValue, let id = o["id"]?.stringValue else { throw CouchError.badRequest("each doc needs an `id`") }
            let since = try o["atts_since"].map { v -> [String] in
                guard let a = v.arrayValue, a.allSatisfy({ $0.stringValue != nil }) else { throw CouchError.badRequest("atts_since must be a list of revisions") }
                return a.compactMap(\.stringValue)
            }
            requests.append(Collection.BulkGetRequest(id: id, rev: o["rev"]?.stringValue, attsSince: since))
        }
        var options = try revisionOptions(req.query)
        let multipart = req.accepts("multipart/mixed")
        if multipart && options.attachments == .inline { options.attachments = .follows }
        // A document's own atts_since asks for its newer attachments even with
        // attachments=false (CouchDB does so): such documents are read on their own.
        let items: [Collection.BulkGetItem]
        if options.attachments == .stubs && requests.contains(where: { !($0.attsSince ?? []).isEmpty }) {
            var inlined = options
            inlined.attachments = multipart ? .follows : .inline
            items = try requests.flatMap { r in try coll.bulkGet([r], options: (r.attsSince ?? []).isEmpty ? options : inlined) }
        } else {
            items = try coll.bulkGet(requests, options: options)
        }
        if multipart {
            var outer = MultipartWriter()
            res.begin(status: 200, contentType: outer.contentType("mixed"))
            for item in items {
                if let e = item.error {
                    try res.write(outer.part([("Content-Type", "application/json; error=\"true\"")], Router.bulkGetError(item.id, item.rev, e)))
                    continue
                }
                for r in item.results {
                    switch r {
                    case .ok(let rev):
                        try writeRevisionPart(coll, rev, &outer, res, extraHeaders: [("X-Doc-Id", rev.docID), ("X-Rev-Id", rev.revID)])
                    case .missing(let rev):
                        try res.write(outer.part([("Content-Type", "application/json; error=\"true\"")],
                                                 Router.bulkGetError(item.id, rev, CBLError(.notFound, "missing"))))
                    }
                }
            }
            try res.write(outer.close())
            return
        }
        var w = JSONWriter(canonical: false, capacity: 4096)
        w.append("{\"results\":[")
        for (i, item) in items.enumerated() {
            if i > 0 { w.appendByte(UInt8(ascii: ",")) }
            w.append("{\"id\":"); w.writeString(item.id); w.append(",\"docs\":[")
            if let e = item.error {
                w.append("{\"error\":"); w.appendRaw(Router.bulkGetError(item.id, item.rev, e)); w.appendByte(UInt8(ascii: "}"))
            }
            for (j, r) in item.results.enumerated() {
                if j > 0 { w.appendByte(UInt8(ascii: ",")) }
                switch r {
                case .ok(let rev): w.append("{\"ok\":"); w.appendRaw(rev.json); w.appendByte(UInt8(ascii: "}"))
                case .missing(let rev):
                    w.append("{\"error\":"); w.appendRaw(Router.bulkGetError(item.id, rev, CBLError(.notFound, "missing"))); w.appendByte(UInt8(ascii: "}"))
                }
            }
            w.append("]}")
        }
        w.append("]}")
        res.sendJSON(200, raw: w.bytes)
    }

    /// `{"id","rev","error","reason"}`; a missing document's rev is "undefined", as CouchDB writes it.
    static func bulkGetError(_ id: String, _ rev: String?, _ e: CBLError) -> [UInt8] {
        let c = CouchError(e)
        var w = JSONWriter(canonical: false)
        w.writeObject(JSONObject([("id", .string(id)), ("rev", .string(rev ?? "undefined")), ("error", .string(c.error)), ("reason", .string(c.reason))]))
        return w.bytes
    }
}
