import CouchWire
import NIOCore

/// Answers a connection over the limit with a short 503 (plain HTTP only: a TLS client
/// would not understand it before a handshake) and closes it without reading anything.
final class RejectConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private let plainText: Bool

    init(plainText: Bool) { self.plainText = plainText }

    func channelActive(context: ChannelHandlerContext) {
        guard plainText else { context.close(promise: nil); return }
        let bytes = RawResponse.closing(CouchError(status: 503, error: "service_unavailable", reason: "Too many connections."))
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: bytes))).whenComplete { _ in channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
