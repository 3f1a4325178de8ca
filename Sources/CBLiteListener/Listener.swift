import CBLiteCore
import CBLiteDiscovery
import CouchWire
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// An HTTP(S) server that serves databases with CouchDB's REST API, so that CouchDB's
/// replicator, PouchDB, other cblite peers and plain HTTP clients can sync with them.
///
///     let l = try Listener(configuration: #"{"directory": "/data", "port": 0}"#)
///     try l.start()          // l.port, l.url
///     ...
///     l.stop()
public final class Listener: @unchecked Sendable {
    public let configuration: ListenerConfiguration
    private let lock = Monitor()
    private var group: MultiThreadedEventLoopGroup?
    private var workers: WorkerPool?
    private var channel: Channel?
    private(set) var server: ServerContext?
    private var tlsContext: NIOSSLContext?
    private var pendingServes: [(String, Database?)] = []
    private let inFlight = InFlightRequests()
    private let connections = ConnectionRegistry()
    private let views = ViewRegistry()
    private var boundPort = 0
    private var advertiser: Advertiser?

    /// SHA-256 of the TLS certificate (DER), lowercase hex: what a client pins.
    public private(set) var tlsCertificateSHA256: String?

    /// Parses the configuration (400 for unknown keys or wrong types). Nothing is opened yet.
    public convenience init(configuration json: String) throws {
        try self.init(configuration: ListenerConfiguration(json: json))
    }

    public init(configuration: ListenerConfiguration) throws {
        self.configuration = configuration
        if case .files(let cert, let key) = configuration.tls {
            (tlsContext, tlsCertificateSHA256) = try TLSIdentity.context(certificatePEMFile: cert, keyPEMFile: key)
        } else if case .anonymous(let dir) = configuration.tls {
            guard let where_ = dir ?? configuration.directory else {
                throw CBLError(.badRequest, "listener configuration: an anonymous TLS identity needs a directory to keep it in")
            }
            (tlsContext, tlsCertificateSHA256) = try TLSIdentity.anonymousContext(directory: where_)
        }
    }

    /// The bound port (after start), e.g. the one the system chose for port 0.
    public var port: Int { lock.locked { boundPort } }

    /// `http://host:port/` or `https://...`.
    public var url: String {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "\(tlsContext == nil ? "http" : "https")://\(host):\(port)/"
    }

    public var isRunning: Bool { lock.locked { channel != nil } }

    /// The DNS-SD advertisement while running with `"advertise"`: its name (another one
    /// after a conflict on the network) and state.
    public var advertisement: Advertiser? { lock.locked { advertiser } }

    /// Serves `database` as `name` (in addition to, or in place of, the directory's
    /// database of that name); nil stops serving a given handle. May be called before or
    /// after start. The handle stays the caller's: the listener never closes it.
    /// Throws 400 for a name that is not a database name.
    public func serve(name: String, database: Database?) throws {
        try lock.locked {
            if let server { try server.databases.serve(name: name, database: database) } else {
                try DatabaseName.validate(name)
                pendingServes.append((name, database))
            }
        }
        // The advertisement names the databases served: it follows.
        try advertisement?.update(txt: advertisedTXT().build())
    }

    /// A database created or deleted over HTTP: the advertisement follows too. A failure
    /// to update it is not the request's: the record is set again at the next change.
    private func databaseNamesChanged() {
        guard let advertisement else { return }
        do { try advertisement.update(txt: advertisedTXT().build()) } catch {
            Loggers.listener.warning("advertisement not updated: \(error)")
        }
    }

    /// Serves `view` (registered through the API with its map/reduce functions) as
    /// `/{database}/_design/{designDoc}/_view/{name}`, where `database` is the URL name
    /// of the view's collection; nil stops serving it. May be called before or after start.
    public func serveView(_ view: View?, database: String, designDoc: String, name: String) {
        views.set(view, database: database, designDoc: designDoc, name: name)
    }

    /// Binds and starts serving, and advertises it when configured to. Throws when the
    /// address is in use or invalid; 503 when it cannot be advertised (no Avahi), and then
    /// it is not left running.
    public func start() throws {
        try bind()
        guard let settings = configuration.advertise else { return }
        do {
            let a = try Advertiser(name: settings.name, type: settings.type, port: port, txt: advertisedTXT().build())
            lock.locked { advertiser = a }
        } catch {
            stop(timeoutMs: 0)
            throw error
        }
    }

    /// What the advertisement's TXT record says: the databases served now (not the
    /// system's `_users`, `_replicator`), TLS and the certificate to pin.
    private func advertisedTXT() -> ServiceTXT {
        let names = lock.locked { server?.databases.allNames() ?? [] }.filter { !$0.hasPrefix("_") }
        return ServiceTXT(databases: names, tls: tlsContext != nil, sha256: tlsCertificateSHA256)
    }

