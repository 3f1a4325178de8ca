import CBLiteCore
import Logging
import NIOPosix

/// Replicates a local collection with a peer's database over CouchDB's replication
/// protocol: push, pull or both, one-shot or continuous. Each direction runs on its own
/// thread with its own connection; the status is their sum. Closing the database stops
/// its replicators first (they register as its services).
///
/// Thread-safe. Callbacks come from the replication threads, never while a lock of the
/// replicator is held; they may call `status` and `stop` (a stop from a callback
/// returns at once, and the replicator stops after the callback).
public final class Replicator: Service, @unchecked Sendable {
    public let collection: Collection
    public let configuration: ReplicatorConfiguration
    public var serviceName: String { "replicator" }
    public typealias StatusCallback = @Sendable (ReplicatorStatus) -> Void
    public typealias DocumentCallback = @Sendable ([DocumentReplication]) -> Void

    private let onStatus: StatusCallback?
    private let onDocuments: DocumentCallback?
    private let group: MultiThreadedEventLoopGroup
    private let monitor = Monitor()
    private var tasks: [ReplicationTask] = []
    private var taskStatus: [ReplicatorStatus] = []
    private var threads: [ServiceThread] = []
    private var running = 0
    private var stopRequested = false
    private var started = false
    private var registration: ServiceRegistration?
    private var lastDelivered: ReplicatorStatus?

