import CBLiteCore
import CouchWire

/// `PUT /{db}/{doc}` with a `multipart/related` body, as CouchDB's replicator pushes
/// documents with attachments: the JSON part first, then one part per attachment marked
/// `"follows": true`, each streamed into the attachment store as it arrives (gzip parts
/// decoded on the way), so an attachment of any size passes in bounded memory.
extension Router {
    func putMultipartDocument(_ coll: Collection, _ docID: String, _ type: MediaType, _ req: Request, _ res: ResponseWriter) throws {
        guard let boundary = type.parameter("boundary") else { throw CouchError.badRequest("multipart/related without a boundary") }
        var parser = try MultipartParser(boundary: boundary)

        var json: [UInt8] = []
        var body: JSONObject?
        var following: [(name: String, gzip: Bool)] = []
        var nextFollowing = 0
        var stored: [String: BlobInfo] = [:]
        var partIndex = -1
        var current: (name: String, writer: BlobWriter, inflater: GzipInflater?)?
        defer { current?.writer.cancel() }

        func beginAttachment(_ headers: PartHeaders) throws {
            // Parts match the "follows" entries by filename when given, else in order.
            let name: String
            if let f = headers.filename, following.contains(where: { $0.name == f }) { name = f } else {
                guard nextFollowing < following.count else { throw CouchError.badRequest("more attachment parts than \"follows\" entries") }
                name = following[nextFollowing].name
            }
            nextFollowing += 1
            let gzip = headers["Content-Encoding"]?.lowercased() == "gzip"
                || (headers["Content-Encoding"] == nil && following.first { $0.name == name }?.gzip == true)
            current = (name, try coll.makeAttachmentWriter(), gzip ? try GzipInflater(maxOutput: limits.maxBodyBytes * 16) : nil)
        }

        func handle(_ event: MultipartParser.Event) throws {
            switch event {
            case .partBegin(let headers):
                partIndex += 1
                if partIndex > 0 {
                    if body == nil { body = try parseObject(json); following = Router.followingAttachments(body!) }
                    try beginAttachment(headers)
                }
            case .body(let bytes):
                if partIndex == 0 {
                    json += bytes
                    if json.count > limits.maxDocumentBytes { throw CouchError.tooLarge("the document exceeds \(limits.maxDocumentBytes) bytes") }
                } else if let c = current {
                    try c.writer.write(c.inflater.map { try $0.inflate(bytes) } ?? bytes)
                }
            case .partEnd:
                if let c = current {
                    try c.inflater?.finish()
                    stored[c.name] = try c.writer.finish()
                    current = nil
                }
            case .end:
                break
            }
        }

        while let chunk = try req.body.next() {
            for e in try parser.feed(chunk) { try handle(e) }
        }
        try parser.finish()
        guard partIndex >= 0 else { throw CouchError.badRequest("an empty multipart body") }
        if body == nil { body = try parseObject(json); following = Router.followingAttachments(body!) }
        let missing = following.map(\.name).filter { stored[$0] == nil }
        guard missing.isEmpty else { throw CouchError.badRequest("attachment parts missing for \(missing.joined(separator: ", "))") }

        if try !req.query.bool("new_edits", default: true) {
            let rev = try insertExisting(coll, docID, body!, attachments: stored)
            res.sendJSON(201, .object(JSONObject([("ok", .bool(true)), ("id", .string(docID)), ("rev", .string(rev))])),
                         headers: [("ETag", "\"\(rev)\"")])
            return
        }
        // A new revision: the streamed attachments become stubs of our stored content.
        var doc = body!
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
                     headers: [("ETag", "\"\(saved.revID)\"")])
    }

    /// The attachments marked `"follows": true`, in the JSON's order, and whether each is gzip-encoded.
    static func followingAttachments(_ body: JSONObject) -> [(name: String, gzip: Bool)] {
        guard let atts = body["_attachments"]?.objectValue else { return [] }
        return atts.members.compactMap { m in
            guard let o = m.value.objectValue, o["follows"]?.boolValue == true else { return nil }
            return (m.key, o["encoding"]?.stringValue == "gzip")
        }
    }
}
