/// CouchDB's name for attachment content: "md5-<base64 of the 16 bytes of its MD5>", the
/// `digest` of its stubs, and (base64 alone, quoted) the `ETag` of the attachment. cblite
/// addresses content by SHA-1 (BlobDigest) and keeps the MD5 beside it for the wire.
public enum CouchDigest {
    public static func string(_ md5: [UInt8]) -> String { "md5-" + Base64.encode(md5) }

    /// The attachment's `ETag` value: the quoted base64 MD5, without "md5-".
    public static func etag(_ md5: [UInt8]) -> String { "\"" + Base64.encode(md5) + "\"" }

    /// The 16 bytes of "md5-<base64>"; nil for any other text.
    public static func parse(_ string: String) -> [UInt8]? {
        guard string.hasPrefix("md5-"), let bytes = Base64.decode(string.utf8.dropFirst(4)),
              bytes.count == MD5.byteCount else { return nil }
        return bytes
    }
}
