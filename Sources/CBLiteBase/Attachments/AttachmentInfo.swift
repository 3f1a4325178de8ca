/// An attachment of a stored revision, as its `_attachments` stub describes it.
public struct AttachmentInfo: Sendable, Equatable {
    public let name: String
    public let contentType: String
    public let digest: BlobDigest
    public let length: UInt64
    /// The generation of the revision where this content first appeared under this name
    /// on the revision's branch.
    public let revpos: Int
    /// CouchDB's digest: the MD5 of the content as stored for CouchDB (its gzip form when
    /// `encoded`); nil for attachments stored before it was kept (Collection.couchMD5
    /// computes it then).
    public let md5: [UInt8]?
    /// The gzip form kept beside the content for CouchDB peers (CouchDB's compressible
    /// types), itself stored content; nil: the content travels as it is.
    public let encoded: EncodedAttachment?

    public init(name: String, contentType: String, digest: BlobDigest, length: UInt64, revpos: Int,
                md5: [UInt8]? = nil, encoded: EncodedAttachment? = nil) {
        self.name = name
        self.contentType = contentType
        self.digest = digest
        self.length = length
        self.revpos = revpos
        self.md5 = md5
        self.encoded = encoded
    }

    /// The stub written into the document: {"content_type","digest","length","md5",
    /// "revpos","stub":true}, and with a gzip form "encoded_digest","encoded_length",
    /// "encoding":"gzip".
    package var stub: JSONValue {
        var members: [(String, JSONValue)] = [
            ("content_type", .string(contentType)),
            ("digest", .string(digest.string)),
        ]
        if let encoded {
            members += [("encoded_digest", .string(encoded.digest.string)), ("encoded_length", .int(Int64(clamping: encoded.length))),
                        ("encoding", .string("gzip"))]
        }
        members.append(("length", .int(Int64(clamping: length))))
        if let md5 { members.append(("md5", .string(CouchDigest.string(md5)))) }
        members += [("revpos", .int(Int64(revpos))), ("stub", .bool(true))]
        return .object(JSONObject(members))
    }
}

/// The gzip form of an attachment's content, stored as content of its own.
public struct EncodedAttachment: Sendable, Equatable {
    public let digest: BlobDigest
    public let length: UInt64

    public init(digest: BlobDigest, length: UInt64) {
        self.digest = digest
        self.length = length
    }
}

/// Content and length of a stored attachment.
public struct BlobInfo: Hashable, Sendable {
    public let digest: BlobDigest
    public let length: UInt64
    /// The MD5 of the content, known when this content was just written.
    public let md5: [UInt8]?

    package init(digest: BlobDigest, length: UInt64, md5: [UInt8]? = nil) {
        self.digest = digest
        self.length = length
        self.md5 = md5
    }
}
