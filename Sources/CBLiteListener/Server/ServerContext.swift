import CBLiteCore
import NIOPosix

/// What every connection of one listener shares.
final class ServerContext: @unchecked Sendable {
    let configuration: ListenerConfiguration
    let limits: ListenerConfiguration.Limits
    let readOnly: Bool
    let authenticator: Authenticator
    let databases: DatabaseRegistry
    let views: ViewRegistry
    /// Database work runs here, never on the event loop (the engine blocks).
    let workers: WorkerPool
    /// Stable for this listener's life: the welcome's "uuid".
    let serverUUID: String
    let startTimeMicros = unixTimeMicrosNow()
    var router: Router!
    let activeRequests = ActiveRequests()
    /// `/_node/_local/_stats`' HTTP counters and request times.
    let statistics = ServerStatistics()
    /// `POST /_replicate`'s jobs; stopped with the listener.
    let replications: ServerReplications
    /// New document IDs and `/_uuids`, by the configured algorithm.
    let uuids: UUIDGenerator
    /// `/_node/_local/_config`.
    let config: ServerConfig
    /// CouchDB's `_replicator` database and its jobs.
    private(set) var replicatorDatabase: ReplicatorDatabase!
    /// CouchDB's `_users` database, whose users log in too.
    private(set) var usersDatabase: UsersDatabase!
    /// Where this listener answers, once bound: how its own replications reach it.
    var ownAddress: (port: Int, tls: Bool, certificateSHA256: String?) = (0, false, nil)

    init(configuration: ListenerConfiguration, workers: WorkerPool, serverUUID: String, views: ViewRegistry) {
        self.views = views
        self.configuration = configuration
        uuids = UUIDGenerator(algorithm: configuration.uuidAlgorithm, utcIDSuffix: configuration.utcIDSuffix)
        config = ServerConfig(start: configuration, uuids: uuids)
        limits = config.limits
        readOnly = configuration.readOnly
        authenticator = Authenticator(configuration: configuration, config: config)
        databases = DatabaseRegistry(directory: configuration.directory)
        databases.attachmentCompression = config.attachmentCompression
        config.attachmentsChanged = { [databases] in databases.attachmentCompression = $0 }
        replications = ServerReplications(authenticator: authenticator)
        self.workers = workers
        self.serverUUID = serverUUID
        replicatorDatabase = ReplicatorDatabase(server: self)
        usersDatabase = UsersDatabase(server: self)
        authenticator.users = usersDatabase
    }
}
