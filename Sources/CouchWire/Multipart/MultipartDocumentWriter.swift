import CBLiteBase

/// One revision as a `multipart/related` body, as CouchDB writes it: the JSON part, then
/// one part per attachment marked `"follows": true`, its content streamed from the
/// attachment store. Shared by the listener (`open_revs`, `GET` with
/// `Accept: multipart/related`) and the replicator (`PUT ?new_edits=false`), which
/// needs the body's length before sending it (CouchDB's replicator sends a
/// `Content-Length`, never chunks).
public struct MultipartDocumentWriter {
    public enum Piece {
        case bytes([UInt8])
        case attachment(AttachmentInfo)
    }

    public let pieces: [Piece]

    /// The parts of `revision` written with `writer` (whose boundary the caller announces);
    /// `close` appends the closing delimiter (false when the caller writes more parts).
    public init(_ revision: Revision, writer mp: inout MultipartWriter, close: Bool = true) {
        var pieces: [Piece] = [.bytes(mp.part([("Content-Type", "application/json")], revision.json))]
        for att in revision.followingAttachments {
            // Content kept gzip-encoded is sent so, as CouchDB sends it (its JSON entry says
            // so and its digest is the MD5 of that form).
            var headers = [
                ("Content-Disposition", "attachment; filename=\"\(MultipartDocumentWriter.quoted(att.name))\""),
                ("Content-Type", att.contentType),
                ("Content-Length", String(att.encoded?.length ?? att.length)),
            ]
            if att.encoded != nil { headers.append(("Content-Encoding", "gzip")) }
            pieces.append(.bytes(mp.beginPart(headers)))
            pieces.append(.attachment(att))
        }
        if close { pieces.append(.bytes(mp.close())) }
        self.pieces = pieces
    }

    /// The body's length in bytes.
    public var length: UInt64 {
        pieces.reduce(0) { n, p in
            switch p {
            case .bytes(let b): return n + UInt64(b.count)
            case .attachment(let a): return n + (a.encoded?.length ?? a.length)
            }
        }
    }

    /// Hands the body to `sink` in pieces of at most 64 KiB of attachment content each,
    /// the attachments' content read from what `openBlob` opens (the engine's
    /// `Collection.openBlob`): this type does no storage I/O of its own.
    public func write(openBlob: (BlobDigest) throws -> any AttachmentSource, to sink: ([UInt8]) throws -> Void) throws {
        for p in pieces {
            switch p {
            case .bytes(let b):
                try sink(b)
            case .attachment(let att):
                let reader = try openBlob(att.encoded?.digest ?? att.digest)
                defer { reader.close() }
                while true {
                    let chunk = try reader.read(max: 64 * 1024)
                    if chunk.isEmpty { break }
                    try sink(chunk)
                }
            }
        }
    }

    /// A filename for a quoted header parameter.
    public static func quoted(_ s: String) -> String {
        var out = ""
        for c in s {
            if c == "\\" || c == "\"" { out.append("\\") }
            out.append(c)
        }
        return out
    }
}
