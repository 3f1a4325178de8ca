/// Attachment stubs as CouchDB's peers read them: `digest` is CouchDB's "md5-…" of the
/// content (our SHA-1 stays the store's address, inside). The MD5 is the one kept in the
/// stub; stubs written before it was kept get it read from the store.
extension Collection {
    /// The MD5 of an attachment's content.
    public func couchMD5(_ info: AttachmentInfo) throws -> [UInt8] {
        try info.md5 ?? blobStore.md5(of: info.digest)
    }

    /// A document's JSON (a stored body or a rendered revision) with each `_attachments`
    /// entry's `digest` in CouchDB's form and our own members (`md5`, `encoded_digest`)
    /// dropped; `encoding` and `encoded_length` kept only with `encodingInfo` or on an
    /// entry that follows (its part is sent encoded). The same bytes without attachments.
    public func couchDocumentJSON(_ json: [UInt8], encodingInfo: Bool = false) throws -> [UInt8] {
        guard Attachments.contains(json, "\"_attachments\"") else { return json }
        var o = try json.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
        guard let atts = o["_attachments"]?.objectValue else { return json }
        var out = JSONObject()
        for (name, value) in atts.members {
            guard var e = value.objectValue, let d = e["digest"]?.stringValue, let digest = BlobDigest(d) else {
                out.members.append((name, value))
                continue
            }
            let md5 = try e["md5"]?.stringValue.flatMap(CouchDigest.parse) ?? blobStore.md5(of: digest)
            e["digest"] = .string(CouchDigest.string(md5))
            e["md5"] = nil
            e["encoded_digest"] = nil
            if !encodingInfo && e["follows"]?.boolValue != true {
                e["encoding"] = nil
                e["encoded_length"] = nil
            }
            out.members.append((name, .object(e)))
        }
        o["_attachments"] = .object(out)
        var w = JSONWriter(capacity: json.count + 32)
        w.writeObject(o)
        return w.bytes
    }
}
