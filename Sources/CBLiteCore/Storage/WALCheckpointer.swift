import CSQLCipher
import Glibc

/// Copies the write-ahead log back into the database file on a thread of its own, so
/// that a commit does not wait for it.
///
/// SQLite's automatic checkpoint runs inside the COMMIT that finds the log at 1,000
/// frames or more: at N=100,000 it was a quarter of the benchmark's update and delete
/// phases and a tenth of its inserts (perf). SQLite's WAL documentation names the
/// alternative used here: automatic checkpoints off, checkpoints run by another thread.
/// The writer's WAL hook (installed by `attach`) wakes this thread once the log holds
/// `threshold` frames, and it runs a PASSIVE checkpoint, which goes on beside readers
/// and the writer, through a connection of its own.
///
/// The log is bounded as with SQLite's own policy: SQLite starts the log over at the
/// first write after a checkpoint copied all of it, which a writer committing faster
/// than the copy runs would never let happen. So a commit that finds `limit` frames
/// waits for the running copy and copies the rest itself. When no thread can be
/// started, or while the checkpointer is stopped, commits checkpoint at `threshold`
/// themselves, as SQLite would.
///
/// Thread-safe. The thread runs only while there is a copy to make: started by the
/// commit that reaches the threshold, it ends once no copy is asked for, so a process
/// whose writes pause is single-threaded again (a second thread costs a single-threaded
/// host on every file-descriptor system call: ~58 ns a call, ~3.7% of the benchmark's
/// read phase, measured). Starting one costs tens of microseconds against the
/// milliseconds of a 1,000-frame copy. Its connection outlives it (opening one derives
/// the key of an encrypted database) and is closed by `stop` (the store's close) or for
/// the duration of `whileStopped` (a re-key swapping the file under every connection).
final class WALCheckpointer: Service, @unchecked Sendable {
    static let defaultThreshold = 1000            // SQLite's SQLITE_DEFAULT_WAL_AUTOCHECKPOINT
    static let defaultLimit = 8000                // ~32 MiB of log at 4 KiB pages

    var serviceName: String { "WAL checkpointer" }
    let threshold: Int
    let limit: Int
    private let openConnection: () throws -> Connection
    private let label: String

    private let monitor = Monitor()               // guards the fields below
    private var thread: ServiceThread?
    /// The copies' connection: opened by the first thread, kept while threads come and
    /// go, closed by `stop`. Used by one thread at a time (the monitor orders them).
    private var connection: Connection?
    private var wanted = false                    // a checkpoint was asked for
    private var running = false                   // a checkpoint is under way (either thread)
    private var stopped = false                   // by stop() or whileStopped: commits checkpoint themselves
    private var noThread = false                  // the system had none to give: commits checkpoint themselves
    /// Counters, for tests (read through `counts`).
    private var waitingCommits = 0                // commits waiting for a running copy
    private var backgroundRuns = 0
    private var inlineRuns = 0
    private var failures = 0

    /// `open` makes the connection checkpoints run through (called on the checkpointer's
    /// thread, with the store's current key).
    init(label: String, threshold: Int = WALCheckpointer.defaultThreshold, limit: Int = WALCheckpointer.defaultLimit,
         open: @escaping () throws -> Connection) {
        self.label = label
        self.threshold = max(1, threshold)
        self.limit = max(self.threshold, limit)
        self.openConnection = open
    }