    private func bind() throws {
        try lock.locked {
            guard channel == nil else { throw CBLError(.badRequest, "the listener is already running") }
            let limits = configuration.limits
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            // Up to one worker per allowed connection: a longpoll or continuous feed holds
            // its worker while it waits, and must not starve the other connections.
            let workers = WorkerPool(maxThreads: max(4, min(1024, limits.maxConnections)))
            let server = ServerContext(configuration: configuration, workers: workers, serverUUID: Listener.randomHex(16), views: views)
            server.router = Router(server: server, inFlight: inFlight)
            for (name, db) in pendingServes { try server.databases.serve(name: name, database: db) }
            server.databases.onNamesChanged = { [weak self] in self?.databaseNamesChanged() }
            pendingServes = []
            let tls = tlsContext
            let connections = self.connections
            let bootstrap = ServerBootstrap(group: group)
                .serverChannelOption(ChannelOptions.backlog, value: 256)
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
                // A client that half-closes after its request still gets the answer.
                .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                .childChannelInitializer { channel in
                    Listener.initialize(channel: channel, server: server, tls: tls, connections: connections)
                }
            do {
                let ch = try bootstrap.bind(host: configuration.host, port: configuration.port).wait()
                boundPort = ch.localAddress?.port ?? configuration.port
                server.ownAddress = (boundPort, tls != nil, tlsCertificateSHA256)
                server.replicatorDatabase.resume()     // its replications, once the port is known
                Loggers.listener.info("listening on \(configuration.host):\(boundPort)\(tls == nil ? "" : " (TLS)")")
                channel = ch
                self.group = group
                self.workers = workers
                self.server = server
            } catch {
                workers.shutdown()
                try? group.syncShutdownGracefully()
                throw CBLError(.badRequest, "cannot listen on \(configuration.host):\(configuration.port): \(error)")
            }
        }
    }

    /// Stops accepting, waits up to `timeoutMs` for requests in flight, closes every
    /// connection and the databases it opened, and releases the port. Idempotent.
    public func stop(timeoutMs: Int = 5000) {
        // Withdrawn first: peers stop finding a listener that no longer answers.
        lock.locked { defer { advertiser = nil }; return advertiser }?.stop()
        let (ch, group, workers, server): (Channel?, MultiThreadedEventLoopGroup?, WorkerPool?, ServerContext?) = lock.locked {
            defer { channel = nil; self.group = nil; self.workers = nil; self.server = nil }
            return (channel, self.group, self.workers, self.server)
        }
        guard let ch, let group, let workers, let server else { return }
        try? ch.close().wait()
        // Feeds waiting for changes are not work to drain: a client whose feed ends early
        // asks again (and a client that hung up is not seen while the feed waits).
        server.activeRequests.cancelFeeds()
        server.replicatorDatabase.stop()
        server.usersDatabase.stop()
        server.replications.stopAll()        // a one-shot one's request then answers
        _ = inFlight.waitIdle(timeoutMs: timeoutMs)
        connections.closeAll()
        server.activeRequests.abortAll()      // workers still waiting for a body or a change
        server.databases.stop()               // wakes feeds waiting on their databases
        _ = inFlight.waitIdle(timeoutMs: 1000)
        workers.shutdown()
        try? group.syncShutdownGracefully()
        Loggers.listener.info("stopped listening on \(configuration.host):\(port)")
        lock.locked { boundPort = 0 }
    }

    deinit { stop(timeoutMs: 0) }

    private static func initialize(channel: Channel, server: ServerContext, tls: NIOSSLContext?,
                                   connections: ConnectionRegistry) -> EventLoopFuture<Void> {
        guard connections.admit(channel, max: server.limits.maxConnections) else {
            // Over the limit with every connection busy: a short 503 and goodbye, without reading the request.
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(RejectConnectionHandler(plainText: tls == nil))
            }
        }
        channel.closeFuture.whenComplete { _ in connections.remove(channel) }
        let loopback = Listener.isLoopback(channel.remoteAddress)
        let activity = RawActivityHandler()
        let handler = ConnectionHandler(server: server, remoteIsLoopback: loopback, connections: connections, raw: activity)
        activity.connection = handler
        var decoderLimits = NIOHTTPDecoderLimitConfiguration()
        decoderLimits.maxHeaderFieldCount = server.limits.maxHeaderCount
        return channel.eventLoop.makeCompletedFuture {
            let sync = channel.pipeline.syncOperations
            if let tls { try sync.addHandler(NIOSSLServerHandler(context: tls)) }
            try sync.addHandler(activity)
            // The responses frame themselves (ResponseWriter): NIO's framing would drop a
            // 304's `Content-Length: 0`, which CouchDB sends.
            var encoder = HTTPResponseEncoder.Configuration()
            encoder.automaticallySetFramingHeaders = false
            try sync.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: false,
                                                 withEncoderConfiguration: encoder, withDecoderLimitConfiguration: decoderLimits)
            try sync.addHandler(ProtocolErrorHandler())
            try sync.addHandler(IdleStateHandler(allTimeout: .milliseconds(Int64(server.limits.idleTimeoutMs))))
            try sync.addHandler(handler)
        }
    }

    static func isLoopback(_ address: SocketAddress?) -> Bool {
        guard let ip = address?.ipAddress else { return address?.protocol == nil }
        return ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
    }

    static func randomHex(_ bytes: Int) -> String {
        var g = SystemRandomNumberGenerator()
        return Hex.encode((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &g) })
    }
}