    public init(collection: Collection, configuration: ReplicatorConfiguration,
                onStatus: StatusCallback? = nil, onDocuments: DocumentCallback? = nil) throws {
        self.collection = collection
        self.configuration = configuration
        self.onStatus = onStatus
        self.onDocuments = onDocuments
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let directions: [DocumentReplication.Direction] = switch configuration.direction {
        case .push: [.push]
        case .pull: [.pull]
        case .both: [.push, .pull]
        }
        do {
            for (i, d) in directions.enumerated() {
                let task = try ReplicationTask(replicator: self, index: i, direction: d, group: group)
                tasks.append(task)
                var s = ReplicatorStatus()
                s.documentsToRetry = Int64(task.failed.count)
                taskStatus.append(s)
            }
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
    }

    deinit {
        try? group.syncShutdownGracefully()
    }

    /// Starts replicating. Throws when the database is closed or a thread cannot start.
    public func start() throws {
        let reg = try collection.database.register(self)
        do {
            try monitor.locked {
                guard !started else { throw CBLError.badRequest("the replicator was already started") }
                started = true
                registration = reg
                for t in tasks {
                    running += 1
                    threads.append(try ServiceThread { [self] in
                        t.run()
                        taskEnded()
                    })
                }
            }
        } catch {
            collection.database.unregister(reg)
            stop()
            throw error
        }
    }

    /// Stops replicating and returns once every thread has ended (at once when called
    /// from a callback, which must not wait for its own thread). Idempotent.
    public func stop() {
        let (ts, reg): ([ServiceThread], ServiceRegistration?) = monitor.locked {
            stopRequested = true
            monitor.broadcast()
            defer { threads = []; registration = nil }
            return (threads, registration)
        }
        for t in tasks { t.interrupt() }
        for t in ts { t.join() }
        if let reg { collection.database.unregister(reg) }
        if ts.isEmpty && monitor.locked({ running == 0 }) { finishStatus() }
    }

    public var status: ReplicatorStatus { monitor.locked { combinedStatus() } }

    /// Waits until the replication has stopped (a one-shot one ends by itself), up to
    /// `timeoutMs` (nil: for ever). Returns whether it has.
    public func waitUntilStopped(timeoutMs: Int?) -> Bool {
        let deadline = timeoutMs.map { MonotonicTime.now().adding(milliseconds: $0) }
        return monitor.locked {
            while combinedStatus().activity != .stopped {
                if let deadline, MonotonicTime.now() >= deadline { return false }
                _ = monitor.wait(until: deadline)
            }
            return true
        }
    }

    /// Documents with local changes the push has not sent yet (by its checkpoint here),
    /// in sequence order; 400 when the replicator does not push.
    public func pendingDocumentIDs() throws -> [String] {
        guard let push = tasks.first(where: { $0.direction == .push }) else {
            throw CBLError.badRequest("the replicator does not push: no documents are pending")
        }
        return try push.pendingDocumentIDs()
    }

    /// Whether `docID` has a local change the push has not sent yet.
    public func isDocumentPending(_ docID: String) throws -> Bool {
        try pendingDocumentIDs().contains(docID)
    }

    /// The revisions that failed and wait to be tried again (by the next session or run),
    /// both directions; read from the checkpoint when the replicator is made.
    public var failedDocuments: [DocumentReplication] {
        tasks.flatMap { t in
            t.failed.entries.map { DocumentReplication(direction: t.direction, docID: $0.docID, revID: $0.revID, deleted: false, error: nil) }
        }
    }

    /// Forgets the failed revisions waiting for a retry (in the checkpoint too), before
    /// or after a run, or during one (a retry already under way still finishes).
    public func clearFailedDocuments() throws {
        for t in tasks { try t.clearFailed() }
    }

    /// The failed revisions as a JSON array of {"direction","id","rev"} (see cbl_replicator_failed_documents).
    public var failedDocumentsJSON: [UInt8] { Replicator.documentsJSON(failedDocuments) }

    /// The status as JSON (the C ABI's and Python's shape; see cbl_replicator_status).
    public var statusJSON: [UInt8] { JSONWriter.ordered(.object(status.json)) }

    /// Document events as a JSON array (see cbl_replicator_document_fn).
    public static func documentsJSON(_ docs: [DocumentReplication]) -> [UInt8] {
        JSONWriter.ordered(.array(docs.map { .object($0.json) }))
    }

    // MARK: for the tasks

    var isStopRequested: Bool { monitor.locked { stopRequested } }

    /// Waits up to `ms` or until stop is requested; returns whether stop was requested.
    func sleep(ms: Int) -> Bool {
        let deadline = MonotonicTime.now().adding(milliseconds: ms)
        return monitor.locked {
            while !stopRequested && MonotonicTime.now() < deadline { _ = monitor.wait(until: deadline) }
            return stopRequested
        }
    }

    func update(_ index: Int, _ change: (inout ReplicatorStatus) -> Void) {
        monitor.locked {
            change(&taskStatus[index])
            monitor.broadcast()
        }
        deliverStatus()
    }

    func report(_ documents: [DocumentReplication]) {
        for d in documents where d.error != nil {
            Loggers.replication.warning("\(d.direction) of \"\(d.docID)\" \(d.revID ?? ""): \(d.error!)")
        }
        guard !documents.isEmpty, let onDocuments else { return }
        let wanted = configuration.documentEvents ? documents : documents.filter { $0.error != nil }
        if !wanted.isEmpty { onDocuments(wanted) }
    }

    private func taskEnded() {
        let last: Bool = monitor.locked {
            running -= 1
            monitor.broadcast()
            return running == 0
        }
        if last { finishStatus() }
    }

    private func finishStatus() {
        monitor.locked {
            for i in taskStatus.indices { taskStatus[i].activity = .stopped }
            monitor.broadcast()
        }
        deliverStatus()
    }

    /// The tasks' statuses as one: stopped when every direction is; otherwise the
    /// busiest running one's activity; counts summed; the first error.
    private func combinedStatus() -> ReplicatorStatus {
        var s = ReplicatorStatus()
        let live = taskStatus.map(\.activity).filter { $0 != .stopped }
        s.activity = live.isEmpty ? .stopped : [.busy, .connecting, .offline, .idle].first(where: live.contains)!
        for t in taskStatus {
            s.completed += t.completed
            s.total += t.total
            s.documentsPushed += t.documentsPushed
            s.documentsPulled += t.documentsPulled
            s.documentFailures += t.documentFailures
            s.documentsToRetry += t.documentsToRetry
            if s.errorMessage == nil, let m = t.errorMessage { s.errorMessage = m; s.errorStatus = t.errorStatus }
        }
        return s
    }

    /// Calls the status callback with the current status when it changed (outside every
    /// lock: the callback may call back in, even `stop`).
    private func deliverStatus() {
        guard let onStatus else { return }
        let s: ReplicatorStatus? = monitor.locked {
            let s = combinedStatus()
            guard s != lastDelivered else { return nil }
            lastDelivered = s
            return s
        }
        if let s { onStatus(s) }
    }
}
