import CBLiteCore
import CBLiteReplicator
import CouchWire

/// CouchDB's `_replicator` database: each document describes a replication (the body of a
/// `POST /_replicate`), started when it is written, restarted when it changes, stopped when
/// it is deleted, and resumed when the listener starts again. A one-shot replication's end
/// is written back into its document (`_replication_state` "completed", or "failed" with
/// `_replication_state_reason`), with `_replication_state_time` and `_replication_stats`,
/// as CouchDB 3 does; `_scheduler/docs` shows every document's state.
///
/// Made in the served directory on first use (as CouchDB has it from the start); a
/// listener serving given databases only has none. Its documents are checked when written
/// (403 with the reason, as CouchDB's validation answers). Work runs on one thread of its
/// own, in the order changes arrive; it stops with the listener.
final class ReplicatorDatabase: @unchecked Sendable {
    static let name = DatabaseName.replicatorDatabase
    /// Members of a document that are not part of the replication it describes.
    private static let stateMembers: Set<String> = ["_replication_state", "_replication_state_time",
                                                    "_replication_state_reason", "_replication_stats", "owner"]

    private unowned let server: ServerContext
    private let monitor = Monitor()
    private var collection: Collection?
    private var hold: ServedDatabase?
    private var observer: ChangeObserverToken?
    private var pending: [String] = []
    private var thread: ServiceThread?
    private var stopped = false
    /// The specification each document's job was started from (to tell a change of the
    /// replication from the write-back of its state).
    private var specs: [String: JSONObject] = [:]

    init(server: ServerContext) { self.server = server }

    /// Opens (making it when missing) and watches the database; idempotent. 404 when the
    /// listener has no directory to keep it in.
    func open() throws {
        // A read-only listener serves the database as it is (if it exists) and runs none of it.
        if server.readOnly { return }
        if monitor.locked({ stopped || (collection != nil && hold?.database.isClosed == false) }) { return }
        forgetClosed()
        if !server.databases.exists(Self.name) {
            guard server.databases.directory != nil else { throw CouchError.databaseNotFound }
            do { try server.databases.create(Self.name) } catch let e as CouchError where e.status == 412 {}
        }
        let (c, held) = try server.databases.collectionAndHold(Self.name)
        try c.setValidator(name: "_replicator") { new, _ in ReplicatorDatabase.check(new) }
        let start: Bool = try monitor.locked {
            guard collection == nil, !stopped else { return false }
            collection = c
            hold = held
            if thread == nil { thread = try ServiceThread { [weak self] in self?.run() } }
            observer = try c.addChangeObserver { [weak self] events in self?.enqueue(events.map(\.docID)) }
            return true
        }
        // Resume: every document, as if just written.
        if start { enqueue(try c.allDocsQuery(QueryOptions()).allRows().compactMap(\.docID)) }
    }

    /// The database was deleted (or closed) under it: let go, so `open` starts over.
    private func forgetClosed() {
        let token: ChangeObserverToken? = monitor.locked {
            guard let held = hold, held.database.isClosed else { return nil }
            held.release()
            hold = nil
            collection = nil
            defer { observer = nil }
            return observer
        }
        token?.remove()
    }

    /// Opens the database at start when it exists (resuming its replications).
    func resume() {
        guard server.databases.exists(Self.name) else { return }
        do { try open() } catch { Loggers.listener.warning("_replicator: cannot resume its replications: \(error)") }
    }

    /// The listener stops: no more work (the jobs themselves are stopped with the others,
    /// and their end is not written back: they resume at the next start).
    func stop() {
        let (token, t): (ChangeObserverToken?, ServiceThread?) = monitor.locked {
            stopped = true
            monitor.broadcast()
            defer { observer = nil; thread = nil }
            return (observer, thread)
        }
        token?.remove()
        t?.join()
        monitor.locked { hold?.release(); hold = nil }
    }

    private func enqueue(_ ids: [String]) {
        monitor.locked {
            pending += ids.filter { !$0.hasPrefix("_design/") }
            monitor.broadcast()
        }
    }

    private func run() {
        while let docID = monitor.locked({ () -> String? in
            while pending.isEmpty && !stopped { monitor.wait() }
            return stopped ? nil : pending.removeFirst()
        }) {
            do { try reconcile(docID) } catch {
                Loggers.listener.warning("_replicator/\(docID): \(error)")
            }
        }
    }

    // MARK: documents and jobs

    /// A document's replication, its members without the state ones.
    private static func specification(_ doc: JSONObject) -> JSONObject {
        JSONObject(doc.members.filter { $0.key != "_id" && $0.key != "_rev" && !stateMembers.contains($0.key) })
    }

    /// The validator: a document that does not describe a replication is refused.
    static func check(_ json: String) -> String? {
        guard let doc = try? JSONParser.parseObject(json), doc["_deleted"]?.boolValue != true else { return nil }
        if doc["_id"]?.stringValue?.hasPrefix("_design/") == true { return nil }
        do { _ = try ReplicateShape.request(specification(doc)) } catch let e as CouchError {
            return e.reason
        } catch { return "\(error)" }
        return nil
    }

