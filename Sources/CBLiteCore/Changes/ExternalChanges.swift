import CSQLCipher

/// Commits made by other processes reach this process's change listeners (and so its live
/// queries), marked external, within `intervalMs` (plus the time to read them).
///
/// SQLite's `PRAGMA data_version`, read on a connection of our own, changes when any other
/// connection — another process's, or this process's writer — committed. When it does, the
/// changes feed (a range scan on `sequence`) says what changed since the last sequence this
/// watcher accounted for; sequences this process committed itself (already delivered by
/// its commit) are left out. One thread per open file, started by the first change
/// listener, stopped when the file closes (ServiceThread, as the expiration timer).
final class ExternalChangeWatcher: @unchecked Sendable {
    /// The documented bound on the delay (include/cblite.h, "Change listeners").
    static let intervalMs = 250

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
    /// Sequences this process is committing or committed, not yet passed by a scan.
    private var own: [Int64: Set<Int64>] = [:]

    init(store: Store) throws {
        self.store = store
        try withConnection { conn in
            dataVersion = try conn.dataVersion()
            let s = try conn.prepareUncached("SELECT id, last_seq FROM collections")
            while try s.step() { lastSeq[s.int(0)] = s.int(1) }
        }
        thread = try ServiceThread { [self] in run() }
    }

    /// Called before this process's COMMIT with the sequences it writes (so a scan that
    /// runs right after the commit does not take them for another process's).
    func noteOwn(_ events: [ChangeEvent]) {
        monitor.locked { for e in events { own[e.collectionID, default: []].insert(e.sequence) } }
    }

    /// The commit failed: those sequences were never written.
    func forgetOwn(_ events: [ChangeEvent]) {
        monitor.locked { for e in events { own[e.collectionID]?.remove(e.sequence) } }
    }

    /// The file was replaced (a key change): read the new one from the next round on.
    func reopen() { monitor.locked { reopenRequested = true } }

    func stop() {
        let t: ServiceThread? = monitor.locked {
            stopped = true
            monitor.broadcast()
            defer { thread = nil }
            return thread
        }
        t?.join()
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
                let events = try poll()
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

    private func poll() throws -> [ChangeEvent] {
        try withConnection { conn in
            let version = try conn.dataVersion()
            if version == dataVersion { return [] }
            dataVersion = version
            var ids: [Int64] = []
            let c = try conn.prepareUncached("SELECT id FROM collections")
            while try c.step() { ids.append(c.int(0)) }
            var events: [ChangeEvent] = []
            try conn.exec("BEGIN")          // one snapshot for every collection
            defer { try? conn.exec("COMMIT") }
            for id in ids {
                let since = lastSeq[id] ?? 0
                // A collection being created or deleted meanwhile has no table: skip it.
                guard let s = try? conn.prepareUncached(
                    "SELECT sequence, docid, revid, flags FROM \(Schema.docTable(id)) WHERE sequence > ? ORDER BY sequence") else { continue }
                s.bind(1, since)
                var highest = since
                var found: [ChangeEvent] = []
                while try s.step() {
                    let seq = s.int(0)
                    highest = seq
                    found.append(ChangeEvent(collectionID: id, docID: s.string(1) ?? "", revID: s.string(2) ?? "", sequence: seq,
                                             deleted: DocFlags(rawValue: s.int(3)).contains(.deleted), external: true))
                }
                monitor.locked {
                    let mine = own[id] ?? []
                    events += found.filter { !mine.contains($0.sequence) }
                    own[id] = mine.filter { $0 > highest }
                }
                lastSeq[id] = highest
            }
            return events
        }
    }
}
