import CBLiteBase

/// Holds an attachment part of a `multipart/related` document to what the document's
/// JSON declares of it: `length` (of the content), `encoded_length` (as sent, for a gzip
/// part) and `digest` — CouchDB's "md5-…" of the bytes as sent, or our "sha1-…" of the
/// content; other kinds are not checked. A part that runs past a declared length fails
/// at once, one that ends short or has another digest at its end: 400 either way, so
/// an upload cut short or padded is never stored as if whole.
final class AttachmentPartCheck {
    private let name: String
    private let length: UInt64?
    private let encodedLength: UInt64?
    private var md5: (expected: [UInt8], state: MD5)?
    private var sha1: (expected: BlobDigest, state: SHA1)?
    private var sent: UInt64 = 0
    private var decoded: UInt64 = 0

    /// `entry`: the attachment's object in `_attachments`; `gzip`: whether the part is sent encoded.
    init(name: String, entry: JSONObject?, gzip: Bool) throws {
        self.name = name
        length = try AttachmentPartCheck.count(entry?["length"], "length", name)
        encodedLength = gzip ? try AttachmentPartCheck.count(entry?["encoded_length"], "encoded_length", name) : nil
        if let digest = entry?["digest"]?.stringValue {
            if digest.hasPrefix("md5-") {
                guard let bytes = Base64.decode(digest.utf8.dropFirst(4)), bytes.count == MD5.byteCount else {
                    throw CouchError.badRequest("attachment \"\(name)\": malformed digest \"\(digest.prefix(80))\"")
                }
                md5 = (bytes, MD5())
            } else if digest.hasPrefix("sha1-") {
                sha1 = (try BlobDigest.parse(digest, what: "attachment \"\(name)\": digest"), SHA1())
            }
        }
    }

    /// Bytes of the part as sent (before any gzip decoding).
    func sent(_ bytes: [UInt8]) throws {
        sent += UInt64(bytes.count)
        md5?.state.update(bytes)
        if let encodedLength, sent > encodedLength { throw mismatch("encoded_length", encodedLength, "more") }
    }

    /// Bytes of the content (after decoding).
    func decoded(_ bytes: [UInt8]) throws {
        decoded += UInt64(bytes.count)
        sha1?.state.update(bytes)
        if let length, decoded > length { throw mismatch("length", length, "more") }
    }

    /// The part ended: its sizes and digest must be the declared ones.
    func finish() throws {
        if let encodedLength, sent != encodedLength { throw mismatch("encoded_length", encodedLength, "\(sent)") }
        if let length, decoded != length { throw mismatch("length", length, "\(decoded)") }
        if var m = md5, m.state.finalize() != m.expected {
            throw CouchError.badRequest("attachment \"\(name)\": its content does not match its md5 digest")
        }
        if var s = sha1, BlobDigest(hasher: &s.state) != s.expected {
            throw CouchError.badRequest("attachment \"\(name)\": its content does not match its sha1 digest")
        }
    }

    private func mismatch(_ field: String, _ declared: UInt64, _ got: String) -> CouchError {
        CouchError.badRequest("attachment \"\(name)\": \(field) is \(declared) but its part has \(got) bytes")
    }

    private static func count(_ v: JSONValue?, _ field: String, _ name: String) throws -> UInt64? {
        guard let v else { return nil }
        guard let n = v.intValue, n >= 0 else { throw CouchError.badRequest("attachment \"\(name)\": \(field) must be a non-negative integer") }
        return UInt64(n)
    }
}
