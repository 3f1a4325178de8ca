import XCTest
import Glibc
import CSQLCipher
@testable import CBLiteCore

/// Reads that come in a run keep their WAL read-mark lock at the system level between
/// transactions (kept_read_locks.c): no fcntl() per read, a lock that the system shows
/// held meanwhile, released once reads stop; a lone read keeps nothing; writers and
/// checkpoints of the process go on beside a kept lock and readers see every commit.
final class KeptReadLocksTests: CBLTestCase {
    private struct State: Equatable { var kept: Int32, releasing: Int32, saved: UInt64 }

    private var state: State {
        var kept: Int32 = 0, releasing: Int32 = 0, saved: UInt64 = 0
        cblite_kept_read_locks(&kept, &releasing, &saved)
        return State(kept: kept, releasing: releasing, saved: saved)
    }

    /// Nothing kept and no releasing thread, in any database of the process (other tests').
    private func settled() -> Bool { eventually(pollMs: 2) { state.kept == 0 && state.releasing == 0 } }

    /// The bytes of the -shm file of `db` on which this process holds a lock, by kind, as
    /// the system lists them (/proc/locks).
    private func systemLocks(_ db: Database) throws -> [(kind: String, first: Int, last: Int)] {
        var st = stat()
        guard stat(db.path + "/db.sqlite3-shm", &st) == 0 else { throw XCTSkip("no -shm file") }
        let text = try String(contentsOfFile: "/proc/locks", encoding: .utf8)
        var found: [(String, Int, Int)] = []
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            // "1: POSIX  ADVISORY  READ 4242 08:01:123456 123 123"
            guard f.count >= 8, f[1] == "POSIX", Int32(f[4]) == getpid(),
                  f[5].split(separator: ":").last.flatMap({ UInt64($0) }) == UInt64(st.st_ino),
                  let first = Int(f[6]), let last = Int(f[7]) else { continue }
            found.append((String(f[3]), first, last))
        }
        return found
    }

    /// Read marks are bytes 123...127 of the -shm file.
    private func readMarkLocks(_ db: Database) throws -> [String] {
        try systemLocks(db).filter { $0.first <= 127 && $0.last >= 123 }.map(\.kind)
    }

    /// Reads every document of `c` `rounds` times over, as one run; again (five runs at
    /// most) until the run ends with its lock kept. A run a loaded machine pauses for
    /// longer than the run's window releases its lock, as it should.
    private func readRunKeepingALock(_ c: Collection, documents: Int, rounds: Int = 3) throws -> Bool {
        for _ in 0..<5 {
            for _ in 0..<rounds {
                for i in 0..<documents { XCTAssertEqual(try c.doc("d\(i)")["i"], .int(Int64(i))) }
            }
            if state.kept == 1 { return true }
        }
        return false
    }

    private func fill(_ c: Collection, _ n: Int) throws {
        try c.database.inTransaction {
            for i in 0..<n { _ = try c.put(docID: "d\(i)", json: #"{"i":\#(i)}"#, parent: nil) }
            return true
        }
    }

    func testReadsInARunKeepTheirLockUntilTheRunEnds() throws {
        let db = try open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try fill(c, 100)
        XCTAssertTrue(settled(), "no lock kept once nothing reads")
        XCTAssertEqual(try readMarkLocks(db), [], "no read-mark lock held between runs")
        let before = state

        XCTAssertTrue(try readRunKeepingALock(c, documents: 100), "one read mark kept for the next read")
        let after = state
        // The first read of a run takes and releases its lock; each later one saves both
        // calls (300 reads a run: at least 200 reads' worth, whatever pauses the machine made).
        XCTAssertGreaterThanOrEqual(after.saved - before.saved, 2 * 200, "two system calls saved a read")
        XCTAssertEqual(after.kept, 1)
        XCTAssertEqual(after.releasing, 1, "a thread releases it if reads stop")
        XCTAssertEqual(try readMarkLocks(db), ["READ"], "the system shows the kept lock")

        XCTAssertTrue(settled(), "released after the run")
        XCTAssertEqual(try readMarkLocks(db), [], "and the system shows it released")
    }

    func testALoneReadKeepsNothing() throws {
        let db = try open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try fill(c, 3)
        XCTAssertTrue(settled())
        usleep(30_000)                          // longer than the run's window since the last read
        XCTAssertEqual(try c.doc("d1")["i"], .int(1))
        XCTAssertEqual(state.kept, 0, "a read that is not part of a run releases its lock")
        XCTAssertEqual(state.releasing, 0, "and starts no thread")
        XCTAssertEqual(try readMarkLocks(db), [])
    }

    /// Another handle's writes and TRUNCATE checkpoints (what the process's own writer and
    /// checkpointer do) are not held up by a kept lock, and the reader sees each commit.
    func testWritesAndCheckpointsGoOnBesideAKeptLock() throws {
        let db = try open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try fill(c, 50)
        let writer = try Connection(path: db.path + "/db.sqlite3", create: false, busyTimeoutMs: 0)
        defer { writer.close() }

        for round in 0..<20 {
            XCTAssertTrue(try readRunKeepingALock(c, documents: 50, rounds: 1), "round \(round): a lock kept")
            _ = try c.put(docID: "new\(round)", json: #"{"round":\#(round)}"#, parent: nil)
            // busy_timeout 0: a kept lock that blocked the copy or the log's restart would fail here.
            XCTAssertEqual(try writer.queryInt("PRAGMA wal_checkpoint(TRUNCATE)"), 0, "round \(round): not busy")
            XCTAssertEqual(FileSystem.fileSize(db.path + "/db.sqlite3-wal"), 0, "round \(round): the log was emptied")
            XCTAssertEqual(try c.doc("new\(round)")["round"], .int(Int64(round)), "the reader sees the commit")
        }
        XCTAssertEqual(try c.count, 70)
        assertSound(db)
    }
}
