import CouchWire
import NIOCore

/// The connection's raw bytes, before the HTTP decoder. It tells the connection handler
/// that bytes arrived, so the header timeout starts with a request's first byte; it
/// checks the connection's first request line, which must end in ` HTTP/1.x`: an
/// HTTP/0.9 line or other garbage is answered 400 and closed at once, where the decoder
/// would wait for headers that never come (later requests follow an HTTP/1.x one and go
/// to the decoder unchecked: only the decoder knows where they begin); and it drops the
/// input of a connection closing after an error answer (`closeLingering`).
final class RawActivityHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer
    weak var connection: ConnectionHandler?

    /// A first line longer than this is left to the decoder's own limits (a long target
    /// is not refused here).
    static let lineLimit = 8192
    /// How long a closing connection keeps reading what the client still sends.
    static let lingerMs: Int64 = 2000
    private var firstLine: [UInt8]? = []
    private var lingering = false
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !lingering else { return }
        let buffer = unwrapInboundIn(data)
        if firstLine != nil, !checkFirstLine(buffer) {
            let e = CouchError(status: 400, error: "bad_request", reason: "The request line must end with HTTP/1.0 or HTTP/1.1.")
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: RawResponse.closing(e))), promise: nil)
            closeLingering()
            return
        }
        connection?.bytesArrived()
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if lingering, let e = event as? ChannelEvent, e == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Closes the connection once an error answer is written, without losing it: closing
    /// with unread input makes the kernel send a reset, which can destroy the answer before
    /// the client reads it (say, the 431 for a head the client is still sending). So
    /// input is dropped unread from now on, the output is shut once the answer is out,
    /// and the connection closes when the client closes its side, or after `lingerMs`.
    func closeLingering() {
        guard !lingering, let context else { return }
        lingering = true
        let channel = context.channel
        channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }    // TLS: no half-close
        context.eventLoop.scheduleTask(in: .milliseconds(RawActivityHandler.lingerMs)) { channel.close(promise: nil) }
    }

    /// False once the first line is complete and not HTTP/1.x; true while it may still be.
    private func checkFirstLine(_ buffer: ByteBuffer) -> Bool {
        guard var line = firstLine else { return true }
        for byte in buffer.readableBytesView {
            if byte == UInt8(ascii: "\n") {
                if line.isEmpty || line == [UInt8(ascii: "\r")] { line = []; continue }    // blank lines before a request are allowed
                firstLine = nil
                return RawActivityHandler.isHTTP1RequestLine(line)
            }
            line.append(byte)
            if line.count > RawActivityHandler.lineLimit { firstLine = nil; return true }
        }
        firstLine = line
        return true
    }

    /// `METHOD SP target SP HTTP/1.d`, with or without the CR.
    static func isHTTP1RequestLine(_ line: [UInt8]) -> Bool {
        var l = line[...]
        if l.last == UInt8(ascii: "\r") { l = l.dropLast() }
        let version = Array(" HTTP/1.".utf8)
        guard l.count > version.count + 2, let digit = l.last, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return false }
        return l.dropLast().suffix(version.count).elementsEqual(version) && l.dropLast(version.count + 1).contains(UInt8(ascii: " "))
    }
}
