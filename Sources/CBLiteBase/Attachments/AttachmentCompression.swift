/// Which attachments a database keeps a gzip form of, as CouchDB stores its
/// `[attachments] compressible_types` gzip-encoded at `compression_level`: decided when
/// the content is attached (content stored before, or while it is off, stays as it is).
/// Off unless set (the listener sets it on the databases it serves; CouchWire's gzip).
public struct AttachmentCompression: Sendable {
    /// CouchDB 3.5's defaults.
    public static let defaultLevel = 8
    public static let defaultTypes = "text/*, application/javascript, application/json, application/xml"

    /// 1 (fastest) to 9 (smallest); 0: no gzip forms.
    public let level: Int
    /// Media types, `type/*` for a whole type.
    public let types: [String]
    public let compressor: any AttachmentCompressor

    public init(level: Int = defaultLevel, types: String = defaultTypes, compressor: any AttachmentCompressor) {
        self.level = max(0, min(9, level))
        self.types = types.split(separator: ",").map { $0.filter { $0 != " " && $0 != "\t" }.lowercased() }.filter { !$0.isEmpty }
        self.compressor = compressor
    }

    /// Whether content of `contentType` (its parameters aside) gets a gzip form.
    public func compresses(_ contentType: String) -> Bool {
        guard level > 0 else { return false }
        let type = contentType.prefix { $0 != ";" }.filter { $0 != " " && $0 != "\t" }.lowercased()
        let major = type.prefix { $0 != "/" }
        return types.contains { $0 == type || ($0.hasSuffix("/*") && $0.dropLast(2) == major) }
    }
}

/// Makes the gzip form of content (the wire format's zlib; the engine has none).
public protocol AttachmentCompressor: Sendable {
    /// Reads `source` to its end and writes its gzip form (one member) to `sink`.
    func gzip(level: Int, from source: any AttachmentSource, to sink: any AttachmentSink) throws
}
