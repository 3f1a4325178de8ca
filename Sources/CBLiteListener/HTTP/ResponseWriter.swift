import CBLiteCore
import CouchWire
import NIOCore
import NIOHTTP1

/// Writes one response from a worker thread: whole (with Content-Length) or streamed
/// (chunked). Streaming waits for the socket once too much is unsent, so a slow client
/// holds back the producer instead of filling memory.
final class ResponseWriter: @unchecked Sendable {
    static let serverHeader = "cblite/\(CBLiteVersion.string)"
    private static let maxUnflushed = 256 * 1024

    private let channel: Channel
    private let version: HTTPVersion
    private let isHead: Bool
    /// False too once a streamed response to an HTTP/1.0 client began: its end is the
    /// connection's close.
    private var keepAlive: Bool
    /// CouchDB's `X-Couch-Request-ID` (RequestID): on every response.
    private let requestID: String
    /// Milliseconds spent receiving the request body (`X-CouchDB-Body-Time`).
    private let bodyTimeMs: () -> Int
    private let onFinished: @Sendable (_ keepAlive: Bool) -> Void
    /// Told the status once the whole answer is made, before its end is written, so a
    /// client that has its answer finds it counted (`_stats`).
    private let onAnswered: @Sendable (_ status: Int) -> Void
    private let lock = Monitor()
    private var started = false
    private var finished = false
    private var unflushedBytes = 0
    private var lastWrite: EventLoopFuture<Void>?
    private(set) var status = 0
    /// Set on the event loop when the connection answered the request itself (a
    /// malformed body: NIO's error handler sends the 400): nothing more may be written.
    /// Every write is made on the event loop after checking it.
    private var abandoned = false

    init(channel: Channel, version: HTTPVersion, isHead: Bool, keepAlive: Bool, requestID: String,
         bodyTimeMs: @escaping () -> Int = { 0 }, onAnswered: @escaping @Sendable (_ status: Int) -> Void = { _ in },
         onFinished: @escaping @Sendable (_ keepAlive: Bool) -> Void) {
        self.channel = channel
        self.version = version
        self.isHead = isHead
        self.keepAlive = keepAlive
        self.requestID = requestID
        self.bodyTimeMs = bodyTimeMs
        self.onFinished = onFinished
        self.onAnswered = onAnswered
    }

    var hasStarted: Bool { lock.locked { started } }

    /// On the event loop: drop whatever this response still writes.
    func abandon() { abandoned = true }

    /// Writes `parts` on the event loop (unless abandoned) and flushes them: at once when
    /// called there (a request answered on the loop: the response is out before the
    /// pipeline asks for the next read, so reading is never paused and resumed), else
    /// as a task for the loop.
    @discardableResult
    private func emit(_ parts: [HTTPServerResponsePart]) -> EventLoopFuture<Void> {
        let loop = channel.eventLoop
        let promise = loop.makePromise(of: Void.self)
        if loop.inEventLoop {
            write(parts, promise)
        } else {
            loop.execute { self.write(parts, promise) }
        }
        return promise.futureResult
    }

    /// On the event loop.
    private func write(_ parts: [HTTPServerResponsePart], _ promise: EventLoopPromise<Void>) {
        guard !abandoned, channel.isActive else {
            promise.fail(ChannelError.ioOnClosedChannel)
            return
        }
        for (i, p) in parts.enumerated() {
            channel.write(p, promise: i == parts.count - 1 ? promise : nil)
        }
        channel.flush()
    }

    /// The headers every response carries. A 304 has no body, so none of the headers
    /// describing one (CouchDB's: no Cache-Control or Content-Type).
    private func baseHeaders(_ extra: [(String, String)], contentType: String?, status: Int) -> HTTPHeaders {
        var h = HTTPHeaders()
        h.add(name: "Server", value: ResponseWriter.serverHeader)
        h.add(name: RequestID.header, value: requestID)
        h.add(name: "X-CouchDB-Body-Time", value: String(bodyTimeMs()))
        if status == 304 {
            for (n, v) in extra where n.lowercased() != "cache-control" && n.lowercased() != "content-type" { h.add(name: n, value: v) }
            if !keepAlive { h.replaceOrAdd(name: "Connection", value: "close") }
            return h
        }
        h.add(name: "Cache-Control", value: "must-revalidate")
        if let contentType { h.add(name: "Content-Type", value: contentType) }
        // An endpoint's own Cache-Control (`/_uuids`: no-cache) replaces the default one.
        for (n, v) in extra {
            if n.lowercased() == "cache-control" { h.replaceOrAdd(name: n, value: v) } else { h.add(name: n, value: v) }
        }
        if !keepAlive { h.replaceOrAdd(name: "Connection", value: "close") }
        return h
    }

