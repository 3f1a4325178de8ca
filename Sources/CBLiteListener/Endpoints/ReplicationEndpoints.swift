import CBLiteCore
import CouchWire
import NIOHTTP1

/// What a replicator asks of a peer: `_revs_diff`, `_bulk_docs`, `_bulk_get`.
extension Router {
    func revsDiff(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        let coll = try collection(name)
        let request = try RevsDiffShape.request(try req.jsonObjectBody(limit: limits.maxBodyBytes))
        res.sendJSON(200, raw: RevsDiffShape.answer(try coll.revsDiff(request)))
    }

    func missingRevs(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        let coll = try collection(name)
        let request = try RevsDiffShape.request(try req.jsonObjectBody(limit: limits.maxBodyBytes))
        res.sendJSON(200, raw: MissingRevsShape.answer(try coll.revsDiff(request)))
    }

    func bulkDocs(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        try requireJSONContent(req)
        let coll = try collection(name)
        var request = try BulkDocsShape.request(.object(try req.jsonObjectBody(limit: limits.maxBodyBytes)))
        if request.allOrNothing { return res.sendJSON(417, raw: BulkDocsShape.allOrNothingAnswer(request)) }
        try BulkDocsShape.checkWholeRequest(request)
        let newEdits = request.newEdits ?? true
        // New documents are named by the configured UUID algorithm, as a POST's are.
        if newEdits {
            for i in request.docs.indices where request.docs[i]["_id"] == nil { request.docs[i]["_id"] = .string(server.uuids.next()) }
        }
        // Local documents are written as such (CouchDB's local rule), in their places.
        let localID: (JSONObject) -> String? = { $0["_id"]?.stringValue.flatMap { $0.hasPrefix("_local/") ? String($0.dropFirst(7)) : nil } }
        var others = request.docs.filter { localID($0) == nil }
        if newEdits { others = try userDocuments(name, others, req) }
        var saved = try savingAllowedDocuments(req, name, others) {
            try newEdits ? coll.saveDocuments($0) : coll.insertExistingRevisions($0.map { Collection.ExistingRevision(body: $0) })
        }.makeIterator()
        let results: [WriteResult] = request.docs.map { doc in
            guard let id = localID(doc) else { return saved.next()! }
            do {
                return WriteResult(docID: "_local/" + id, revID: try writeLocal(coll, id: id, doc, queryRev: nil), error: nil)
            } catch {
                return WriteResult(docID: "_local/" + id, revID: nil, error: CBLError.wrapping(error))
            }
        }
        // CouchDB answers only the failures when new_edits is false.
        res.sendJSON(201, raw: BulkDocsShape.answer(results, failuresOnly: !newEdits))
    }

    func bulkGet(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        let coll = try collection(name)
        let entries = try BulkGetShape.entries(try req.jsonObjectBody(limit: limits.maxBodyBytes))
        var options = try RevisionOptionsReader.read(req.query)
        try couchAttachmentOptions(&options, req)
        let multipart = req.accepts("multipart/mixed")
        if multipart {
            if options.attachments == .inline { options.attachments = .follows }
            options.impliedAttachments = .follows
        }
        // Entries without an ID are answered in place, with their error (CouchDB's way).
        var read = try coll.bulkGet(entries.compactMap { $0 }, options: options).makeIterator()
        let items: [BulkGetItem?] = entries.map { $0 == nil ? nil : read.next() }
        if multipart {
            var outer = MultipartWriter()
            res.begin(status: 200, contentType: outer.contentType("mixed"))
            for item in items {
                guard let item else {
                    try res.write(outer.part([("Content-Type", "application/json; error=\"true\"")], BulkGetShape.missingID))
                    continue
                }
                for part in BulkGetShape.parts(item) {
                    switch part {
                    case .revision(.ok(let rev)):
                        try writeRevisionPart(coll, rev, &outer, res, extraHeaders: [("X-Doc-Id", rev.docID), ("X-Rev-Id", rev.revID)])
                    case .revision(.missing(let rev)):      // parts() gives a missing revision as an error
                        try res.write(outer.part([("Content-Type", "application/json; error=\"true\"")], OpenRevsShape.missing(rev)))
                    case .error(let e):
                        try res.write(outer.part([("Content-Type", "application/json; error=\"true\"")], e))
                    }
                }
            }
            try res.write(outer.close())
            return
        }
        res.sendJSON(200, raw: BulkGetShape.answer(items))
    }
}
