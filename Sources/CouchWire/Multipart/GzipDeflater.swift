import CBLiteBase
import CNIOExtrasZlib

/// Streaming gzip (NIOExtras' vendored zlib) as CouchDB stores its compressible
/// attachments: one gzip member, 8 as memLevel, the largest window, in pieces of 64 KiB.
public struct GzipDeflater: AttachmentCompressor {
    public init() {}

    public func gzip(level: Int, from source: any AttachmentSource, to sink: any AttachmentSink) throws {
        let stream = UnsafeMutablePointer<cnioextras_z_stream>.allocate(capacity: 1)
        stream.initialize(to: cnioextras_z_stream())
        defer { stream.deinitialize(count: 1); stream.deallocate() }
        // 16 + 15: a gzip header, the largest window.
        guard CNIOExtrasZlib_deflateInit2(stream, Int32(level), CNIOEXTRAS_Z_DEFLATED, 16 + 15, 8, CNIOEXTRAS_Z_DEFAULT_STRATEGY) == CNIOEXTRAS_Z_OK else {
            throw CBLError.internalError("cannot initialise gzip encoding")
        }
        defer { cnioextras_z_deflateEnd(stream) }
        var out = [UInt8](repeating: 0, count: 64 * 1024)
        var input: [UInt8] = []
        var offset = 0
        var finishing = false
        while true {
            if offset == input.count && !finishing {
                input = try source.read(max: 64 * 1024)
                offset = 0
                finishing = input.isEmpty
            }
            let flush = finishing ? CNIOEXTRAS_Z_FINISH : CNIOEXTRAS_Z_NO_FLUSH
            let (rc, consumed, written): (Int32, Int, Int) = input.withUnsafeBufferPointer { inBuf in
                out.withUnsafeMutableBufferPointer { outBuf in
                    stream.pointee.next_in = inBuf.baseAddress.map { UnsafeMutablePointer(mutating: $0 + offset) }
                    stream.pointee.avail_in = UInt32(inBuf.count - offset)
                    stream.pointee.next_out = outBuf.baseAddress
                    stream.pointee.avail_out = UInt32(outBuf.count)
                    let rc = cnioextras_z_deflate(stream, flush)
                    let consumed = inBuf.count - offset - Int(stream.pointee.avail_in)
                    stream.pointee.next_in = nil        // the buffers are only valid here
                    stream.pointee.next_out = nil
                    return (rc, consumed, outBuf.count - Int(stream.pointee.avail_out))
                }
            }
            guard rc == CNIOEXTRAS_Z_OK || rc == CNIOEXTRAS_Z_STREAM_END else {
                throw CBLError.internalError("gzip encoding failed (zlib \(rc))")
            }
            offset += consumed
            if written > 0 { try sink.write(Array(out[0..<written])) }
            if rc == CNIOEXTRAS_Z_STREAM_END { return }
        }
    }
}
