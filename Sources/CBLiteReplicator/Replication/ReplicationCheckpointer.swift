import CBLiteCore
import CouchWire

/// CouchDB's replication log: `_local/<replication ID>` on both peers, with the session
/// that wrote it, the last source sequence fully written, and a history of sessions.
/// A run resumes from the source's `source_last_seq` when both copies agree on the
/// session; otherwise from the newest session both histories share; otherwise from
/// the start (CouchDB's rule: a copy lost on one side must not skip changes).
/// The local copy also keeps the revisions that failed (FailedRevisions), written with
/// the sequence they were passed at.
final class ReplicationCheckpointer {
    let replicationID: String
    let sessionID: String
    private let local: Collection
    private let remote: RemoteDatabase
    /// Push: this database is the source; pull: the peer is.
    private let localIsSource: Bool
    private let failed: FailedRevisions
    private let startTime = unixTimeNow()
    private var localRev: String?
    private var remoteRev: String?
    private var history: [JSONValue] = []
    private(set) var startSeq: JSONValue = .int(0)
    private var savedSeq: JSONValue?
    private var savedFailed: [FailedRevisions.Entry] = []

    init(replicationID: String, local: Collection, remote: RemoteDatabase, localIsSource: Bool, failed: FailedRevisions) {
        self.replicationID = replicationID
        self.local = local
        self.remote = remote
        self.localIsSource = localIsSource
        self.failed = failed
        var g = SystemRandomNumberGenerator()
        sessionID = Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &g) })
    }

    /// Reads both copies and returns the sequence to start from (nil: the beginning).
    func read() throws -> JSONValue? {
        let localLog = try readLocal()
        savedFailed = FailedRevisions.parse(localLog?[FailedRevisions.checkpointField])
        let remoteLog = try remote.getLocal(replicationID)
        remoteRev = remoteLog?["_rev"]?.stringValue
        let (source, target) = localIsSource ? (localLog, remoteLog) : (remoteLog, localLog)
        history = source?["history"]?.arrayValue ?? []
        let start = ReplicationCheckpointer.startingSequence(source: source, target: target)
        Loggers.replication.info("replication \(replicationID): \(start.map { "resuming after sequence \(JSONWriter.canonicalString($0))" } ?? "starting from the beginning (no checkpoint both peers agree on)")")
        startSeq = start ?? .int(0)
        savedSeq = start
        return start
    }

    /// The local copy's sequence alone (for "which documents are pending" without the peer).
    func localSequence() throws -> JSONValue? {
        try readLocal()?["source_last_seq"]
    }

    /// The failed revisions the local copy keeps (read when a replicator is made).
    static func failedRevisions(local: Collection, replicationID: String) throws -> [FailedRevisions.Entry] {
        do {
            let bytes = try local.getLocal(id: replicationID)
            return FailedRevisions.parse(try bytes.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }[FailedRevisions.checkpointField])
        } catch let e as CBLError where e.status == .notFound {
            return []
        }
    }

    /// Writes `entries` as the local copy's failed revisions (the user cleared them),
    /// whatever a running session wrote meanwhile; nothing when there is no checkpoint.
    static func storeFailedRevisions(_ entries: [FailedRevisions.Entry], local: Collection, replicationID: String) throws {
        while true {
            let bytes: [UInt8]
            do { bytes = try local.getLocal(id: replicationID) } catch let e as CBLError where e.status == .notFound { return }
            var doc = try bytes.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
            let rev = doc["_rev"]?.stringValue
            doc["_id"] = nil
            doc["_rev"] = nil
            doc[FailedRevisions.checkpointField] = entries.isEmpty ? nil : FailedRevisions.json(entries)
            do {
                _ = try local.putLocal(id: replicationID, json: JSONWriter.canonicalString(.object(doc)), parent: rev)
                return
            } catch let e as CBLError where e.status == .conflict {
                continue                                    // a session saved meanwhile: again on its copy
            }
        }
    }

    static func startingSequence(source: JSONObject?, target: JSONObject?) -> JSONValue? {
        guard let source, let target else { return nil }
        if let s = source["session_id"]?.stringValue, s == target["session_id"]?.stringValue {
            return source["source_last_seq"]
        }
        let targetSessions = Set((target["history"]?.arrayValue ?? []).compactMap { $0.objectValue?["session_id"]?.stringValue })
        for entry in source["history"]?.arrayValue ?? [] {
            guard let e = entry.objectValue, let s = e["session_id"]?.stringValue, targetSessions.contains(s) else { continue }
            return e["recorded_seq"]
        }
        return nil
    }

    /// Records that every change up to `seq` is written, on both peers (the target's copy
    /// first: a source copy ahead of the target's would skip changes after a crash).
    func save(_ seq: JSONValue, stats: JSONObject) throws {
        if savedSeq == seq && savedFailed == failed.entries { return }
        var entry = JSONObject([
            ("session_id", .string(sessionID)),
            ("start_time", .int(startTime)),
            ("end_time", .int(unixTimeNow())),
            ("start_last_seq", startSeq),
            ("end_last_seq", seq),
            ("recorded_seq", seq),
        ])
        entry.members += stats.members
        // The newest first; 50 sessions are plenty to find a common one (CouchDB keeps 50).
        let newHistory = [JSONValue.object(entry)] + history.filter { $0.objectValue?["session_id"]?.stringValue != sessionID }.prefix(49)
        let doc = JSONObject([
            ("session_id", .string(sessionID)),
            ("source_last_seq", seq),
            ("replication_id_version", .int(1)),
            ("history", .array(newHistory)),
        ])
        let remoteMoves = savedSeq != seq
        if localIsSource {
            if remoteMoves { try saveRemote(doc) }
            try saveLocal(doc)
        } else {
            try saveLocal(doc)
            if remoteMoves { try saveRemote(doc) }
        }
        savedSeq = seq
        Loggers.replication.debug("replication \(replicationID): checkpoint at \(JSONWriter.canonicalString(seq))")
    }

    private func readLocal() throws -> JSONObject? {
        do {
            let bytes = try local.getLocal(id: replicationID)
            let o = try bytes.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
            localRev = o["_rev"]?.stringValue
            return o
        } catch let e as CBLError where e.status == .notFound {
            localRev = nil
            return nil
        }
    }

    /// The local copy, with the failed revisions as they are when written (a clear by
    /// the user meanwhile is what a conflict here means, and it is kept).
    private func saveLocal(_ doc: JSONObject) throws {
        func json() -> String {
            var d = doc
            savedFailed = failed.entries
            if !savedFailed.isEmpty { d[FailedRevisions.checkpointField] = FailedRevisions.json(savedFailed) }
            return JSONWriter.canonicalString(.object(d))
        }
        do {
            localRev = try local.putLocal(id: replicationID, json: json(), parent: localRev)
        } catch let e as CBLError where e.status == .conflict {
            // Another run of the same replication wrote it meanwhile: ours is as good.
            _ = try readLocal()
            localRev = try local.putLocal(id: replicationID, json: json(), parent: localRev)
        }
    }

    private func saveRemote(_ doc: JSONObject) throws {
        var d = doc
        if let r = remoteRev { d["_rev"] = .string(r) }
        do {
            remoteRev = try remote.putLocal(replicationID, d)
        } catch let e as ReplicationError where e.httpStatus == 409 {
            remoteRev = try remote.getLocal(replicationID)?["_rev"]?.stringValue
            d["_rev"] = remoteRev.map { .string($0) }
            remoteRev = try remote.putLocal(replicationID, d)
        }
    }
}
