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
            let newRev = try missingAttachmentAsCouchDB(coll, docID) { try coll.removeAttachment(docID: docID, parent: rev, name: attName) }
            res.sendJSON(200, .object(JSONObject([("ok", .bool(true)), ("id", .string(docID)), ("rev", .string(newRev))])))
        default:
            throw CouchError.methodNotAllowed("GET,HEAD,PUT,DELETE")
        }
    }

    /// CouchDB's 404 for a document that lacks the attachment ("Document is missing
    /// attachment"), apart from a missing document or revision ("missing").
    private func missingAttachmentAsCouchDB<T>(_ coll: Collection, _ docID: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as CBLError where e.status == .notFound && e.message.contains("has no attachment") {
            throw CouchError.notFound("Document is missing attachment")
        }
    }

    private func getAttachment(_ coll: Collection, _ docID: String, _ attName: String, _ req: Request, _ res: ResponseWriter) throws {
        let info = try missingAttachmentAsCouchDB(coll, docID) { try coll.attachment(docID: docID, name: attName, revID: req.query["rev"]) }
        // CouchDB's ETag: the quoted base64 MD5 of the content.
        let etag = CouchDigest.etag(try coll.couchMD5(info))
        var headers = [("ETag", etag), ("Accept-Ranges", info.encoded == nil ? "bytes" : "none"), ("Content-Security-Policy", "sandbox")]
        if req.header("If-None-Match") == etag { return res.send(status: 304, headers: headers, contentType: nil, body: []) }
        if let encoded = info.encoded {
            // Kept gzip-encoded (CouchDB's compressible types): that form to a client that
            // takes gzip, else decoded; a Range is ignored, as CouchDB does.
            let gzip = Router.acceptsGzip(req.header("Accept-Encoding"))
            if gzip { headers.append(("Content-Encoding", "gzip")) }
            let (digest, length) = gzip ? (encoded.digest, encoded.length) : (info.digest, info.length)
            res.begin(status: 200, headers: headers, contentType: info.contentType, contentLength: length)
            guard req.method != .HEAD else { return }
            return try copyBlob(coll, digest, from: 0, count: length, res)
        }
        // CouchDB's range rules: a malformed Range is ignored, an unsatisfiable one is 416,
        // several ranges answer multipart/byteranges.
        var ranges: [(UInt64, UInt64)] = []
        if let range = req.header("Range"), info.length > 0 {
            switch Router.byteRanges(range, length: info.length) {
            case .malformed: break
            case .unsatisfiable:
                return res.sendError(.rangeNotSatisfiable, headers: [("Content-Range", "bytes */\(info.length)")])
            case .ranges(let r): ranges = r
            }
        }
        if ranges.count > 1 {
            var mp = MultipartWriter()
            res.begin(status: 206, headers: headers, contentType: mp.contentType("byteranges"))
            guard req.method != .HEAD else { return }
            for (s, e) in ranges {
                try res.write(mp.beginPart([("Content-Type", info.contentType), ("Content-Range", "bytes \(s)-\(e)/\(info.length)")]))
                try copyBlob(coll, info.digest, from: s, count: e - s + 1, res)
            }
            return try res.write(mp.close())
        }
        var (start, count, status) = (UInt64(0), info.length, 200)
        if let (s, e) = ranges.first {
            (start, count, status) = (s, e - s + 1, 206)
            headers.append(("Content-Range", "bytes \(s)-\(e)/\(info.length)"))
        }
        res.begin(status: status, headers: headers, contentType: info.contentType, contentLength: count)
        guard req.method != .HEAD else { return }
        try copyBlob(coll, info.digest, from: start, count: count, res)
    }

    /// Whether an `Accept-Encoding` takes gzip (listed without `q=0`).
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        return header.split(separator: ",").contains { item in
            let parts = item.split(separator: ";").map { $0.trimmingSpaces.lowercased() }
            return parts.first == "gzip" && !parts.dropFirst().contains { $0 == "q=0" || $0 == "q=0.0" || $0 == "q=0.00" || $0 == "q=0.000" }
        }
    }

    /// Streams `count` bytes of stored content from offset `start`.
    private func copyBlob(_ coll: Collection, _ digest: BlobDigest, from start: UInt64, count: UInt64, _ res: ResponseWriter) throws {
        guard count > 0 else { return }
        let reader = try coll.openBlob(digest)
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

    enum ByteRanges {
        case malformed, unsatisfiable
        case ranges([(UInt64, UInt64)])
    }

    /// A `Range` header's `bytes=` ranges (`a-b`, `a-`, `-n`, comma-separated), each clamped
    /// to the content: malformed (ignored, as CouchDB), unsatisfiable when none overlaps it.
    static func byteRanges(_ header: String, length: UInt64) -> ByteRanges {
        guard header.hasPrefix("bytes=") else { return .malformed }
        var out: [(UInt64, UInt64)] = []
        for piece in header.dropFirst(6).split(separator: ",", omittingEmptySubsequences: false) {
            let spec = piece.trimmingSpaces
            guard let dash = spec.firstIndex(of: "-") else { return .malformed }
            let a = spec[..<dash], b = spec[spec.index(after: dash)...]
            if a.isEmpty {
                guard let n = UInt64(b) else { return .malformed }
                if n > 0 { out.append((length - min(n, length), length - 1)) }
                continue
            }
            guard let s = UInt64(a) else { return .malformed }
            let e: UInt64
            if b.isEmpty { e = length - 1 } else {
                guard let v = UInt64(b), v >= s else { return .malformed }
                e = min(v, length - 1)
            }
            if s < length { out.append((s, e)) }
        }
        return out.isEmpty ? .unsatisfiable : .ranges(out)
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
        // As CouchDB: a Location, no ETag on a standalone attachment PUT's answer.
        res.sendJSON(201, .object(JSONObject([("ok", .bool(true)), ("id", .string(docID)), ("rev", .string(rev))])),
                     headers: [req.location(ofDocument: docID, attachment: attName)])
    }
}
