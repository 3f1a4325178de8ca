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
        let request = try BulkDocsShape.request(.object(try req.jsonObjectBody(limit: limits.maxBodyBytes)))
        if request.allOrNothing { return res.sendJSON(417, raw: BulkDocsShape.allOrNothingAnswer(request)) }
        try BulkDocsShape.checkWholeRequest(request)
        if request.newEdits ?? true {
            res.sendJSON(201, raw: BulkDocsShape.answer(try savingAllowedDocuments(req, name, request.docs) { try coll.saveDocuments($0) }))
        } else {
            // CouchDB answers only the failures when new_edits is false.
            let results = try savingAllowedDocuments(req, name, request.docs) {
                try coll.insertExistingRevisions($0.map { Collection.ExistingRevision(body: $0) })
            }
            res.sendJSON(201, raw: BulkDocsShape.answer(results, failuresOnly: true))
        }
    }

    func bulkGet(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        let coll = try collection(name)
        let requests = try BulkGetShape.request(try req.jsonObjectBody(limit: limits.maxBodyBytes))
        var options = try RevisionOptionsReader.read(req.query)
        try couchAttachmentOptions(&options, req)
        let multipart = req.accepts("multipart/mixed")
        if multipart {
            if options.attachments == .inline { options.attachments = .follows }
            options.impliedAttachments = .follows
        }
        let items = try coll.bulkGet(requests, options: options)
        if multipart {
            var outer = MultipartWriter()
            res.begin(status: 200, contentType: outer.contentType("mixed"))
            for item in items {
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
