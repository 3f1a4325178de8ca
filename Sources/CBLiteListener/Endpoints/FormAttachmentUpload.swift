import CBLiteCore
import CouchWire

/// `POST /{db}/{doc}` with a `multipart/form-data` body: how a browser form uploads files,
/// in CouchDB's form. `_rev` names the revision to update (none: a new document); each
/// `_attachments` file field becomes the attachment named by its file name, with its part's
/// type, streamed into the store (each bounded by maxAttachmentBytes); the document's
/// other attachments and content are kept. One new revision, answered as a PUT is.
extension Router {
    func postFormAttachments(_ coll: Collection, _ docID: String, _ req: Request, _ res: ResponseWriter) throws {
        guard let type = req.contentType, type.type == "multipart/form-data" else {
            throw CouchError.badContentType("Content-Type must be multipart/form-data")
        }
        guard let boundary = type.parameter("boundary") else { throw CouchError.badRequest("multipart/form-data without a boundary") }
        var parser = try MultipartParser(boundary: boundary)
        var rev: [UInt8]? = nil
        var files: [(name: String, type: String, info: BlobInfo)] = []
        var part: (field: String?, filename: String?, type: String)? = nil
        var writer: BlobWriter? = nil
        defer { writer?.cancel() }
        while let chunk = try req.body.next() {
            for event in try parser.feed(chunk) {
                switch event {
                case .partBegin(let headers):
                    let disposition = headers["Content-Disposition"].flatMap { MediaType("x/" + $0) }
                    part = (disposition?.parameter("name"), headers.filename, headers["Content-Type"] ?? "application/octet-stream")
                    if part?.field == "_attachments", part?.filename?.isEmpty == false { writer = try coll.makeAttachmentWriter() }
                case .body(let bytes):
                    if let w = writer {
                        try w.write(bytes)
                        if w.length > UInt64(limits.maxAttachmentBytes) {
                            throw CouchError.tooLarge("the attachment exceeds \(limits.maxAttachmentBytes) bytes")
                        }
                    } else if part?.field == "_rev" {
                        rev = (rev ?? []) + bytes
                        guard rev!.count <= 256 else { throw CouchError.badRequest("_rev is too long") }
                    }
                case .partEnd:
                    if let w = writer, let p = part, let name = p.filename {
                        files.append((name, p.type, try w.finish()))
                        writer = nil
                    }
                    part = nil
                case .end:
                    break
                }
            }
        }
        try parser.finish()
        let parent = rev.map { String(decoding: $0, as: UTF8.self) }
        var body = JSONObject()
        if let parent {
            body = try coll.revision(docID: docID, revID: parent).json.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
            body["_id"] = nil
            body["_rev"] = nil
        }
        var atts = body["_attachments"]?.objectValue ?? JSONObject()
        for f in files {
            atts[f.name] = .object(JSONObject([("content_type", .string(f.type)), ("digest", .string(f.info.digest.string)), ("stub", .bool(true))]))
        }
        body["_attachments"] = .object(atts)
        let json = JSONWriter.canonical(.object(body))
        let saved = try json.withUnsafeBufferPointer { try coll.put(docID: docID, body: $0, parent: parent) }
        res.sendJSON(201, .object(JSONObject([("ok", .bool(true)), ("id", .string(saved.docID)), ("rev", .string(saved.revID))])),
                     headers: [("ETag", "\"\(saved.revID)\"")])
    }
}