    /// Brings the document's job in line with the document.
    private func reconcile(_ docID: String) throws {
        guard let c = monitor.locked({ collection }) else { return }
        let doc = (try? c.get(docID: docID)).flatMap { bytes in bytes.withUnsafeBufferPointer { try? JSONParser.parseObject(bytes: $0) } }
        let running = server.replications.job(forDocument: docID)
        guard let doc else {            // deleted or purged: its replication stops
            if let running { _ = server.replications.cancel(running.id) }
            monitor.locked { specs[docID] = nil }
            return
        }
        let spec = Self.specification(doc)
        if let running {
            if monitor.locked({ specs[docID] }) == spec { return }      // only its state was written
            _ = server.replications.cancel(running.id)
        }
        let state = doc["_replication_state"]?.stringValue
        if (state == "completed" || state == "failed") && monitor.locked({ specs[docID] }).map({ $0 == spec }) ?? true {
            monitor.locked { specs[docID] = spec }
            return                      // done before (this run or an earlier one)
        }
        monitor.locked { specs[docID] = spec }
        let request: ReplicateShape.Request
        do { request = try ReplicateShape.request(spec) } catch let e as CouchError {
            return try writeState(docID, "failed", reason: e.reason, stats: nil)
        }
        let owner = doc["owner"]?.stringValue ?? Self.name
        let job: ServerReplications.Job
        do {
            job = try ReplicationPlanner(server: server).job(request, user: owner, docID: docID) { [weak self] status in
                if status.activity == .stopped { self?.finished(docID) }
            }
            _ = try server.replications.start(job)
        } catch {
            return try writeState(docID, "failed", reason: CouchError.from(error).reason, stats: nil)
        }
    }

    /// A document's one-shot job stopped: its end goes into the document.
    private func finished(_ docID: String) {
        guard !monitor.locked({ stopped }),
              let job = server.replications.job(forDocument: docID), job.replicator.status.activity == .stopped
        else { return }
        server.replications.remove(job)
        let status = job.replicator.status
        let stats = ServerReplicationTask.info(job)
        ServiceThread.detached { [weak self] in    // not on the replicator's own thread
            do {
                try self?.writeState(docID, status.errorMessage == nil ? "completed" : "failed",
                                     reason: status.errorMessage, stats: stats)
            } catch {
                Loggers.listener.warning("_replicator/\(docID): cannot record its state: \(error)")
            }
        }
    }

    private func writeState(_ docID: String, _ state: String, reason: String?, stats: JSONObject?) throws {
        guard let c = monitor.locked({ collection }), !monitor.locked({ stopped }) else { return }
        let current = try c.get(docID: docID)
        guard var doc = current.withUnsafeBufferPointer({ try? JSONParser.parseObject(bytes: $0) }),
              let rev = doc["_rev"]?.stringValue else { return }
        doc["_replication_state"] = .string(state)
        doc["_replication_state_time"] = .string(HTTPDate.iso8601(unixTimeMicrosNow() / 1_000_000))
        doc["_replication_state_reason"] = reason.map { .string($0) }
        doc["_replication_stats"] = stats.map { .object($0) }
        doc["_id"] = nil
        doc["_rev"] = nil
        _ = try c.put(docID: docID, json: JSONWriter.canonicalString(.object(doc)), parent: rev)
    }

    // MARK: _scheduler/docs

    /// Every replication document's state, in CouchDB's `_scheduler/docs` shape.
    func schedulerDocs() throws -> [JSONObject] {
        guard server.databases.exists(Self.name) else { return [] }
        try open()
        guard let c = monitor.locked({ collection }) else { return [] }
        let jobs = server.replications.all()
        var out: [JSONObject] = []
        for row in try c.allDocsQuery(QueryOptions()).allRows() {
            guard let docID = row.docID, !docID.hasPrefix("_design/"), let entry = try schedulerDoc(docID, c, jobs) else { continue }
            out.append(entry)
        }
        return out
    }

    /// One document's entry; nil when there is no such replication document.
    func schedulerDoc(_ docID: String) throws -> JSONObject? {
        guard server.databases.exists(Self.name) else { return nil }
        try open()
        guard let c = monitor.locked({ collection }) else { return nil }
        return try schedulerDoc(docID, c, server.replications.all())
    }

    private func schedulerDoc(_ docID: String, _ c: Collection, _ jobs: [ServerReplications.Job]) throws -> JSONObject? {
        guard let bytes = try? c.get(docID: docID),
              let doc = bytes.withUnsafeBufferPointer({ try? JSONParser.parseObject(bytes: $0) }) else { return nil }
        let job = jobs.first { $0.docID == docID }
        let request = try? ReplicateShape.request(Self.specification(doc))
        let planner = ReplicationPlanner(server: server)
        func show(_ e: ReplicateShape.Endpoint?) -> JSONValue { e.flatMap(planner.display).map { .string($0) } ?? .null }
        var o = JSONObject([("database", .string(Self.name)), ("doc_id", .string(docID)),
                            ("id", job.map { .string($0.id) } ?? .null),
                            ("source", show(request?.source)), ("target", show(request?.target))])
        if let job {
            let s = job.replicator.status
            o["state"] = .string(s.errorMessage != nil ? "crashing" : "running")
            o["info"] = s.errorMessage.map { .object(JSONObject([("error", .string($0))])) } ?? .null
            o["error_count"] = .int(s.errorMessage == nil ? 0 : 1)
            o["start_time"] = .string(HTTPDate.iso8601(job.startedOn))
            o["last_updated"] = .string(HTTPDate.iso8601(unixTimeMicrosNow() / 1_000_000))
        } else {
            let state = doc["_replication_state"]?.stringValue ?? "initializing"
            o["state"] = .string(state)
            o["error_count"] = .int(state == "failed" ? 1 : 0)
            if let reason = doc["_replication_state_reason"]?.stringValue {
                o["info"] = .object(JSONObject([("error", .string(reason))]))
            } else {
                o["info"] = doc["_replication_stats"] ?? .null
            }
            if let t = doc["_replication_state_time"] { o["last_updated"] = t }
        }
        return o
    }
}
