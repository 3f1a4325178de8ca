import CSQLCipher

/// Commits made by other processes reach this process's change observers (and so its live
/// queries), marked external, within `intervalMs` (plus the time to read them).
///
/// SQLite's `PRAGMA data_version`, read on a connection of our own, changes when any other
/// connection — another process's, or this process's writer — committed. When it does, the
/// changes feed (a range scan on `sequence`) says what changed since the last sequence this
/// watcher accounted for, up to the collection's committed last sequence. The ranges of
/// sequences this process committed itself (already delivered by their commit) are not
/// read at all: a transaction holds SQLite's write lock, so its sequences are one block no
/// other process writes into, and the scan covers only the gaps between such blocks — its
/// cost follows other processes' writes, not ours. Whole-document purges allocate no
/// sequence: they are read from the purge log (PurgeLog), less this Store's own, and
/// delivered before the round's other changes (a purged document saved again then reads
/// as purged, then saved). One thread per open file, started by
/// the first change observer, stopped when the file closes (ServiceThread, as the
/// expiration timer).
final class ExternalChangeWatcher: Service, @unchecked Sendable {
    /// The documented bound on the delay (include/cblite.h, "Change listeners").
    static let intervalMs = 250
    var serviceName: String { "change watcher" }

    private let monitor = Monitor()
    private var stopped = false
    private var thread: ServiceThread?
    /// Strong: the Store drops its watcher (and the thread ends) when it closes.
    private let store: Store
    private var reopenRequested = false
    private var connection: Connection?
    private var dataVersion: Int64 = -1
    /// Highest sequence accounted for, per collection ID.
    private var lastSeq: [Int64: Int64] = [:]
    /// The newest purge log entry accounted for.
    private var lastPurgeID: Int64 = 0
    /// Blocks of sequences this process is committing or committed, not yet passed by a
    /// scan, per collection ID (sorted, disjoint).
    private var own: [Int64: [ClosedRange<Int64>]] = [:]

    init(store: Store) throws {
        self.store = store
        try withConnection { conn in
            dataVersion = try conn.dataVersion()
            let s = try conn.prepareUncached("SELECT id, last_seq FROM collections")
            while try s.step() { lastSeq[s.int(0)] = s.int(1) }
            lastPurgeID = try PurgeLog.lastID(conn)
        }
        thread = try ServiceThread { [self] in run() }
    }

    /// Called before this process's COMMIT with the sequences it writes (so a scan that
    /// runs right after the commit does not take them for another process's).
    func noteOwn(_ events: [ChangeEvent]) {
        let blocks = Self.blocks(events)
        monitor.locked { for (id, b) in blocks { own[id] = Self.merged((own[id] ?? []) + [b]) } }
    }

    /// The commit failed: those sequences were never written.
    func forgetOwn(_ events: [ChangeEvent]) {
        let blocks = Self.blocks(events)
        monitor.locked { for (id, b) in blocks { own[id] = Self.subtracting(b, from: own[id] ?? []) } }
    }

    static func subtracting(_ b: ClosedRange<Int64>, from ranges: [ClosedRange<Int64>]) -> [ClosedRange<Int64>] {
        ranges.flatMap { r -> [ClosedRange<Int64>] in
            guard r.overlaps(b) else { return [r] }
            var parts: [ClosedRange<Int64>] = []
            if r.lowerBound < b.lowerBound { parts.append(r.lowerBound...(b.lowerBound - 1)) }
            if r.upperBound > b.upperBound { parts.append((b.upperBound + 1)...r.upperBound) }
            return parts
        }
    }

    /// One transaction's new sequences, per collection, as the block from lowest to highest
    /// (a purge allocates none: its event carries the purged row's old sequence).
    static func blocks(_ events: [ChangeEvent]) -> [Int64: ClosedRange<Int64>] {
        var out: [Int64: ClosedRange<Int64>] = [:]
        for e in events where !e.revID.isEmpty {
            let r = out[e.collectionID]
            out[e.collectionID] = min(r?.lowerBound ?? e.sequence, e.sequence)...max(r?.upperBound ?? e.sequence, e.sequence)
        }
        return out
    }

