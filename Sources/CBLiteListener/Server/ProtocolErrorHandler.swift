import CouchWire
import NIOCore
import NIOHTTP1

/// Answers a request the HTTP decoder could not parse, then lets the connection close
/// (ConnectionHandler closes on any error): 431 when its head has too many or too large
/// header fields, 400 otherwise. In place of NIO's HTTPServerProtocolErrorHandler, which
/// answers 400 to everything; like it, it stays silent when a response has begun.
final class ProtocolErrorHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private var responseInProgress = false

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if let parse = error as? HTTPParserError, !responseInProgress {
            let e = parse == .headerOverflow
                ? CouchError(status: 431, error: "bad_request", reason: "Too many or too large request header fields.")
                : CouchError(status: 400, error: "bad_request", reason: "Malformed HTTP request.")
            var h = HTTPHeaders()
            h.add(name: "Server", value: ResponseWriter.serverHeader)
            h.add(name: RequestID.header, value: RequestID.generate())
            h.add(name: "X-CouchDB-Body-Time", value: "0")
            h.add(name: "Content-Type", value: "application/json")
            h.add(name: "Content-Length", value: String(e.body.count))
            h.add(name: "Connection", value: "close")
            let status = HTTPResponseStatus(statusCode: e.status, reasonPhrase: CouchError.reasonPhrase(e.status))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: h))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: e.body)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200: responseInProgress = true
        case .end: responseInProgress = false
        default: break
        }
        context.write(data, promise: promise)
    }
}
