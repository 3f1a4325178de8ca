import CBLiteCore
import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// How a replicator trusts a TLS peer: the system's roots by default, a CA file, or a
/// pinned certificate (the SHA-256 of its DER, as `cbl_server_tls_fingerprint` gives
/// for a listener's anonymous identity).
public struct TLSOptions: Sendable {
    public var pinnedSHA256: [UInt8]?
    public var caFile: String?
    public init(pinnedSHA256: [UInt8]? = nil, caFile: String? = nil) {
        self.pinnedSHA256 = pinnedSHA256
        self.caFile = caFile
    }
}

/// A request as the replicator sends it.
struct HTTPRequest {
    enum Body {
        case none
        case bytes([UInt8])
        /// Streamed with a known length: `write` hands the content to its argument piecewise.
        case stream(length: UInt64, write: (([UInt8]) throws -> Void) throws -> Void)
    }

    var method: HTTPMethod
    /// Path and query, already percent-encoded.
    var target: String
    var headers: [(String, String)] = []
    var body: Body = .none
    /// How long the peer may take to answer (and between two parts of a streamed answer).
    var timeoutMs: Int
}

/// A response whose body is read as it arrives. Read it to the end (or `discard` it)
/// before the next request on the same client.
final class HTTPResponse {
    let status: Int
    let headers: HTTPHeaders
    private let inbox: ResponseInbox
    private let timeoutMs: Int
    private(set) var isComplete = false
    private let keepAlive: Bool
    /// Closes the connection (a body given up, or a peer that asked to close after it).
    private let closeConnection: () -> Void

    fileprivate init(head: HTTPResponseHead, inbox: ResponseInbox, timeoutMs: Int, closeConnection: @escaping () -> Void) {
        status = Int(head.status.code)
        headers = head.headers
        keepAlive = head.isKeepAlive
        self.inbox = inbox
        self.timeoutMs = timeoutMs
        self.closeConnection = closeConnection
    }

    /// The next piece of the body; nil at its end.
    func next() throws -> [UInt8]? {
        guard !isComplete else { return nil }
        while true {
            switch try inbox.take(deadline: MonotonicTime.now().adding(milliseconds: timeoutMs)) {
            case .body(let b): if !b.isEmpty { return b }
            case .end:
                isComplete = true
                if !keepAlive { closeConnection() }
                return nil
            case .head: throw ReplicationError.protocolViolation("a second response head")
            }
        }
    }

    /// The whole body; a body longer than `limit` is an error (a peer cannot make us hold
    /// more than we asked for).
    func readAll(limit: Int = 256 << 20) throws -> [UInt8] {
        var out: [UInt8] = []
        while let b = try next() {
            out += b
            if out.count > limit { throw ReplicationError.protocolViolation("a response larger than \(limit) bytes") }
        }
        return out
    }

    /// Gives the response up: the connection is closed unless the body had ended.
    func discard() { if !isComplete { closeConnection() } }

    func header(_ name: String) -> String? { headers.first(name: name) }
}

/// One keep-alive HTTP/1.1 connection to a peer, reconnected when it drops. Calls are
/// blocking and come from one thread (a replication task's); `shutdown` may come from
/// any thread and interrupts a call waiting on the peer.
final class HTTPClient: @unchecked Sendable {
    private let url: RemoteURL
    private let group: any EventLoopGroup
    private let sslContext: NIOSSLContext?
    private let pinnedSHA256: [UInt8]?
    private let connectTimeoutMs: Int
    private let state = LockedValue<(channel: (any Channel)?, inbox: ResponseInbox?, shut: Bool)>((nil, nil, false))

    init(url: RemoteURL, tls: TLSOptions, group: any EventLoopGroup, connectTimeoutMs: Int = 15_000) throws {
        self.url = url
        self.group = group
        self.connectTimeoutMs = connectTimeoutMs
        pinnedSHA256 = tls.pinnedSHA256
        if url.tls {
            var config = TLSConfiguration.makeClientConfiguration()
            if let ca = tls.caFile {
                guard access(ca, R_OK) == 0 else { throw CBLError.badRequest("CA file \"\(ca)\" does not exist or cannot be read") }
                config.trustRoots = .file(ca)
            }
            // A pinned certificate is checked by its digest alone (see connect): the
            // listener's anonymous identity is self-signed and names no host.
            if tls.pinnedSHA256 != nil { config.certificateVerification = .noHostnameVerification }
            do { sslContext = try NIOSSLContext(configuration: config) } catch {
                throw CBLError.badRequest("cannot set up TLS: \(error)")
            }
        } else {
            sslContext = nil
        }
    }