    static func merged(_ ranges: [ClosedRange<Int64>]) -> [ClosedRange<Int64>] {
        var out: [ClosedRange<Int64>] = []
        for r in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = out.last, r.lowerBound <= last.upperBound + 1 {
                out[out.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                out.append(r)
            }
        }
        return out
    }

    /// The parts of (after, upTo] outside `skip` (sorted, disjoint), as (after, last] pairs.
    static func gaps(after: Int64, upTo: Int64, skip: [ClosedRange<Int64>]) -> [(after: Int64, last: Int64)] {
        var out: [(Int64, Int64)] = []
        var from = after
        for r in skip where r.upperBound > from && r.lowerBound <= upTo {
            if r.lowerBound - 1 > from { out.append((from, r.lowerBound - 1)) }
            from = max(from, r.upperBound)
        }
        if upTo > from { out.append((from, upTo)) }
        return out
    }

    /// The file was replaced (a key change): read the new one from the next round on.
    func reopen() { monitor.locked { reopenRequested = true } }

    func stop() {
        ServiceThread.stop(monitor) {
            stopped = true
            defer { thread = nil }
            return thread
        }
    }

    private func run() {
        while true {
            let stop: Bool = monitor.locked {
                if !stopped { _ = monitor.wait(until: MonotonicTime.now().adding(milliseconds: Self.intervalMs)) }
                return stopped
            }
            if stop { return }
            if monitor.locked({ defer { reopenRequested = false }; return reopenRequested }) { connection = nil }
            do {
                guard let events = try poll() else { continue }
                // Something was committed: another process may have set an expiration
                // (this process's own settings start the timer themselves).
                store.expiration?.pokeIfPending()
                if !events.isEmpty {
                    Loggers.changes.debug("\(events.count) change(s) committed by another process")
                    store.notifier.enqueue(events)
                    store.notifier.deliverPending()
                    store.commits.locked { store.commits.broadcast() }
                }
            } catch {
                // A rekey or a busy file: reopen on the next round.
                connection = nil
                Loggers.changes.debug("watching other processes' commits: \(error)")
            }
        }
    }

    private func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        if connection == nil {
            connection = try Connection(path: store.filePath, create: false, busyTimeoutMs: 1000, key: store.key,
                                        readOnly: store.readOnly, immutable: false)
        }
        return try body(connection!)
    }

    /// Other processes' changes since the last round; nil when nothing at all was committed.
    private func poll() throws -> [ChangeEvent]? {
        try withConnection { conn in
            let version = try conn.dataVersion()
            if version == dataVersion { return nil }
            dataVersion = version
            try conn.exec("BEGIN")          // one snapshot for every collection
            defer { try? conn.exec("COMMIT") }
            var ids: [Int64] = []
            let c = try conn.prepareUncached("SELECT id FROM collections")
            while try c.step() { ids.append(c.int(0)) }
            var events: [ChangeEvent] = []
            for p in try PurgeLog.entries(conn, after: lastPurgeID) {
                lastPurgeID = p.id
                guard p.origin != store.origin else { continue }
                events.append(ChangeEvent(collectionID: p.collectionID, docID: p.docID, revID: "", sequence: p.sequence,
                                          deleted: true, external: true))
            }
            for id in ids {
                let since = lastSeq[id] ?? 0
                guard let committed = try conn.queryInt("SELECT last_seq FROM collections WHERE id=?", [id]), committed > since else { continue }
                let skip = monitor.locked { own[id] ?? [] }
                var found: [ChangeEvent] = []
                for gap in Self.gaps(after: since, upTo: committed, skip: skip) {
                    // A collection being created or deleted meanwhile has no table: skip it.
                    guard let s = try? conn.prepareUncached("SELECT sequence, docid, revid, flags FROM \(Schema.docTable(id)) "
                                                            + "WHERE sequence > ? AND sequence <= ? ORDER BY sequence") else { break }
                    s.bind(1, gap.after)
                    s.bind(2, gap.last)
                    while try s.step() {
                        found.append(ChangeEvent(collectionID: id, docID: s.string(1) ?? "", revID: s.string(2) ?? "", sequence: s.int(0),
                                                 deleted: DocFlags(rawValue: s.int(3)).contains(.deleted), external: true))
                    }
                }
                events += found
                lastSeq[id] = committed
                monitor.locked { own[id] = own[id]?.filter { $0.upperBound > committed } }
            }
            return events
        }
    }
}
