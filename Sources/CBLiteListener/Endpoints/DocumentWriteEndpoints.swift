import CBLiteCore
import CouchWire
import NIOHTTP1

/// `/{db}/{doc}` dispatch and the document writes: PUT (JSON or multipart/related,
/// `new_edits=false` included), DELETE, COPY, and POST to the database.
extension Router {
    func document(_ db: String, _ docID: String, _ req: Request, _ res: ResponseWriter) throws {
        let coll = try collection(db)
        switch req.method {
        case .GET, .HEAD: try getDocument(coll, docID, req, res)
        case .PUT: try putDocument(coll, docID, req, res)
        case .DELETE: try deleteDocument(coll, docID, req, res)
        case .init(rawValue: "COPY"): try copyDocument(coll, docID, req, res)
        case .POST: try postFormAttachments(coll, docID, req, res)          // a browser's file upload
        default: throw CouchError.methodNotAllowed("GET,HEAD,PUT,DELETE,COPY,POST")
        }
    }

    /// A saved revision: its ETag, and where a new one is (201: CouchDB's `Location`).
    private func sendSaved(_ req: Request, _ res: ResponseWriter, id: String, rev: String, status: Int = 201, etag: Bool = true) {
        var headers = etag ? [("ETag", "\"\(rev)\"")] : []
        if status == 201 { headers.append(req.location(ofDocument: id)) }
        res.sendJSON(status, .object(JSONObject([("ok", .bool(true)), ("id", .string(id)), ("rev", .string(rev))])), headers: headers)
    }

    private func newEdits(_ req: Request) throws -> Bool { try req.query.bool("new_edits", default: true) }

    func putDocument(_ coll: Collection, _ docID: String, _ req: Request, _ res: ResponseWriter) throws {
        if let type = req.contentType, type.type == "multipart/related" {
            return try putMultipartDocument(coll, docID, type, req, res)
        }
        // Any other Content-Type is read as JSON, as CouchDB does for a PUT (not for a POST).
        var bytes = try req.body.readAll(limit: limits.maxDocumentBytes)
        if try !newEdits(req) {
            let body = try parseObject(bytes)
            let rev = try insertExisting(coll, docID, body, attachments: [:], queryRev: req.query["rev"])
            return sendSaved(req, res, id: docID, rev: rev)
        }
        let parent = try requestedRev(req)
        bytes = try userDocumentBody(req.path.segments[0], docID, bytes, req)
        let saved = try bytes.withUnsafeBufferPointer { try coll.put(docID: docID, body: $0, parent: parent, givenIDWins: true) }
        try sendSaved(req, res, coll, id: saved.docID, rev: saved.revID)
    }

    /// `batch=ok` is answered 202 without a revision, as CouchDB does (the write itself
    /// has already been made durably); a POST answers no ETag (CouchDB's).
    private func sendSaved(_ req: Request, _ res: ResponseWriter, _ coll: Collection, id: String, rev: String) throws {
        if req.query["batch"] == "ok" {
            res.sendJSON(202, .object(JSONObject([("ok", .bool(true)), ("id", .string(id))])))
        } else {
            sendSaved(req, res, id: id, rev: rev, etag: req.method != .POST)
        }
    }

    /// POST /{db}: a new document (its `_id`, or a generated one).
    func postDocument(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        let coll = try collection(name)
        try requireJSONContent(req)
        let bytes = try userDocumentBody(name, nil, try req.body.readAll(limit: limits.maxDocumentBytes), req)
        let given = try parseObject(bytes)["_id"]
        if given?.stringValue?.hasPrefix("_design/") == true, try !mayWriteDesignDocuments(req, name) {
            throw Router.designDocumentRefusal(req.userCtx)
        }
        // Without an `_id`, the configured UUID algorithm names the document (as CouchDB's).
        let docID: String? = given == nil ? server.uuids.next() : nil
        let saved = try bytes.withUnsafeBufferPointer { try coll.put(docID: docID, body: $0, parent: nil) }
        try sendSaved(req, res, coll, id: saved.docID, rev: saved.revID)
    }

