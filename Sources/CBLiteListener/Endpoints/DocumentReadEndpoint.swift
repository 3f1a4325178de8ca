import CBLiteCore
import CouchWire
import NIOHTTP1

/// `GET /{db}/{doc}` with CouchDB's read options, as JSON or, when the client asks,
/// multipart: `open_revs` as `multipart/mixed`, `attachments=true` as `multipart/related`.
extension Router {
    func getDocument(_ coll: Collection, _ docID: String, _ req: Request, _ res: ResponseWriter) throws {
        if let location = Router.designSlashLocation(req.head.uri) {
            return res.send(status: 301, headers: [("Location", location)], contentType: nil, body: [])
        }
        var options = try RevisionOptionsReader.read(req.query)
        try couchAttachmentOptions(&options, req)
        if let openRevs = try req.query.openRevs() {
            // CouchDB's multipart open_revs always carries the attachments (newer than
            // atts_since), as following parts: what its replicator relies on. It answers
            // multipart/mixed unless the client takes JSON only.
            let wantsMultipart = !req.acceptsJSONOnly
            if wantsMultipart { options.attachments = .follows }
            let revs: [String]? = { if case .revs(let r) = openRevs { return r } else { return nil } }()
            let results = try coll.openRevs(docID: docID, revs: revs, options: options)
            if wantsMultipart {
                try writeOpenRevsMultipart(coll, results, res)
            } else {
                res.sendJSON(200, raw: OpenRevsShape.answer(results))
            }
            return
        }
        let wantsRelated = options.attachments == .inline && req.accepts("multipart/related")
        if wantsRelated { options.attachments = .follows }
        let rev = try coll.revision(docID: docID, revID: req.query["rev"], options: options)
        let etag = [("ETag", "\"\(rev.revID)\"")]
        if let match = req.header("If-None-Match"), match == "\"\(rev.revID)\"" {
            res.send(status: 304, headers: etag, body: [])
            return
        }
        if wantsRelated && !rev.followingAttachments.isEmpty {
            // Sent with its length, as CouchDB does (the parts in the document's order).
            var mp = MultipartWriter()
            let body = MultipartDocumentWriter(rev, writer: &mp)
            res.begin(status: 200, headers: etag, contentType: mp.contentType("related"), contentLength: body.length)
            guard req.method != .HEAD else { return }
            try body.write(openBlob: coll.openBlob) { try res.write($0) }
            return
        }
        res.sendJSON(200, raw: rev.json, headers: etag)
    }

    /// `multipart/mixed`: one part per revision, a `multipart/related` one for a revision
    /// with following attachments, `application/json; error="true"` for a missing one.
    func writeOpenRevsMultipart(_ coll: Collection, _ results: [OpenRevsResult], _ res: ResponseWriter) throws {
        var outer = MultipartWriter()
        res.begin(status: 200, contentType: outer.contentType("mixed"))
        for r in results {
            switch r {
            case .ok(let rev):
                try writeRevisionPart(coll, rev, &outer, res, extraHeaders: [])
            case .missing(let rev):
                try res.write(outer.part([("Content-Type", "application/json; error=\"true\"")], OpenRevsShape.missing(rev)))
            }
        }
        try res.write(outer.close())
    }

    /// One revision as a part of a `multipart/mixed` body.
    func writeRevisionPart(_ coll: Collection, _ rev: Revision, _ outer: inout MultipartWriter,
                           _ res: ResponseWriter, extraHeaders: [(String, String)]) throws {
        if rev.followingAttachments.isEmpty {
            try res.write(outer.part(extraHeaders + [("Content-Type", "application/json")], rev.json))
            return
        }
        var inner = MultipartWriter()
        try res.write(outer.beginPart(extraHeaders + [("Content-Type", inner.contentType("related"))]))
        try writeRevisionParts(coll, rev, &inner, res)
        try res.write(inner.close())
    }

    /// The JSON part then one part per following attachment, streamed from the store.
    func writeRevisionParts(_ coll: Collection, _ rev: Revision, _ mp: inout MultipartWriter, _ res: ResponseWriter) throws {
        try MultipartDocumentWriter(rev, writer: &mp, close: false).write(openBlob: coll.openBlob) { try res.write($0) }
    }

    /// Attachments in CouchDB's form: its digests, `att_encoding_info`, and inline data
    /// gzip-encoded for a client that sends `X-CouchDB-Send-Encoded-Atts: true`.
    func couchAttachmentOptions(_ options: inout RevisionOptions, _ req: Request) throws {
        options.couchDigests = true
        options.attEncodingInfo = try req.query.bool("att_encoding_info", default: false)
        options.sendEncodedAttachments = req.header("X-CouchDB-Send-Encoded-Atts")?.lowercased() == "true"
    }

    /// The read options of include_docs rows (`_changes`, `_all_docs`): attachments in
    /// CouchDB's form, inline with `attachments=true`.
    func includedDocumentOptions(_ req: Request) throws -> RevisionOptions {
        var o = RevisionOptions()
        if try req.query.bool("attachments", default: false) { o.attachments = .inline }
        try couchAttachmentOptions(&o, req)
        return o
    }

    /// A stored document given by a feed (an include_docs row) as CouchDB's peers read it:
    /// attachment digests in CouchDB's form and, with `.inline`, that revision's content.
    func couchDocument(_ coll: Collection, _ doc: [UInt8], _ options: RevisionOptions) throws -> [UInt8] {
        let json = try coll.couchDocumentJSON(doc, encodingInfo: options.attEncodingInfo)
        guard options.attachments == .inline, json != doc else { return json }    // no attachments
        let o = try doc.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
        guard let id = o["_id"]?.stringValue, o["_deleted"]?.boolValue != true else { return json }
        return try coll.revision(docID: id, revID: o["_rev"]?.stringValue, options: options).json
    }

    /// CouchDB redirects a read of "/db/_design%2FNAME" to "/db/_design/NAME" (its
    /// canonical address; writes take either form): the target with that one escape
    /// replaced, else nil.
    static func designSlashLocation(_ target: String) -> String? {
        let path = target.prefix { $0 != "?" }
        let parts = path.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].isEmpty, parts[2].lowercased().hasPrefix("_design%2f") else { return nil }
        return "/\(parts[1])/_design/" + parts[2].dropFirst(10) + target.dropFirst(path.count)
    }
}
