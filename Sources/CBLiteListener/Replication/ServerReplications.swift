import CBLiteCore
import CBLiteReplicator
import CouchWire

/// The replications the listener runs for `POST /_replicate` (CouchDB's server-side
/// replication, which the 1.x listener had too): one-shot ones while their request waits
/// for them, continuous ones until cancelled, until their database closes (a replicator
/// is one of its database's services) or until the listener stops. Each runs cblite's own
/// replicator between one served database and a peer — or this listener itself, for two
/// served databases. Thread-safe.
final class ServerReplications: @unchecked Sendable {
    final class Job: @unchecked Sendable {
        /// CouchDB's form: a digest of what is replicated, "+continuous", "+create_target".
        let id: String
        let replicator: Replicator
        /// Source and target as `_active_tasks` shows them: names or URLs without credentials.
        let source: String
        let target: String
        let user: String?
        let continuous: Bool
        let startedOn = unixTimeMicrosNow() / 1_000_000
        /// Keeps the local database served while the job runs.
        let hold: ServedDatabase
        /// The token a job between two served databases uses to reach this listener.
        let token: String?
        /// The `_replicator` document the job runs for (nil: a `POST /_replicate` job).
        let docID: String?

        init(id: String, replicator: Replicator, source: String, target: String, user: String?, continuous: Bool,
             hold: ServedDatabase, token: String?, docID: String? = nil) {
            self.id = id
            self.replicator = replicator
            self.source = source
            self.target = target
            self.user = user
            self.continuous = continuous
            self.hold = hold
            self.token = token
            self.docID = docID
        }
    }

    private let lock = Monitor()
    private var jobs: [String: Job] = [:]
    private var stopped = false
    private let authenticator: Authenticator

    init(authenticator: Authenticator) { self.authenticator = authenticator }

    /// Starts `job`, unless one of the same ID runs already: that one is returned (CouchDB
    /// answers a repeated continuous request with the running job).
    func start(_ job: Job) throws -> (job: Job, started: Bool) {
        let running: Job? = try lock.locked {
            guard !stopped else { throw CouchError(status: 503, error: "service_unavailable", reason: "The listener is stopping.") }
            if let existing = jobs[job.id], existing.replicator.status.activity != .stopped { return existing }
            jobs[job.id] = job
            return nil
        }
        if let running { return (running, false) }
        do {
            try job.replicator.start()
        } catch {
            remove(job)
            throw error
        }
        return (job, true)
    }

    /// Forgets a job (its replicator stopped or is stopping) and ends its token.
    func remove(_ job: Job) {
        lock.locked { if jobs[job.id] === job { jobs[job.id] = nil } }
        if let token = job.token { authenticator.revoke(token) }
    }

    func job(_ id: String) -> Job? { lock.locked { jobs[id] } }

    /// The job a `_replicator` document runs, if any.
    func job(forDocument docID: String) -> Job? { lock.locked { jobs.values.first { $0.docID == docID } } }

    /// Every job, by ID (continuous ones that stopped on an error stay until cancelled,
    /// so `_scheduler/jobs` shows why).
    func all() -> [Job] { lock.locked { jobs.values.sorted { $0.id < $1.id } } }

    /// Stops one job and forgets it; false when there is none of that ID.
    func cancel(_ id: String) -> Bool {
        guard let job = lock.locked({ jobs.removeValue(forKey: id) }) else { return false }
        job.replicator.stop()
        if let token = job.token { authenticator.revoke(token) }
        return true
    }

    /// The listener stops: every job stops (a waiting one-shot request then answers).
    func stopAll() {
        let all: [Job] = lock.locked {
            stopped = true
            defer { jobs = [:] }
            return Array(jobs.values)
        }
        for job in all { job.replicator.stop() }
        for job in all {
            _ = job.replicator.waitUntilStopped(timeoutMs: 2000)
            if let token = job.token { authenticator.revoke(token) }
        }
    }
}
