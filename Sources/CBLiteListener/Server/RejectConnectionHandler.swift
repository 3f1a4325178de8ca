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
        let body = CouchError(status: 503, error: "service_unavailable", reason: "Too many connections.").body
        let head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: Array(head.utf8) + body))).whenComplete { _ in channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
