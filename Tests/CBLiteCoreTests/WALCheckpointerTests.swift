import XCTest
import Foundation
import Glibc
import CSQLCipher
@testable import CBLiteCore

/// The WAL is copied into the database file on the checkpointer's thread, not in the
/// commits that fill it; the log stays bounded when commits outrun the copies; a stopped
/// checkpointer leaves checkpoints to the commits; a store's close and re-key stop it.
final class WALCheckpointerTests: CBLTestCase {
    private static let page = 4096
    private var page: Int { Self.page }

    /// A writer connection in WAL mode on a new file, with one table.
    private func walWriter(_ path: String) throws -> Connection {
        let c = try Connection(path: path, create: true, busyTimeoutMs: 5000)
        try c.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE t(x BLOB)")
        return c
    }

    /// One transaction of `rows` rows of about a page each (a frame each, at least).
    private static func commitPages(_ c: Connection, rows: Int) throws {
        try c.exec("BEGIN")
        for _ in 0..<rows { try c.exec("INSERT INTO t VALUES (randomblob(\(page - 100)))") }
        try c.exec("COMMIT")
    }

    private func walFrames(_ path: String) -> Int {
        max(0, Int(FileSystem.fileSize(path + "-wal")) - 32) / (page + 24)
    }

    func testCommitsPastTheThresholdAreCopiedOnTheCheckpointersThread() throws {
        let path = dir + "/bg.sqlite3"
        let writer = try walWriter(path)
        let cp = WALCheckpointer(label: "test", threshold: 20, limit: 1_000_000) {
            try Connection(path: path, create: false, busyTimeoutMs: 5000)
        }
        cp.attach(to: writer)
        let sizeBefore = FileSystem.fileSize(path)
        for _ in 0..<5 { try Self.commitPages(writer, rows: 10) }
        cp.waitUntilIdle()
        let counts = cp.counts
        XCTAssertGreaterThanOrEqual(counts.background, 1, "the log reached the threshold: the thread copies it")
        XCTAssertEqual(counts.inline, 0, "no commit checkpointed itself")
        XCTAssertEqual(counts.failures, 0)
        XCTAssertGreaterThan(FileSystem.fileSize(path), sizeBefore + Int64(20 * page), "pages were copied into the file")
        // Below the threshold nothing is asked for.
        let fresh = dir + "/small.sqlite3"
        let small = try walWriter(fresh)
        let idle = WALCheckpointer(label: "small", threshold: 1000) { try Connection(path: fresh, create: false, busyTimeoutMs: 5000) }
        idle.attach(to: small)
        try Self.commitPages(small, rows: 5)
        idle.waitUntilIdle()
        XCTAssertEqual(idle.counts.background + idle.counts.inline, 0)
        cp.stop()
        idle.stop()
        XCTAssertEqual(try Connection(path: path, create: false, busyTimeoutMs: 5000).queryInt("SELECT count(*) FROM t"), 50)
    }

    /// A checkpointer of the file at `path` that counts the connections it opens.
    private func countingCheckpointer(_ path: String, threshold: Int, limit: Int) -> (WALCheckpointer, Locked<Int>) {
        let opened = Locked(0)
        let cp = WALCheckpointer(label: "test", threshold: threshold, limit: limit) {
            opened.with { $0 += 1 }
            return try Connection(path: path, create: false, busyTimeoutMs: 5000)
        }
        return (cp, opened)
    }

    /// The thread runs only while a copy is asked for: it ends once the copies are made,
    /// the next burst starts another, and both use the one connection opened first.
    func testTheThreadEndsWhenNoCopyIsAskedForAndKeepsItsConnection() throws {
        let path = dir + "/ends.sqlite3"
        let writer = try walWriter(path)
        let (cp, opened) = countingCheckpointer(path, threshold: 20, limit: 1_000_000)
        cp.attach(to: writer)
        XCTAssertFalse(cp.isRunning, "no thread before the first copy is asked for")
        try Self.commitPages(writer, rows: 25)
        cp.waitUntilIdle()
        XCTAssertTrue(eventually { !cp.isRunning }, "the copy made, the thread ended")
        let first = cp.counts.background
        XCTAssertGreaterThanOrEqual(first, 1)
        try Self.commitPages(writer, rows: 25)
        cp.waitUntilIdle()
        XCTAssertGreaterThan(cp.counts.background, first, "the next burst started another thread")
        XCTAssertTrue(eventually { !cp.isRunning })
        XCTAssertEqual(cp.counts.inline, 0)
        XCTAssertEqual(cp.counts.failures, 0)
        XCTAssertEqual(opened.get(), 1, "one connection for every thread")
        cp.stop()
        XCTAssertEqual(try writer.queryInt("SELECT count(*) FROM t"), 50)
    }

