/// Reads stored attachment content in chunks, with seek. Holds the file open, so it
/// keeps working even if compaction deletes the file meanwhile. When the content is read
/// sequentially from the start to the end it is checked against its digest, and the
/// read that reaches the end fails (500) if it does not match. Thread-safe (calls are
/// serialized).
public final class BlobReader: AttachmentSource, @unchecked Sendable {
    public let digest: BlobDigest
    /// The content length in bytes.
    public let length: UInt64
    private let monitor = Monitor()
    private var file: BlobFile?
    private var decoder: (any BlobFileDecoder)?
    private var pos: UInt64 = 0
    private var hasher: SHA1? = SHA1()   // nil once reads are not sequential
    private var hashed: UInt64 = 0

    init(digest: BlobDigest, file: BlobFile, decoder: any BlobFileDecoder) {
        self.digest = digest
        self.file = file
        self.decoder = decoder
        length = decoder.length
    }

    deinit { file?.close() }

    /// The offset of the next read.
    public var position: UInt64 { monitor.locked { pos } }

    /// Reads up to buffer.count bytes at the current position; 0 at the end.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try monitor.locked {
            guard let decoder else { throw CBLError.badRequest("blob reader is closed") }
            let n = buffer.count == 0 ? 0 : try decoder.read(at: pos, into: buffer)
            if hasher != nil {
                if hashed == pos {
                    hasher!.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                    hashed += UInt64(n)
                    if hashed == length {
                        let actual = BlobDigest(hasher: &hasher!)
                        hasher = nil
                        if actual != digest {
                            throw CBLError.internalError("attachment content \(digest) is corrupt (its digest is \(actual))")
                        }
                    }
                } else {
                    hasher = nil
                }
            }
            pos += UInt64(n)
            return n
        }
    }

    /// Reads up to `max` bytes ([] at the end).
    public func read(max: Int) throws -> [UInt8] {
        guard max >= 0 else { throw CBLError.badRequest("negative read size") }
        var buf = [UInt8](repeating: 0, count: Swift.min(max, Int(clamping: length &- Swift.min(length, position))))
        let n = try buf.withUnsafeMutableBytes { try read(into: $0) }
        buf.removeSubrange(n...)
        return buf
    }

    /// Moves to `offset` (0...length; 400 beyond the end).
    public func seek(to offset: UInt64) throws {
        try monitor.locked {
            guard decoder != nil else { throw CBLError.badRequest("blob reader is closed") }
            guard offset <= length else { throw CBLError.badRequest("seek to \(offset) is past the end (\(length) bytes)") }
            pos = offset
        }
    }

    /// Closes the file. Harmless when already closed.
    public func close() {
        monitor.locked {
            decoder = nil
            file?.close()
            file = nil
        }
    }
}
