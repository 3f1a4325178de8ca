import CBLiteCore
import NIOCore
import NIOHTTP1
import NIOSSL

/// Where a connection's response parts wait for the replicator's thread. Reads are held
/// back while more than `highWater` bytes wait (the pipeline's `read` is swallowed and
/// replayed when the consumer drains), so a 50 MB attachment or an endless continuous
/// feed passes in bounded memory.
final class ResponseInbox: @unchecked Sendable {
    enum Part {
        case head(HTTPResponseHead)
        case body([UInt8])
        case end
    }

    private let monitor = Monitor()
    private var parts: [Part] = []
    private var bufferedBytes = 0
    private var failure: (any Error)?
    private var closed = false
    private var heldRead: (() -> Void)?
    private let highWater = 1 << 20

    // MARK: event loop side

    func push(_ part: Part) {
        monitor.locked {
            if case .body(let b) = part { bufferedBytes += b.count }
            parts.append(part)
            monitor.broadcast()
        }
    }

    func fail(_ error: any Error) {
        monitor.locked {
            if failure == nil { failure = error }
            monitor.broadcast()
        }
    }

    func close() {
        monitor.locked {
            closed = true
            monitor.broadcast()
        }
    }

    /// Whether the pipeline may read now; otherwise `replay` runs once the consumer drains.
    func mayRead(orLater replay: @escaping () -> Void) -> Bool {
        monitor.locked {
            if bufferedBytes < highWater { return true }
            heldRead = replay
            return false
        }
    }

    // MARK: consumer side

    /// The next part, waiting until `deadline`. Throws the connection's failure, a
    /// timeout, or "closed" when the peer hung up before the response ended.
    func take(deadline: MonotonicTime) throws -> Part {
        var replay: (() -> Void)? = nil
        defer { replay?() }
        return try monitor.locked {
            while true {
                if !parts.isEmpty {
                    let p = parts.removeFirst()
                    if case .body(let b) = p {
                        bufferedBytes -= b.count
                        if bufferedBytes < highWater, let r = heldRead { heldRead = nil; replay = r }
                    }
                    return p
                }
                if let failure { throw ResponseInbox.classify(failure) }
                if closed { throw ReplicationError.network("the peer closed the connection before the response ended") }
                if MonotonicTime.now() >= deadline { throw ReplicationError.network("no answer from the peer in time (timeout)") }
                _ = monitor.wait(until: deadline)
            }
        }
    }

    /// Clears what a finished exchange left, before the next request on this connection.
    func reset() {
        monitor.locked {
            parts.removeAll()
            bufferedBytes = 0
        }
    }

    var isClosed: Bool { monitor.locked { closed || failure != nil } }

    /// What the connection failed with, if it did (a TLS handshake error, a reset).
    var failureError: (any Error)? { monitor.locked { failure } }

    /// A connection failure as a ReplicationError: TLS failures (an untrusted or unpinned
    /// certificate, no common protocol) are not retried — trying again cannot help —
    /// and keep their reason; others are the network's and are.
    static func classify(_ error: any Error) -> ReplicationError {
        if error is NIOSSLError || error is BoringSSLError {
            return ReplicationError(httpStatus: 0, message: "TLS: \(error)", isTransient: false)
        }
        return .network("connection failed: \(error)")
    }
}

/// The last handler of a client pipeline: response parts into the inbox, and the
/// backpressure on `read`.
final class ResponseInboxHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    private let inbox: ResponseInbox

    init(inbox: ResponseInbox) { self.inbox = inbox }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h): inbox.push(.head(h))
        case .body(let buf): inbox.push(.body(Array(buf.readableBytesView)))
        case .end: inbox.push(.end)
        }
    }

    func read(context: ChannelHandlerContext) {
        let loop = context.eventLoop
        let replay: () -> Void = { loop.execute { context.read() } }
        if inbox.mayRead(orLater: replay) { context.read() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        inbox.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        inbox.close()
        context.fireChannelInactive()
    }
}
