import CBLiteCore
import CouchWire

/// `PUT /{db}/{doc}` with a `multipart/related` body, as CouchDB's replicator pushes
/// documents with attachments: the JSON part first, then one part per attachment marked
/// `"follows": true`, each streamed into the attachment store as it arrives (gzip parts
/// decoded on the way), so an attachment of any size passes in bounded memory. Each part
/// must match its declared length and digest, and nothing is stored unless the whole
/// body arrived (MultipartDocumentReader): else 400, or nothing at all for a client gone.
extension Router {
    func putMultipartDocument(_ coll: Collection, _ docID: String, _ type: MediaType, _ req: Request, _ res: ResponseWriter) throws {
        guard let boundary = type.parameter("boundary") else { throw CouchError.badRequest("multipart/related without a boundary") }
        var parser = try MultipartParser(boundary: boundary)
        let reader = MultipartDocumentReader(maxDocumentBytes: limits.maxDocumentBytes, maxAttachmentBytes: limits.maxAttachmentBytes,
                                             makeWriter: coll.makeAttachmentWriter)
        while let chunk = try req.body.next() {
            for e in try parser.feed(chunk) { try reader.handle(e) }
        }
        try parser.finish()
        let (body, stored) = try reader.finish()

        if try !req.query.bool("new_edits", default: true) {
            let rev = try insertExisting(coll, docID, body, attachments: stored, queryRev: req.query["rev"])
            res.sendJSON(201, .object(JSONObject([("ok", .bool(true)), ("id", .string(docID)), ("rev", .string(rev))])),
                         headers: [("ETag", "\"\(rev)\""), req.location(ofDocument: docID)])
            return
        }
        // A new revision: the streamed attachments become stubs of our stored content.
        var doc = body
        if var atts = doc["_attachments"]?.objectValue {
            for (name, info) in stored {
                var entry = JSONObject([("digest", .string(info.digest.string)), ("stub", .bool(true))])
                if let ct = atts[name]?.objectValue?["content_type"] { entry["content_type"] = ct }
                atts[name] = .object(entry)
            }
            doc["_attachments"] = .object(atts)
        }
        var w = JSONWriter(canonical: false)
        w.writeObject(doc)
        let parent = req.query["rev"] ?? ifMatch(req)
        let saved = try w.bytes.withUnsafeBufferPointer { try coll.put(docID: docID, body: $0, parent: parent) }
        res.sendJSON(201, .object(JSONObject([("ok", .bool(true)), ("id", .string(saved.docID)), ("rev", .string(saved.revID))])),
                     headers: [("ETag", "\"\(saved.revID)\""), req.location(ofDocument: saved.docID)])
    }
}