    /// Sends `request` and returns once the response's head has arrived. A request on a
    /// kept-alive connection the peer had closed meanwhile is sent again once, on a new one.
    func send(_ request: HTTPRequest) throws -> HTTPResponse {
        var attempt = 0
        while true {
            attempt += 1
            let (channel, inbox, reused) = try connection()
            do {
                do { try write(request, on: channel) } catch let e as ReplicationError where e.httpStatus == 0 {
                    // The channel closed under the write: its own reason (a TLS handshake
                    // refused) is in the inbox.
                    if let cause = inbox.failureError { throw ResponseInbox.classify(cause) }
                    throw e
                }
                let deadline = MonotonicTime.now().adding(milliseconds: request.timeoutMs)
                var answer: HTTPResponseHead? = nil
                while answer == nil {
                    switch try inbox.take(deadline: deadline) {
                    // An interim 1xx answer (never asked for, but allowed) precedes the real one.
                    case .head(let h): if h.status.code >= 200 { answer = h }
                    case .end: continue
                    case .body: throw ReplicationError.protocolViolation("a response body without a head")
                    }
                }
                let head = answer!
                return HTTPResponse(head: head, inbox: inbox, timeoutMs: request.timeoutMs) { [weak self] in
                    self?.dropConnection()
                }
            } catch let e as ReplicationError where e.httpStatus == 0 && e.isTransient {
                dropConnection()
                if state.withLock({ $0.shut }) { throw ReplicationError.network("the replicator stopped") }
                if reused && attempt == 1 { continue }
                throw e
            } catch {
                dropConnection()
                throw error
            }
        }
    }

    /// Closes the connection and refuses further requests; wakes a call waiting on the peer.
    func shutdown() {
        let ch: (any Channel)? = state.withLock { s in
            s.shut = true
            defer { s.channel = nil; s.inbox = nil }
            return s.channel
        }
        ch?.close(promise: nil)
    }

    private func dropConnection() {
        let ch: (any Channel)? = state.withLock { s in
            defer { s.channel = nil; s.inbox = nil }
            return s.channel
        }
        ch?.close(promise: nil)
    }

    private func connection() throws -> (any Channel, ResponseInbox, Bool) {
        if let (ch, inbox) = try state.withLock({ s -> (any Channel, ResponseInbox)? in
            if s.shut { throw ReplicationError.network("the replicator stopped") }
            guard let ch = s.channel, let inbox = s.inbox, ch.isActive, !inbox.isClosed else { return nil }
            return (ch, inbox)
        }) {
            inbox.reset()
            return (ch, inbox, true)
        }
        dropConnection()
        let inbox = ResponseInbox()
        let ssl = sslContext
        let pinned = pinnedSHA256
        let host = url.host
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(.milliseconds(Int64(connectTimeoutMs)))
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let ssl {
                        // SNI takes a host name, never an address literal.
                        let sni = (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
                        let handler: NIOSSLClientHandler
                        if let pinned {
                            handler = try NIOSSLClientHandler(context: ssl, serverHostname: sni) { certs, promise in
                                let der = (try? certs.first?.toDERBytes()) ?? nil
                                promise.succeed(der.map { SHA256.hash($0) == pinned } == true ? .certificateVerified : .failed)
                            }
                        } else {
                            handler = try NIOSSLClientHandler(context: ssl, serverHostname: sni)
                        }
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(ResponseInboxHandler(inbox: inbox))
                }
            }
        let channel: any Channel
        do {
            channel = try bootstrap.connect(host: url.host, port: url.port).wait()
        } catch let e as NIOConnectionError {
            // The system's reason ("Connection refused"), not NIO's list of attempts.
            let reasons = e.connectionErrors.map { "\($0.error)" } + (e.dnsAError.map { ["\($0)"] } ?? []) + (e.dnsAAAAError.map { ["\($0)"] } ?? [])
            throw ReplicationError.network("cannot connect to \(url.hostHeader): \(reasons.first ?? "\(e)")")
        } catch {
            throw ReplicationError.network("cannot connect to \(url.hostHeader): \(error)")
        }
        let shut: Bool = state.withLock { s in
            if !s.shut { s.channel = channel; s.inbox = inbox }
            return s.shut
        }
        if shut {
            channel.close(promise: nil)
            throw ReplicationError.network("the replicator stopped")
        }
        return (channel, inbox, false)
    }

    private func write(_ request: HTTPRequest, on channel: any Channel) throws {
        var head = HTTPRequestHead(version: .http1_1, method: request.method, uri: request.target)
        head.headers.add(name: "Host", value: url.hostHeader)
        for (n, v) in request.headers { head.headers.add(name: n, value: v) }
        func wait(_ f: EventLoopFuture<Void>) throws {
            do { try f.wait() } catch { throw ReplicationError.network("cannot send to the peer: \(error)") }
        }
        switch request.body {
        case .none:
            if request.method == .POST || request.method == .PUT { head.headers.add(name: "Content-Length", value: "0") }
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
        case .bytes(let b):
            head.headers.add(name: "Content-Length", value: String(b.count))
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            if !b.isEmpty { channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: b))), promise: nil) }
        case .stream(let length, let produce):
            head.headers.add(name: "Content-Length", value: String(length))
            try wait(channel.writeAndFlush(HTTPClientRequestPart.head(head)))
            var sent: UInt64 = 0
            try produce { chunk in
                sent += UInt64(chunk.count)
                // Waiting for each write bounds what is buffered to one chunk.
                try wait(channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: chunk)))))
            }
            guard sent == length else {
                channel.close(promise: nil)
                throw ReplicationError.local(CBLError.internalError("a streamed body had \(sent) bytes, not the \(length) announced"))
            }
        }
        try wait(channel.writeAndFlush(HTTPClientRequestPart.end(nil)))
    }
}
