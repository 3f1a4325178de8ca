import CBLiteCore
import CouchWire
import NIOCore

/// One direction of a replication on its own thread: sessions (connect, read the
/// checkpoints, move batches) retried with exponential back-off while failures are
/// transient. A one-shot replication gives up after `maxRetries`; a continuous one goes
/// offline and keeps trying until it is stopped.
final class ReplicationTask: @unchecked Sendable {
    let direction: DocumentReplication.Direction
    let index: Int
    unowned let replicator: Replicator
    let remote: RemoteDatabase
    private let client: HTTPClient
    let config: ReplicatorConfiguration
    var local: Collection { replicator.collection }
    let replicationID: String
    /// What failed in earlier batches and sessions, retried at the start of each session.
    let failed: FailedRevisions

    /// Thrown inside a session when the replicator is stopping.
    struct Stopped: Error {}

    init(replicator: Replicator, index: Int, direction: DocumentReplication.Direction, group: any EventLoopGroup) throws {
        self.replicator = replicator
        self.index = index
        self.direction = direction
        config = replicator.configuration
        client = try HTTPClient(url: config.remote, tls: config.tls, group: group, connectTimeoutMs: min(config.timeoutMs, 30_000))
        remote = RemoteDatabase(url: config.remote, client: client, auth: config.authentication, extraHeaders: config.headers,
                                timeoutMs: config.timeoutMs)
        replicationID = try ReplicationIdentity.id(local: replicator.collection, config: config, direction: direction)
        failed = FailedRevisions(try ReplicationCheckpointer.failedRevisions(local: replicator.collection, replicationID: replicationID))
    }

    func makeCheckpointer() -> ReplicationCheckpointer {
        ReplicationCheckpointer(replicationID: replicationID, local: local, remote: remote, localIsSource: direction == .push, failed: failed)
    }

    /// Tries the revisions that failed before again, grouped by document in batches, through
    /// `move` (the session's own path, whose `record` keeps those that fail again). Returns
    /// whether there were any. A session that fails meanwhile puts them all back.
    func retryFailed(_ move: ([(docID: String, revs: [String])]) throws -> Void) throws -> Bool {
        let taken = failed.takeAll()
        guard !taken.isEmpty else { return false }
        Loggers.replication.info("\(direction) \(config.remote.redacted): retrying \(taken.count) revision(s) that failed before")
        do {
            let docs = FailedRevisions.byDocument(taken)
            for start in stride(from: 0, to: docs.count, by: config.batchSize) {
                try checkStopped()
                try move(Array(docs[start..<min(docs.count, start + config.batchSize)]))
            }
        } catch {
            failed.restore(taken)
            throw error
        }
        let waiting = Int64(failed.count)
        status { $0.documentsToRetry = waiting }
        return true
    }

    /// Forgets the failed revisions, here and in the local checkpoint.
    func clearFailed() throws {
        failed.clear()
        status { $0.documentsToRetry = 0 }
        try ReplicationCheckpointer.storeFailedRevisions([], local: local, replicationID: replicationID)
    }

    /// Wakes the thread from a wait on the peer (the connection closes) so it sees the stop.
    func interrupt() { client.shutdown() }

    /// Consecutive failed sessions; a batch that goes through resets it.
    private var failures = 0

    func run() {
        while !replicator.isStopRequested {
            do {
                status { $0.activity = .connecting }
                switch direction {
                case .pull: try Puller(task: self).run()
                case .push: try Pusher(task: self).run()
                }
                status { $0.errorMessage = nil; $0.errorStatus = 0 }
                Loggers.replication.info("\(direction) \(config.remote.redacted): done (\(stats.docsWritten) document(s) written, \(stats.failures) failed)")
                return                                          // a one-shot run that finished
            } catch is Stopped {
                return
            } catch {
                if replicator.isStopRequested { return }
                let e: ReplicationError
                switch error {
                case let r as ReplicationError: e = r
                // The peer's answer did not parse (JSON, multipart): not CouchDB's protocol.
                case let c as CouchError: e = .protocolViolation(c.reason)
                case let m as MultipartError: e = .protocolViolation("\(m)")
                default: e = .local(error)
                }
                Loggers.replication.warning("\(direction) \(config.remote.redacted): \(e)\(e.isTransient ? " (will retry)" : "")")
                status { $0.errorMessage = e.message; $0.errorStatus = e.httpStatus }
                guard e.isTransient, config.continuous || failures < config.maxRetries else { return }
                failures += 1
                status { $0.activity = .offline }
                // Exponential back-off with jitter, capped; a continuous replication keeps trying.
                let base = min(config.retryMaxMs, config.retryInitialMs << min(failures - 1, 20))
                if replicator.sleep(ms: base / 2 + Int.random(in: 0...max(1, base / 2))) { return }
            }
        }
    }

    /// Called by a session after a batch went through: the failure count starts again.
    func recovered() {
        failures = 0
        status { $0.errorMessage = nil; $0.errorStatus = 0 }
    }

    func status(_ change: (inout ReplicatorStatus) -> Void) { replicator.update(index, change) }

    /// Counts a batch's documents (checkpoint history and status) and reports them.
    func record(_ events: [DocumentReplication]) {
        let failed = Int64(events.filter { $0.error != nil }.count)
        let written = Int64(events.count) - failed
        stats.docsWritten += written
        stats.failures += failed
        self.failed.record(events)
        let pushing = direction == .push, waiting = Int64(self.failed.count)
        status {
            if pushing { $0.documentsPushed += written } else { $0.documentsPulled += written }
            $0.documentFailures += failed
            $0.documentsToRetry = waiting
        }
        replicator.report(events)
    }

    func checkStopped() throws { if replicator.isStopRequested { throw Stopped() } }

    /// The checkpoint's history counters for this session.
    var stats = (missingChecked: Int64(0), missingFound: Int64(0), docsRead: Int64(0), docsWritten: Int64(0), failures: Int64(0))

    var statsJSON: JSONObject {
        JSONObject([
            ("missing_checked", .int(stats.missingChecked)), ("missing_found", .int(stats.missingFound)),
            ("docs_read", .int(stats.docsRead)), ("docs_written", .int(stats.docsWritten)),
            ("doc_write_failures", .int(stats.failures)),
        ])
    }

    func pendingDocumentIDs() throws -> [String] {
        let since = try makeCheckpointer().localSequence()?.intValue ?? 0
        return try local.changes(since: since, options: Pusher.changesOptions(config, limit: -1)).map(\.docID)
    }
}
