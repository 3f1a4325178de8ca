import CBLiteCore
import CouchWire
import NIOCore
import NIOHTTP1

/// One HTTP connection, on its event loop. It checks a request's credentials and limits
/// as soon as the head arrives (before any body is read), hands the request to a worker
/// thread, feeds the body to it with backpressure, and cuts off clients that are slow to
/// send their headers or their body (BodyRateGuard), or that go idle.
final class ConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case idle
        /// A worker handles request `id`; `bodyDone` once its `.end` arrived.
        case active(id: Int, body: RequestBody, cancellation: Cancellation, bodyDone: Bool)
        /// Answered from the event loop: the rest of the body is dropped, then the connection closes.
        case discarding
    }

    private let server: ServerContext
    private let remoteIsLoopback: Bool
    private var state = State.idle
    private var pendingRead = false
    /// Numbers requests, so a response that ends after the next request began (the
    /// pipelining handler hands that one over as the previous `.end` is written) does not
    /// end the next one's state.
    private var requestCount = 0
    private var currentWriter: ResponseWriter?
    /// Set when the connection must not serve another request (an oversized body).
    private var closeAfterResponse = false
    private var headerTimer: Scheduled<Void>?
    private var bodyGuard: BodyRateGuard?
    private var bodyTimer: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    private let connections: ConnectionRegistry
    /// The raw-bytes handler before the decoder (which refers back to this one weakly):
    /// it closes connections lingering.
    private let raw: RawActivityHandler

    init(server: ServerContext, remoteIsLoopback: Bool, connections: ConnectionRegistry, raw: RawActivityHandler) {
        self.server = server
        self.remoteIsLoopback = remoteIsLoopback
        self.connections = connections
        self.raw = raw
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        headerTimer?.cancel()
        stopBodyGuard()
    }

    // MARK: timeouts

    /// Raw bytes arrived (RawActivityHandler): between requests they start a new request's
    /// head, which must then complete within the header timeout.
    func bytesArrived() {
        guard case .idle = state, headerTimer == nil, let context else { return }
        let channel = context.channel
        headerTimer = context.eventLoop.scheduleTask(in: .milliseconds(Int64(server.limits.headerTimeoutMs))) {
            channel.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client half-closed: answer what is in flight, then close (it sends no more).
        if let e = event as? ChannelEvent, e == .inputClosed {
            switch state {
            case .idle, .discarding: context.close(promise: nil)
            case .active: closeAfterResponse = true
            }
            return
        }
        if event is IdleStateHandler.IdleStateEvent {
            switch state {
            case .idle, .discarding: context.close(promise: nil)
            case .active(_, _, _, let bodyDone):
                if !bodyDone { context.close(promise: nil) }   // a body that stopped arriving
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    private static var nowMs: Int64 { Int64(NIODeadline.now().uptimeNanoseconds / 1_000_000) }

    /// A request whose body is still to come: it must arrive at the limits' rate.
    private func startBodyGuard(context: ChannelHandlerContext) {
        let limits = server.limits
        bodyGuard = BodyRateGuard(graceMs: limits.bodyTimeoutMs, minBytesPerSecond: limits.bodyMinBytesPerSecond, nowMs: Self.nowMs)
        scheduleBodyCheck(context: context)
    }

    private func scheduleBodyCheck(context: ChannelHandlerContext) {
        guard let g = bodyGuard else { return }
        bodyTimer?.cancel()
        bodyTimer = context.eventLoop.scheduleTask(in: .milliseconds(max(1, g.deadlineMs - Self.nowMs))) { [weak self] in
            self?.checkBodyRate()
        }
    }

    private func checkBodyRate() {
        guard let context, bodyGuard != nil, case .active(_, _, _, false) = state else { return stopBodyGuard() }
        if pendingRead {
            bodyGuard?.restart(nowMs: Self.nowMs)     // we stopped reading: not the client's time
        } else if let g = bodyGuard, Self.nowMs >= g.deadlineMs {
            Loggers.listener.info("closing a connection whose request body arrives too slowly")
            stopBodyGuard()
            context.close(promise: nil)               // the worker's read of the body fails
            return
        }
        scheduleBodyCheck(context: context)
    }

    private func stopBodyGuard() {
        bodyTimer?.cancel()
        bodyTimer = nil
        bodyGuard = nil
    }

    // MARK: reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            headerTimer?.cancel()
            headerTimer = nil
            connections.markBusy(context.channel)
            begin(context: context, head: head)
        case .body(var buffer):
            if case .active(_, let body, _, _) = state {
                let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
                bodyGuard?.received(bytes.count)
                if !body.append(bytes) { closeAfterResponse = true }    // over the limit: the worker answers 413
            }
        case .end:
            switch state {
            case .active(let id, let body, let c, _):
                stopBodyGuard()
                body.finish()
                state = .active(id: id, body: body, cancellation: c, bodyDone: true)
            case .discarding:
                context.close(promise: nil)
            case .idle:
                break
            }
        }
    }

    func read(context: ChannelHandlerContext) {
        if case .active(_, let body, _, false) = state, body.isFull {
            pendingRead = true          // resumed when the worker drains the body
            return
        }
        context.read()
    }

    private func resumeReading() {
        guard pendingRead, let context else { return }
        pendingRead = false
        bodyGuard?.restart(nowMs: Self.nowMs)          // the client could not send while we did not read
        context.read()
    }

    /// A malformed request (NIO's decoder failed): the error handler before this one
    /// answers 400 or 431, then the connection closes (lingering, so that the answer is
    /// not lost to a reset), so the worker's response is dropped and the worker woken.
    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if case .active(_, let body, let c, _) = state {
            currentWriter?.abandon()
            body.fail(.connectionClosed)
            c.cancel()
        }
        raw.closeLingering()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .active(_, let body, let c, _) = state {
            body.fail(.connectionClosed)
            c.cancel()
        }
        headerTimer?.cancel()
        stopBodyGuard()
        context.fireChannelInactive()
    }

    // MARK: a new request

    private func begin(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let path: RequestPath
        let query: QueryParameters
        do {
            path = try RequestPath(target: head.uri, plusAsSpace: server.config.decodesPlusToSpace)
            query = try QueryParameters(query: path.query)
        } catch {
            return answerEarly(context: context, head: head, CouchError.from(error))
        }
        // Credentials first: nothing of the body is read for a client that may not send it.
        let auth: Authenticator.Outcome
        switch server.authenticator.authenticate(head: head, path: path, remoteIsLoopback: remoteIsLoopback) {
        case .success(let o): auth = o
        case .failure(let e):
            return answerEarly(context: context, head: head, e, headers: e.status == 401 ? server.authenticator.challenge(head) : [])
        }
        if server.readOnly && Router.isWrite(method: head.method, path: path) {
            return answerEarly(context: context, head: head, .forbidden("This listener is read-only."))
        }
        let bodyLimit = Router.bodyLimit(method: head.method, path: path, contentType: head.headers.first(name: "Content-Type"), limits: server.limits)
        if let length = head.headers.first(name: "Content-Length").flatMap(Int.init), length > bodyLimit {
            return answerEarly(context: context, head: head, .tooLarge("the request body exceeds \(bodyLimit) bytes"))
        }
        if let expect = head.headers.first(name: "Expect") {
            guard expect.lowercased() == "100-continue" else {
                return answerEarly(context: context, head: head, CouchError(status: 417, error: "expectation_failed", reason: "unsupported Expect: \(expect)"))
            }
            let cont = HTTPResponseHead(version: head.version, status: .continue)
            context.writeAndFlush(wrapOutboundOut(.head(cont)), promise: nil)
        }

        let encoding = head.headers.first(name: "Content-Encoding")?.lowercased() ?? "identity"
        guard encoding == "identity" || encoding == "gzip",
              let body = try? RequestBody(maxBytes: bodyLimit, gzip: encoding == "gzip") else {
            return answerEarly(context: context, head: head, .badContentType("Content-Encoding must be gzip or identity"))
        }
        let cancellation = Cancellation()
        let loop = context.eventLoop
        body.onDrained = { [weak self] in loop.execute { self?.resumeReading() } }
        requestCount += 1
        let id = requestCount
        let (method, startMicros) = (head.method.rawValue, unixTimeMicrosNow())
        let quick = auth.unverified == nil && isQuickRead(head, path: path, query: query)
        // A quick read has no body (isQuickRead checks): its response may end before the
        // request's `.end` arrives, and must not be taken for one that left a body unread.
        state = .active(id: id, body: body, cancellation: cancellation, bodyDone: quick)
        // Only a body still to come is timed: most requests have none, and a timer
        // scheduled and cancelled for each would be work on every one of them.
        let announcesBody = head.headers.contains(name: "Transfer-Encoding")
            || (head.headers.first(name: "Content-Length").flatMap(Int.init) ?? 0) > 0
        if !quick && announcesBody { startBodyGuard(context: context) }
        let writer = ResponseWriter(channel: context.channel, version: head.version, isHead: head.method == .HEAD,
                                    keepAlive: head.isKeepAlive, requestID: RequestID.choose(clientGiven: head.headers.first(name: RequestID.header)),
                                    bodyTimeMs: { body.receivingMs },
                                    onAnswered: { [statistics = server.statistics] status in
            statistics.record(method: method, status: status, milliseconds: Double(unixTimeMicrosNow() - startMicros) / 1000)
        }) { [weak self] keepAlive in
            if loop.inEventLoop {
                self?.responseFinished(id: id, keepAlive: keepAlive)
            } else {
                loop.execute { self?.responseFinished(id: id, keepAlive: keepAlive) }
            }
        }
        currentWriter = writer
        let request = Request(head: head, path: path, query: query, body: body, userCtx: auth.userCtx, unverified: auth.unverified,
                              authenticatedBy: auth.method, cancellation: cancellation,
                              tls: server.ownAddress.tls, localPort: server.ownAddress.port)
        let router: Router = server.router
        let active = server.activeRequests
        active.add(id: ObjectIdentifier(request), body: body, cancellation: cancellation)
        if quick {
            // Answered here on the event loop: a handoff to the pool and back costs two
            // thread wake-ups, more than the read itself (bench_listener: ~94 µs above
            // the loopback round trip through the pool). Only whole responses are made
            // here, whose writes are queued on this loop and never waited for.
            router.handle(request, writer)
            active.remove(id: ObjectIdentifier(request))
            return
        }
        server.workers.submit {
            router.handle(request, writer)
            active.remove(id: ObjectIdentifier(request))
        }
    }

    /// A request whose answer is one primary-key read of an open database, sent whole:
    /// GET/HEAD without a body or query parameters, not asking for multipart, of `/`,
    /// `/_up`, `/{db}` or `/{db}/{doc}` where the database is already open. Anything that
    /// could stream, wait, open a file or run long goes to the pool.
    private func isQuickRead(_ head: HTTPRequestHead, path: RequestPath, query: QueryParameters) -> Bool {
        guard head.method == .GET || head.method == .HEAD, query.items.isEmpty, path.query.isEmpty else { return false }
        if let length = head.headers.first(name: "Content-Length"), length != "0" { return false }
        if head.headers.contains(name: "Transfer-Encoding") { return false }
        if head.headers["Accept"].contains(where: ConnectionHandler.mentionsMultipart) { return false }
        let s = path.segments
        switch s.count {
        case 0: return true
        case 1: return s[0] == "_up" || (!s[0].hasPrefix("_") && server.databases.isOpen(s[0]))
        case 2: return !s[0].hasPrefix("_") && !s[1].hasPrefix("_") && server.databases.isOpen(s[0])
        default: return false
        }
    }

    /// "multipart" anywhere in a header value, ASCII case-insensitively. A byte loop:
    /// lowercased().contains() cost ~25,000 instructions a request (callgrind), more than
    /// the database read.
    static func mentionsMultipart(_ value: String) -> Bool {
        let word = Array("multipart".utf8)
        var bytes = Array(value.utf8)
        guard bytes.count >= word.count else { return false }
        for i in bytes.indices { bytes[i] |= 0x20 }     // A-Z to a-z; no other byte becomes a letter
        return (0...(bytes.count - word.count)).contains { i in
            bytes[i] == word[0] && bytes[i..<(i + word.count)].elementsEqual(word)
        }
    }

    private func responseFinished(id: Int, keepAlive: Bool) {
        guard let context else { return }
        guard case .active(let current, _, _, let bodyDone) = state, current == id else {
            // The next request already began: this one was read to its end.
            if !keepAlive { context.close(promise: nil) }
            return
        }
        state = .idle
        currentWriter = nil
        stopBodyGuard()
        // A body the handler did not read to its end would be taken for the next request.
        if !keepAlive || !bodyDone || closeAfterResponse {
            context.close(promise: nil)
            return
        }
        connections.markWaiting(context.channel)
        if pendingRead {
            pendingRead = false
            context.read()
        }
    }

    /// Answers from the event loop (auth, limits, malformed targets) and closes the
    /// connection once the response is out, without handling the body.
    private func answerEarly(context: ChannelHandlerContext, head: HTTPRequestHead, _ e: CouchError, headers extra: [(String, String)] = []) {
        var h = HTTPHeaders()
        h.add(name: "Server", value: ResponseWriter.serverHeader)
        h.add(name: RequestID.header, value: RequestID.choose(clientGiven: head.headers.first(name: RequestID.header)))
        h.add(name: "X-CouchDB-Body-Time", value: "0")
        h.add(name: "Cache-Control", value: "must-revalidate")
        h.add(name: "Content-Type", value: "application/json")
        for (n, v) in extra { h.add(name: n, value: v) }
        let body = head.method == .HEAD ? [] : e.body
        h.add(name: "Content-Length", value: String(e.body.count))
        h.add(name: "Connection", value: "close")
        server.statistics.record(method: head.method.rawValue, status: e.status, milliseconds: 0)
        let status = HTTPResponseStatus(statusCode: e.status, reasonPhrase: CouchError.reasonPhrase(e.status))
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: h))), promise: nil)
        if !body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
        state = .discarding
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        raw.closeLingering()          // the body still coming must not reset the answer away
    }
}
