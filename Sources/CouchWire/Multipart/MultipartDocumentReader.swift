import CBLiteBase

/// One document in a `multipart/related` body, as CouchDB writes it in both directions
/// (a replicator's `PUT ?new_edits=false`, a peer's `open_revs` answer): the JSON part
/// first, then one part per attachment marked `"follows": true`. Attachment parts are
/// streamed into writers as they arrive (gzip parts decoded on the way, in bounded
/// pieces), so an attachment of any size passes in bounded memory. Each part must match
/// the length and digest its JSON declares (AttachmentPartCheck). Nothing is stored
/// before the whole body has arrived and checked: the writers are finished by
/// `finish()`, and cancelled (their temporary files deleted) when it is never reached —
/// a client gone mid-body leaves nothing behind. Shared by the listener and the
/// replicator.
public final class MultipartDocumentReader {
    private let maxDocumentBytes: Int
    private let maxAttachmentBytes: Int
    private let makeWriter: () throws -> any AttachmentSink

    private var json: [UInt8] = []
    private var body: JSONObject?
    private var following: [(name: String, gzip: Bool)] = []
    private var nextFollowing = 0
    /// Attachment parts complete and checked, installed by `finish()`.
    private var written: [(name: String, writer: any AttachmentSink)] = []
    private var partIndex = -1
    /// The attachment part being received.
    private typealias Part = (name: String, writer: any AttachmentSink, inflater: GzipInflater?, check: AttachmentPartCheck)
    private var current: Part?

    /// `makeWriter` gives a writer for each attachment (the engine's
    /// `Collection.makeAttachmentWriter`): this type does no storage I/O of its own.
    public init(maxDocumentBytes: Int, maxAttachmentBytes: Int, makeWriter: @escaping () throws -> any AttachmentSink) {
        self.maxDocumentBytes = maxDocumentBytes
        self.maxAttachmentBytes = maxAttachmentBytes
        self.makeWriter = makeWriter
    }

    deinit {
        current?.writer.cancel()
        for w in written { w.writer.cancel() }
    }

    public func handle(_ event: MultipartParser.Event) throws {
        switch event {
        case .partBegin(let headers):
            partIndex += 1
            if partIndex > 0 {
                try parseBodyIfNeeded()
                try beginAttachment(headers)
            }
        case .body(let bytes):
            if partIndex == 0 {
                json += bytes
                if json.count > maxDocumentBytes { throw CouchError.tooLarge("the document exceeds \(maxDocumentBytes) bytes") }
            } else if let c = current {
                try c.check.sent(bytes)
                if let inflater = c.inflater {
                    try inflater.inflate(bytes) { try write($0, c) }
                } else {
                    try write(bytes, c)
                }
            }
        case .partEnd:
            if let c = current {
                try c.inflater?.finish()
                try c.check.finish()
                written.append((c.name, c.writer))
                current = nil
            }
        case .end:
            break
        }
    }

    /// The document and the attachments written for its `follows` entries; throws when
    /// the body was empty or an announced attachment never came.
    public func finish() throws -> (body: JSONObject, attachments: [String: BlobInfo]) {
        guard partIndex >= 0 else { throw CouchError.badRequest("an empty multipart body") }
        try parseBodyIfNeeded()
        guard current == nil else { throw CouchError.badRequest("the body ends inside attachment \"\(current!.name)\"") }
        let missing = following.map(\.name).filter { name in !written.contains { $0.name == name } }
        guard missing.isEmpty else { throw CouchError.badRequest("attachment parts missing for \(missing.joined(separator: ", "))") }
        var stored: [String: BlobInfo] = [:]
        while !written.isEmpty {
            let w = written.removeFirst()
            stored[w.name] = try w.writer.finish()
        }
        return (body!, stored)
    }

    private func write(_ content: [UInt8], _ c: Part) throws {
        try c.check.decoded(content)
        try c.writer.write(content)
        if c.writer.length > UInt64(maxAttachmentBytes) {
            throw CouchError.tooLarge("attachment \"\(c.name)\" exceeds \(maxAttachmentBytes) bytes")
        }
    }

    /// Parses a JSON document body; a parse failure is the peer's 400 with the reason.
    public static func parseDocument(_ bytes: [UInt8]) throws -> JSONObject {
        do {
            return try bytes.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0, what: "document") }
        } catch let e as CBLError {
            throw CouchError(status: 400, error: "bad_request", reason: "invalid UTF-8 JSON: \(e.message)")
        }
    }

    /// The attachments marked `"follows": true`, in the JSON's order, and whether each is gzip-encoded.
    public static func followingAttachments(_ body: JSONObject) -> [(name: String, gzip: Bool)] {
        guard let atts = body["_attachments"]?.objectValue else { return [] }
        return atts.members.compactMap { m in
            guard let o = m.value.objectValue, o["follows"]?.boolValue == true else { return nil }
            return (m.key, o["encoding"]?.stringValue == "gzip")
        }
    }

    private func parseBodyIfNeeded() throws {
        guard body == nil else { return }
        let parsed = try MultipartDocumentReader.parseDocument(json)
        body = parsed
        following = MultipartDocumentReader.followingAttachments(parsed)
    }

    private func beginAttachment(_ headers: PartHeaders) throws {
        // Parts match the "follows" entries by filename when given, else in order.
        let name: String
        if let f = headers.filename, following.contains(where: { $0.name == f }) { name = f } else {
            guard nextFollowing < following.count else { throw CouchError.badRequest("more attachment parts than \"follows\" entries") }
            name = following[nextFollowing].name
        }
        nextFollowing += 1
        guard !written.contains(where: { $0.name == name }) else { throw CouchError.badRequest("attachment \"\(name)\" sent twice") }
        let gzip = headers["Content-Encoding"]?.lowercased() == "gzip"
            || (headers["Content-Encoding"] == nil && following.first { $0.name == name }?.gzip == true)
        let check = try AttachmentPartCheck(name: name, entry: body?["_attachments"]?.objectValue?[name]?.objectValue, gzip: gzip)
        current = (name, try makeWriter(), gzip ? try GzipInflater(maxOutput: maxAttachmentBytes) : nil, check)
    }
}
