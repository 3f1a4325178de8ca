import CNIOExtrasZlib

/// Streaming gunzip (NIOExtras' vendored zlib): CouchDB sends text attachments
/// `Content-Encoding: gzip` inside multipart bodies, and they are stored decoded.
/// Output is bounded by `maxOutput` so a small bomb cannot fill the disk.
public final class GzipInflater {
    private let stream: UnsafeMutablePointer<cnioextras_z_stream>
    private var produced = 0
    private let maxOutput: Int
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

    /// Decodes `input`, returning what it produced. Data after the end of the gzip
    /// member is an error.
    public func inflate(_ input: [UInt8]) throws -> [UInt8] {
        guard !input.isEmpty else { return [] }
        guard !isComplete else { throw CouchError.badRequest("data after the end of a gzip attachment") }
        var out: [UInt8] = []
        var input = input
        try input.withUnsafeMutableBufferPointer { inBuf in
            stream.pointee.next_in = inBuf.baseAddress
            stream.pointee.avail_in = UInt32(inBuf.count)
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            repeat {
                let (rc, written): (Int32, Int) = chunk.withUnsafeMutableBufferPointer { outBuf in
                    stream.pointee.next_out = outBuf.baseAddress
                    stream.pointee.avail_out = UInt32(outBuf.count)
                    let rc = cnioextras_z_inflate(stream, CNIOEXTRAS_Z_NO_FLUSH)
                    return (rc, outBuf.count - Int(stream.pointee.avail_out))
                }
                guard rc == CNIOEXTRAS_Z_OK || rc == CNIOEXTRAS_Z_STREAM_END || (rc == CNIOEXTRAS_Z_BUF_ERROR && written == 0) else {
                    throw CouchError.badRequest("invalid gzip attachment data (zlib \(rc))")
                }
                out += chunk[0..<written]
                produced += written
                if produced > maxOutput { throw CouchError.tooLarge("a gzip attachment decodes to more than \(maxOutput) bytes") }
                if rc == CNIOEXTRAS_Z_STREAM_END {
                    isComplete = true
                    if stream.pointee.avail_in > 0 { throw CouchError.badRequest("data after the end of a gzip attachment") }
                    break
                }
                if rc == CNIOEXTRAS_Z_BUF_ERROR { break }
            } while stream.pointee.avail_in > 0 || stream.pointee.avail_out == 0
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        return out
    }

    public func finish() throws {
        guard isComplete else { throw CouchError.badRequest("a gzip attachment ended early") }
    }
}
