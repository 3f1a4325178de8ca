import CBLiteCore
import CouchWire
import NIOHTTP1

/// `/{db}/{doc}/{attachment}`: GET (with a single `Range`), PUT and DELETE, streamed
/// both ways so an attachment of any size passes in bounded memory.
extension Router {
    func attachment(_ name: String, _ docID: String, _ attName: String, _ req: Request, _ res: ResponseWriter) throws {
        let coll = try collection(name)
        switch req.method {
        case .GET, .HEAD: try getAttachment(coll, docID, attName, req, res)
        case .PUT: try putAttachment(coll, docID, attName, req, res)
        case .DELETE:
            guard let rev = req.query["rev"] ?? ifMatch(req) else { throw CouchError.conflict }
            let newRev = try coll.removeAttachment(docID: docID, parent: rev, name: attName)
            res.sendJSON(200, .object(JSONObject([("ok", .bool(true)), ("id", .string(docID)), ("rev", .string(newRev))])))
        default:
            throw CouchError.methodNotAllowed("GET,HEAD,PUT,DELETE")
        }
    }

    private func getAttachment(_ coll: Collection, _ docID: String, _ attName: String, _ req: Request, _ res: ResponseWriter) throws {
        let info = try coll.attachment(docID: docID, name: attName, revID: req.query["rev"])
        let etag = "\"\(info.digest.string)\""
        var headers = [("ETag", etag), ("Accept-Ranges", "bytes")]
        if req.header("If-None-Match") == etag { return res.send(status: 304, headers: headers, contentType: nil, body: []) }
        var start: UInt64 = 0
        var end = info.length == 0 ? 0 : info.length - 1
        var status = 200
        if let range = req.header("Range"), info.length > 0 {
            guard let (s, e) = Router.byteRange(range, length: info.length) else {
                return res.sendError(.rangeNotSatisfiable, headers: [("Content-Range", "bytes */\(info.length)")])
            }
            (start, end, status) = (s, e, 206)
            headers.append(("Content-Range", "bytes \(s)-\(e)/\(info.length)"))
        }
        let count = info.length == 0 ? 0 : end - start + 1
        res.begin(status: status, headers: headers, contentType: info.contentType, contentLength: count)
        guard req.method != .HEAD, count > 0 else { return }
        let reader = try coll.openAttachment(docID: docID, name: attName, revID: req.query["rev"])
        defer { reader.close() }
        try reader.seek(to: start)
        var left = count
        while left > 0 {
            let chunk = try reader.read(max: Int(min(left, 64 * 1024)))
            if chunk.isEmpty { break }
            try res.write(chunk)
            left -= UInt64(chunk.count)
        }
    }

    /// `bytes=a-b`, `bytes=a-`, `bytes=-n` (one range only); nil when unsatisfiable.
    static func byteRange(_ header: String, length: UInt64) -> (UInt64, UInt64)? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6)
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        let a = spec[..<dash], b = spec[spec.index(after: dash)...]
        if a.isEmpty {
            guard let n = UInt64(b), n > 0 else { return nil }
            return (length - min(n, length), length - 1)
        }
        guard let s = UInt64(a), s < length else { return nil }
        if b.isEmpty { return (s, length - 1) }
        guard let e = UInt64(b), e >= s else { return nil }
        return (s, min(e, length - 1))
    }

    private func putAttachment(_ coll: Collection, _ docID: String, _ attName: String, _ req: Request, _ res: ResponseWriter) throws {
        let writer = try coll.makeAttachmentWriter()
        var finished = false
        defer { if !finished { writer.cancel() } }
        while let chunk = try req.body.next() {      // gzip bodies arrive decoded
            try writer.write(chunk)
            if writer.length > UInt64(limits.maxAttachmentBytes) {
                throw CouchError.tooLarge("the attachment exceeds \(limits.maxAttachmentBytes) bytes")
            }
        }
        let info = try writer.finish()
        finished = true
        let type = req.header("Content-Type") ?? "application/octet-stream"
        let rev = try coll.setAttachment(docID: docID, parent: req.query["rev"] ?? ifMatch(req), name: attName,
                                         contentType: type, digest: info.digest.string)
        res.sendJSON(201, .object(JSONObject([("ok", .bool(true)), ("id", .string(docID)), ("rev", .string(rev))])),
                     headers: [("ETag", "\"\(rev)\""), req.location(ofDocument: docID, attachment: attName)])
    }
}