    /// Commits faster than the copies (here the thread is held up opening its connection)
    /// stop at the limit: the commit that finds the log that long waits for the running
    /// copy and copies the rest itself, so the next transaction starts the log over.
    func testALogThatOutgrowsTheCopiesIsCaughtUpByACommit() throws {
        let path = dir + "/limit.sqlite3"
        let writer = try walWriter(path)
        let release = DispatchSemaphore(value: 0)
        let cp = WALCheckpointer(label: "test", threshold: 10, limit: 40) {
            release.wait()                     // the background copy cannot begin yet
            return try Connection(path: path, create: false, busyTimeoutMs: 5000)
        }
        cp.attach(to: writer)
        let done = DispatchSemaphore(value: 0)
        let failure = Locked<Error?>(nil)
        let shared = Locked(writer)            // used by the thread alone until it is done
        let t = Thread {
            do { for _ in 0..<12 { try Self.commitPages(shared.get(), rows: 8) } } catch { failure.set(error) }
            done.signal()
        }
        t.start()
        // The commit that crosses the limit waits for the held-up copy: let it go then.
        while cp.commitsWaiting == 0 { Thread.sleep(forTimeInterval: 0.005) }
        release.signal()
        done.wait()
        cp.waitUntilIdle()
        XCTAssertNil(failure.get())
        XCTAssertGreaterThanOrEqual(cp.counts.inline, 1, "a commit caught the log up")
        XCTAssertEqual(cp.counts.failures, 0)
        // 96 frames were written in all; the log never held much more than the limit plus
        // one transaction, since a caught-up log starts over.
        XCTAssertLessThanOrEqual(walFrames(path), 40 + 2 * 8 + 4)
        cp.stop()
        XCTAssertEqual(try writer.queryInt("SELECT count(*) FROM t"), 96)
    }

    func testAStoppedCheckpointerLeavesCheckpointsToTheCommits() throws {
        let path = dir + "/stopped.sqlite3"
        let writer = try walWriter(path)
        let (cp, opened) = countingCheckpointer(path, threshold: 10, limit: 1000)
        cp.attach(to: writer)
        cp.stop()
        for _ in 0..<3 { try Self.commitPages(writer, rows: 6) }
        XCTAssertGreaterThanOrEqual(cp.counts.inline, 1)
        XCTAssertEqual(cp.counts.background, 0)
        XCTAssertEqual(opened.get(), 0, "no thread, no connection")
        // whileStopped restores a running checkpointer afterwards; a stopped one stays stopped.
        let other = WALCheckpointer(label: "other", threshold: 10) { try Connection(path: path, create: false, busyTimeoutMs: 5000) }
        other.attach(to: writer)
        try other.whileStopped { try Self.commitPages(writer, rows: 12) }
        XCTAssertEqual(other.counts.background, 0)
        XCTAssertGreaterThanOrEqual(other.counts.inline, 1)
        try Self.commitPages(writer, rows: 12)
        other.waitUntilIdle()
        XCTAssertGreaterThanOrEqual(other.counts.background, 1, "started again after whileStopped")
        other.stop()
    }

    /// A database's commits leave the copy to the thread, and its close stops it: the
    /// log is checkpointed and removed by the writer's close, the last connection.
    /// `transactions` transactions of 300 documents of about a page each, IDs from `prefix`.
    private func fill(_ db: Database, _ prefix: String, transactions: Int) throws {
        let coll = try db.defaultCollection()
        let body = "{\"pad\":\"" + String(repeating: "x", count: 3000) + "\"}"
        for t in 0..<transactions {
            try db.begin()
            for i in 0..<300 { _ = try coll.put(docID: "\(prefix)\(t)-\(i)", json: body, parent: nil) }
            try db.commit()
        }
    }

    func testADatabaseCheckpointsInTheBackgroundAndStopsAtClose() throws {
        let db = try open("bg")
        try fill(db, "d", transactions: 6)
        let cp = try XCTUnwrap(db.store.walCheckpointer)
        cp.waitUntilIdle()
        XCTAssertGreaterThanOrEqual(cp.counts.background, 1)
        XCTAssertEqual(cp.counts.inline, 0)
        XCTAssertEqual(cp.counts.failures, 0)
        let file = db.store.filePath
        try db.close()
        XCTAssertFalse(FileSystem.exists(file + "-wal"), "the writer, closing last, removed the log")
        let again = try open("bg")
        XCTAssertEqual(try again.defaultCollection().count, 1800)
        assertSound(again)
    }

    /// An encrypted database: the thread's connection has the key, and a re-key (which
    /// replaces the file) stops it and lets it start again with the new key.
    func testEncryptedDatabaseAndRekeyKeepCheckpointing() throws {
        let first = #"{"raw_hex":"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"}"#
        let second = #"{"raw_hex":"1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100"}"#
        let db = try open("enc", options: "{\"encryption_key\":\(first)}")
        try fill(db, "a", transactions: 5)
        let cp = try XCTUnwrap(db.store.walCheckpointer)
        cp.waitUntilIdle()
        let before = cp.counts.background
        XCTAssertGreaterThanOrEqual(before, 1)
        try db.changeEncryptionKey(try EncryptionKey(jsonText: second))
        try fill(db, "b", transactions: 5)
        cp.waitUntilIdle()
        XCTAssertGreaterThan(cp.counts.background, before, "checkpoints go on after the re-key")
        XCTAssertEqual(cp.counts.failures, 0, "the thread reopened with the new key")
        try db.close()
        let again = try open("enc", options: "{\"encryption_key\":\(second)}")
        XCTAssertEqual(try again.defaultCollection().count, 3000)
        assertSound(again)
    }
}
