/// An attachment of a stored revision, as its `_attachments` stub describes it.
public struct AttachmentInfo: Sendable, Equatable {
    public let name: String
    public let contentType: String
    public let digest: BlobDigest
    public let length: UInt64
    /// The generation of the revision where this content first appeared under this name
    /// on the revision's branch.
    public let revpos: Int

    public init(name: String, contentType: String, digest: BlobDigest, length: UInt64, revpos: Int) {
        self.name = name
        self.contentType = contentType
        self.digest = digest
        self.length = length
        self.revpos = revpos
    }

    /// The stub written into the document: {"content_type","digest","length","revpos","stub":true}.
    package var stub: JSONValue {
        .object(JSONObject([
            ("content_type", .string(contentType)),
            ("digest", .string(digest.string)),
            ("length", .int(Int64(clamping: length))),
            ("revpos", .int(Int64(revpos))),
            ("stub", .bool(true)),
        ]))
    }
}

/// Content and length of a stored attachment.
public struct BlobInfo: Hashable, Sendable {
    public let digest: BlobDigest
    public let length: UInt64

    package init(digest: BlobDigest, length: UInt64) {
        self.digest = digest
        self.length = length
    }
}
