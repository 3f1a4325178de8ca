import CNIOExtrasZlib

/// Streaming gunzip (NIOExtras' vendored zlib): CouchDB sends text attachments
/// `Content-Encoding: gzip` inside multipart bodies, and they are stored decoded.
/// Output comes in pieces of at most `pieceSize` bytes, so a small bomb never inflates
/// in memory all at once; and in total at most `maxOutput`, so it cannot fill the disk.
///
///     inflater.feed(input)
///     while let piece = try inflater.next() { use(piece) }    // nil: feed more
///     try inflater.finish()                                     // at the end of the input
public final class GzipInflater {
    public static let pieceSize = 64 * 1024

    private let stream: UnsafeMutablePointer<cnioextras_z_stream>
    private var produced = 0
    private let maxOutput: Int
    /// The input fed and not consumed yet: from `inputOffset` on.
    private var input: [UInt8] = []
    private var inputOffset = 0
    public private(set) var isComplete = false

    public init(maxOutput: Int) throws {
        self.maxOutput = maxOutput
        stream = .allocate(capacity: 1)
        stream.initialize(to: cnioextras_z_stream())
        // 16 + 15: the gzip format only, the largest window.
        guard CNIOExtrasZlib_inflateInit2(stream, 16 + 15) == CNIOEXTRAS_Z_OK else {
            stream.deallocate()
            throw CouchError.badRequest("cannot initialise gzip decoding")
        }
    }

    deinit {
        cnioextras_z_inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Adds input; take every piece with `next()` before feeding more. Data after the end
    /// of the gzip member is an error.
    public func feed(_ bytes: [UInt8]) throws {
        guard !bytes.isEmpty else { return }
        guard !isComplete else { throw CouchError.badRequest("data after the end of gzip data") }
        input.removeFirst(inputOffset)
        inputOffset = 0
        input += bytes
    }

    /// The next piece of output (1 to `pieceSize` bytes), nil when the input fed so far
    /// is used up (or the gzip data ended).
    public func next() throws -> [UInt8]? {
        var piece = [UInt8](repeating: 0, count: GzipInflater.pieceSize)
        while inputOffset < input.count && !isComplete {
            let (rc, consumed, written): (Int32, Int, Int) = input.withUnsafeMutableBufferPointer { inBuf in
                piece.withUnsafeMutableBufferPointer { outBuf in
                    stream.pointee.next_in = inBuf.baseAddress! + inputOffset
                    stream.pointee.avail_in = UInt32(inBuf.count - inputOffset)
                    stream.pointee.next_out = outBuf.baseAddress
                    stream.pointee.avail_out = UInt32(outBuf.count)
                    let rc = cnioextras_z_inflate(stream, CNIOEXTRAS_Z_NO_FLUSH)
                    let consumed = inBuf.count - inputOffset - Int(stream.pointee.avail_in)
                    let written = outBuf.count - Int(stream.pointee.avail_out)
                    stream.pointee.next_in = nil        // the buffers are only valid here
                    stream.pointee.next_out = nil
                    return (rc, consumed, written)
                }
            }
            guard rc == CNIOEXTRAS_Z_OK || rc == CNIOEXTRAS_Z_STREAM_END || (rc == CNIOEXTRAS_Z_BUF_ERROR && written == 0) else {
                throw CouchError.badRequest("invalid gzip data (zlib \(rc))")
            }
            inputOffset += consumed
            produced += written
            if produced > maxOutput { throw CouchError.tooLarge("gzip data decodes to more than \(maxOutput) bytes") }
            if rc == CNIOEXTRAS_Z_STREAM_END {
                isComplete = true
                if inputOffset < input.count { throw CouchError.badRequest("data after the end of gzip data") }
            }
            if written > 0 {
                piece.removeSubrange(written...)
                return piece
            }
            if consumed == 0 { break }          // no progress: zlib wants more input
        }
        return nil
    }

    /// Feeds `bytes` and hands each piece of output to `body`.
    public func inflate(_ bytes: [UInt8], into body: ([UInt8]) throws -> Void) throws {
        try feed(bytes)
        while let piece = try next() { try body(piece) }
    }

    public func finish() throws {
        guard isComplete else { throw CouchError.badRequest("gzip data ended early") }
    }
}
