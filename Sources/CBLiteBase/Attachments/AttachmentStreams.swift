/// Where the bytes of an attachment arriving in a request go: the engine's `BlobWriter`.
/// The wire format streams multipart attachment parts into one without knowing the store.
public protocol AttachmentSink: AnyObject {
    /// Bytes written so far.
    var length: UInt64 { get }
    func write(_ bytes: [UInt8]) throws
    /// Stores what was written; the attachment's identity.
    func finish() throws -> BlobInfo
    /// Drops what was written.
    func cancel()
}

/// Where the bytes of a stored attachment come from: the engine's `BlobReader`.
public protocol AttachmentSource: AnyObject {
    /// At most `max` bytes; empty at the end.
    func read(max: Int) throws -> [UInt8]
    func close()
}