    /// Makes `conn` (the writer) report its commits here instead of checkpointing in them.
    func attach(to conn: Connection) {
        conn.walHookOwner = self                  // the hook's context lives as long as the connection
        sqlite3_wal_hook(conn.db, { context, db, _, frames in
            Unmanaged<WALCheckpointer>.fromOpaque(context!).takeUnretainedValue().committed(frames: Int(frames), db: db!)
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// The counters in one read.
    var counts: (background: Int, inline: Int, failures: Int) {
        monitor.locked { (backgroundRuns, inlineRuns, failures) }
    }

    /// Called by the writer's WAL hook after each commit with the log's size in frames.
    private func committed(frames: Int, db: OpaquePointer) {
        guard frames >= threshold else { return }
        let inline: Bool = monitor.locked {
            if frames < limit && startIfNeeded() {
                wanted = true
                monitor.broadcast()
                return false
            }
            // Stopped, no thread, or the log outgrew the copies: once the running copy is
            // done, this commit copies the rest.
            if running {
                waitingCommits += 1
                while running { _ = monitor.wait(until: nil) }
                waitingCommits -= 1
            }
            running = true
            return true
        }
        guard inline else { return }
        let failed = !checkpoint(db)
        monitor.locked {
            running = false
            inlineRuns += 1
            if failed { failures += 1 }
            monitor.broadcast()
        }
    }

    /// Starts the thread unless it runs (under the lock); false when stopped or none can
    /// be started.
    private func startIfNeeded() -> Bool {
        if stopped || noThread { return false }
        if thread != nil { return true }
        do {
            thread = try ServiceThread { [self] in run() }
            return true
        } catch {
            noThread = true
            Loggers.storage.warning("\(label): no thread for background checkpoints (\(error)); commits checkpoint themselves")
            return false
        }
    }

    private func run() {
        while true {
            let (go, ownThread): (Bool, ServiceThread?) = monitor.locked {
                while running && !stopped { _ = monitor.wait(until: nil) }   // an inline catch-up
                if stopped { return (false, nil) }                          // stop() joins it
                guard wanted else {
                    // No copy asked for: the thread ends (detached below); the next
                    // commit past the threshold starts another.
                    defer { thread = nil }
                    return (false, thread)
                }
                wanted = false
                running = true
                return (true, nil)
            }
            if !go {
                ownThread?.join()                                           // from the thread itself: detaches it
                return
            }
            var ok = false
            do {
                if connection == nil { connection = try openConnection() }
                ok = checkpoint(connection!.db)
            } catch {
                Loggers.storage.warning("\(label): cannot open a connection for background checkpoints: \(error)")
            }
            monitor.locked {
                running = false
                backgroundRuns += 1
                if !ok { failures += 1 }
                monitor.broadcast()
            }
        }
    }

    /// A PASSIVE checkpoint: copies what no reader still needs, never waits.
    private func checkpoint(_ db: OpaquePointer) -> Bool {
        var logFrames: Int32 = 0, copied: Int32 = 0
        let rc = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &copied)
        if rc == SQLITE_OK || rc == SQLITE_BUSY { return true }   // busy: another checkpoint runs
        Loggers.storage.warning("\(label): checkpoint failed: \(String(cString: sqlite3_errstr(rc))) (\(rc))")
        return false
    }

    /// How many commits wait for the running copy to end (tests).
    var commitsWaiting: Int { monitor.locked { waitingCommits } }

    /// Waits until no checkpoint is asked for or under way (tests).
    func waitUntilIdle() {
        monitor.locked { while (wanted && thread != nil && !stopped) || running { _ = monitor.wait(until: nil) } }
    }

    /// Stops the thread (joined) and closes its connection; later commits checkpoint
    /// themselves at `threshold`.
    func stop() {
        ServiceThread.stop(monitor) {
            stopped = true
            defer { thread = nil }
            return thread
        }
        // No thread uses it now: the last one was joined, or ended by itself after its
        // last use, and none starts while stopped.
        let conn: Connection? = monitor.locked { defer { connection = nil }; return connection }
        conn?.close()
    }

    /// Whether a thread runs now (tests).
    var isRunning: Bool { monitor.locked { thread != nil } }

    /// Runs `body` with the thread stopped and its connection closed (a re-key replaces
    /// the file); the next commit past the threshold starts it again.
    func whileStopped<T>(_ body: () throws -> T) rethrows -> T {
        let wasStopped = monitor.locked { stopped }
        stop()
        defer { if !wasStopped { monitor.locked { stopped = false } } }
        return try body()
    }
}
