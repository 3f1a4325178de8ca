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

    init(configuration: ListenerConfiguration, workers: WorkerPool, serverUUID: String, views: ViewRegistry) {
        self.views = views
        self.configuration = configuration
        limits = configuration.limits
        readOnly = configuration.readOnly
        authenticator = Authenticator(users: configuration.users, allowRemoteWithoutAuth: configuration.allowRemoteWithoutAuth)
        databases = DatabaseRegistry(directory: configuration.directory)
        self.workers = workers
        self.serverUUID = serverUUID
    }
}
