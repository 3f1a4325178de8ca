/// What CouchDB peers see of an attachment's content, fixed when it is attached: its MD5
/// (CouchDB's digest) and, for the types the database compresses, a gzip form stored
/// beside it (CouchDB's digest is then the MD5 of that form, as CouchDB's own).
struct CouchForm {
    var md5: [UInt8]
    var encoded: EncodedAttachment?

    /// The form a stored stub carries (nil for stubs written before the MD5 was kept).
    init?(_ info: AttachmentInfo) {
        guard let md5 = info.md5 else { return nil }
        self.init(md5: md5, encoded: info.encoded)
    }

    init(md5: [UInt8], encoded: EncodedAttachment?) {
        self.md5 = md5
        self.encoded = encoded
    }
}

extension Collection {
    /// The form of stored content newly attached as `contentType`: a gzip form made and
    /// stored when the database compresses that type (AttachmentCompression), else the
    /// content's MD5 (`contentMD5` when the caller has it, else read from the store).
    func makeCouchForm(of digest: BlobDigest, contentType: String, contentMD5: [UInt8]?) throws -> CouchForm {
        if let c = database.attachmentCompression, c.compresses(contentType) {
            let reader = try blobStore.openReader(digest)
            defer { reader.close() }
            let writer = try blobStore.makeWriter()
            do {
                try c.compressor.gzip(level: c.level, from: reader, to: writer)
                let gz = try writer.finish()
                return CouchForm(md5: try gz.md5 ?? blobStore.md5(of: gz.digest),
                                 encoded: EncodedAttachment(digest: gz.digest, length: gz.length))
            } catch {
                writer.cancel()
                throw error
            }
        }
        return CouchForm(md5: try contentMD5 ?? blobStore.md5(of: digest), encoded: nil)
    }
}