    func deleteDocument(_ coll: Collection, _ docID: String, _ req: Request, _ res: ResponseWriter) throws {
        // CouchDB needs the revision being deleted; without one it is a conflict (a missing document: 404).
        guard let rev = try requestedRev(req) else {
            if (try? coll.revision(docID: docID, revID: nil, options: RevisionOptions())) == nil { throw CouchError.notFound("missing") }
            throw CouchError.conflict
        }
        try checkUserDeletion(req.path.segments[0], docID, req)
        let newRev = try coll.delete(docID: docID, parent: rev)
        sendSaved(req, res, id: docID, rev: newRev, status: 200)
    }

    /// COPY with `Destination: id` or `id?rev=x` (to overwrite that revision).
    func copyDocument(_ coll: Collection, _ docID: String, _ req: Request, _ res: ResponseWriter) throws {
        guard let destination = req.header("Destination"), !destination.isEmpty else {
            throw CouchError.badRequest("Destination header is mandatory for COPY.")
        }
        let (rawID, rawQuery) = destination.split(separator: "?", maxSplits: 1).map(String.init).splitPair()
        guard let destID = PercentDecoding.decode(rawID.utf8, plusAsSpace: false), !destID.isEmpty else {
            throw CouchError.badRequest("invalid Destination header")
        }
        let destRev = try QueryParameters(query: rawQuery ?? "")["rev"]
        let source = try coll.revision(docID: docID, revID: req.query["rev"], options: RevisionOptions())
        var body = try parseObject(source.json)
        body["_id"] = nil
        body["_rev"] = nil
        var w = JSONWriter(canonical: false)
        w.writeObject(body)
        let saved = try w.bytes.withUnsafeBufferPointer { try coll.put(docID: destID, body: $0, parent: destRev) }
        sendSaved(req, res, id: saved.docID, rev: saved.revID)
    }

    /// The revision a write names: `?rev=` or `If-Match` (400 when both are given and differ).
    func requestedRev(_ req: Request) throws -> String? {
        let query = req.query["rev"], etag = ifMatch(req)
        if let query, let etag, query != etag { throw CouchError.badRequest("Document rev and etag have different values") }
        return query ?? etag
    }

    func ifMatch(_ req: Request) -> String? {
        guard var v = req.header("If-Match") else { return nil }
        if v.hasPrefix("\"") && v.hasSuffix("\"") && v.count >= 2 { v = String(v.dropFirst().dropLast()) }
        return v
    }

    func parseObject(_ bytes: [UInt8]) throws -> JSONObject { try MultipartDocumentReader.parseDocument(bytes) }

    /// `new_edits=false` for one document: its `_id` must match the URL's; its revision is
    /// the body's `_rev`, else the query's `rev` (CouchDB takes either).
    func insertExisting(_ coll: Collection, _ docID: String, _ body: JSONObject, attachments: [String: BlobInfo],
                        queryRev: String? = nil) throws -> String {
        var body = body
        if body["_rev"] == nil, let queryRev { body["_rev"] = .string(queryRev) }
        if let id = body["_id"]?.stringValue, id != docID {
            throw CouchError.badRequest("Document id must match the URL")
        }
        body["_id"] = .string(docID)
        guard body["_rev"]?.stringValue != nil else { throw CouchError.badRequest("new_edits=false needs a _rev") }
        let results = try coll.insertExistingRevisions([Collection.ExistingRevision(body: body, attachments: attachments)])
        guard let r = results.first else { throw CouchError(status: 500, error: "unknown_error", reason: "no result") }
        if let e = r.error { throw e }
        return r.revID ?? body["_rev"]!.stringValue!
    }
}

extension Array where Element == String {
    func splitPair() -> (String, String?) { (first ?? "", count > 1 ? self[1] : nil) }
}
