/// An attachment of a stored revision, as its `_attachments` stub describes it.
package struct AttachmentInfo: Sendable, Equatable {
    package let name: String
    package let contentType: String
    package let digest: BlobDigest
    package let length: UInt64
    /// The generation of the revision where this content first appeared under this name
    /// on the revision's branch.
    package let revpos: Int

    package init(name: String, contentType: String, digest: BlobDigest, length: UInt64, revpos: Int) {
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
package struct BlobInfo: Hashable, Sendable {
    package let digest: BlobDigest
    package let length: UInt64

    package init(digest: BlobDigest, length: UInt64) {
        self.digest = digest
        self.length = length
    }
}