    private func head(_ status: Int, _ headers: HTTPHeaders) -> HTTPResponseHead {
        HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: status, reasonPhrase: CouchError.reasonPhrase(status)),
                         headers: headers)
    }

    // MARK: whole responses

    func send(status: Int, headers extra: [(String, String)] = [], contentType: String? = "application/json", body: [UInt8]) {
        let ok: Bool = lock.locked {
            guard !started else { return false }
            started = true
            finished = true
            return true
        }
        guard ok else { return }
        self.status = status
        var h = baseHeaders(extra, contentType: contentType, status: status)
        h.replaceOrAdd(name: "Content-Length", value: String(body.count))
        var parts: [HTTPServerResponsePart] = [.head(head(status, h))]
        if !isHead && !body.isEmpty { parts.append(.body(.byteBuffer(ByteBuffer(bytes: body)))) }
        parts.append(.end(nil))
        let keepAlive = self.keepAlive
        let done = onFinished
        onAnswered(status)
        emit(parts).whenComplete { _ in done(keepAlive) }     // one hop to the event loop
    }

    /// JSON followed by a newline, as CouchDB writes its bodies.
    func sendJSON(_ status: Int, _ value: JSONValue, headers: [(String, String)] = []) {
        var w = JSONWriter(canonical: false)
        w.write(value)
        w.appendByte(10)
        send(status: status, headers: headers, body: w.bytes)
    }

    func sendJSON(_ status: Int, raw: [UInt8], headers: [(String, String)] = []) {
        send(status: status, headers: headers, body: raw + [10])
    }

    func sendError(_ e: CouchError, headers: [(String, String)] = []) {
        send(status: e.status, headers: headers, body: e.body)
    }

    // MARK: streamed responses

    func begin(status: Int, headers extra: [(String, String)] = [], contentType: String? = "application/json", contentLength: UInt64? = nil) {
        lock.locked { precondition(!started, "response already started"); started = true }
        self.status = status
        // The framing is ours to set (the encoder leaves it: Listener): a length, else
        // chunks, which an HTTP/1.0 client cannot read, so its body ends with the connection.
        let chunked = contentLength == nil && (version.major > 1 || version.minor >= 1)
        if contentLength == nil && !chunked { keepAlive = false }
        var h = baseHeaders(extra, contentType: contentType, status: status)
        if let contentLength { h.replaceOrAdd(name: "Content-Length", value: String(contentLength)) }
        if chunked { h.replaceOrAdd(name: "Transfer-Encoding", value: "chunked") }
        lastWrite = emit([.head(head(status, h))])
    }

    /// Throws when the client has gone away (the producer should stop).
    func write(_ bytes: [UInt8]) throws {
        guard !isHead, !bytes.isEmpty else { return }
        guard channel.isActive else { throw CouchError(status: 499, error: "closed", reason: "the client closed the connection") }
        let f = emit([.body(.byteBuffer(ByteBuffer(bytes: bytes)))])
        lastWrite = f
        unflushedBytes += bytes.count
        if unflushedBytes >= ResponseWriter.maxUnflushed {
            unflushedBytes = 0
            try f.wait()
        }
    }

    /// Sends what was written so far and waits until it has left (heartbeats, rows of a
    /// continuous feed).
    func flush() throws {
        guard let f = lastWrite else { return }
        unflushedBytes = 0
        try f.wait()
    }

    func end() {
        let ok: Bool = lock.locked {
            guard started, !finished else { return false }
            finished = true
            return true
        }
        if ok { finish() }
    }

    private func finish() {
        onAnswered(status)
        let keepAlive = self.keepAlive
        let done = onFinished
        emit([.end(nil)]).whenComplete { _ in done(keepAlive) }
    }
}
