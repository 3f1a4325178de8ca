import XCTest
import Glibc
@testable import CBLiteCore

/// Commits made through another Store of the same file — what another process does — reach
/// this Store's change observers marked external, within the watcher's bound; this process's own
/// commits are delivered once, by their commit, and never again as external.
final class ExternalChangesTests: XCTestCase {
    private var dir = ""

    override func setUp() {
        var template = Array("/tmp/cblite-ext-XXXXXX".utf8CString)
        dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    override func tearDown() { try? FileSystem.remove(dir) }

    /// A handle on its own Store: its connections are those another process would have.
    private func otherProcess(_ db: Database) throws -> Database {
        let store = try Store(bundlePath: db.path, filePath: db.path + "/db.sqlite3", create: false, busyTimeoutMs: 5000, key: nil)
        return Database(name: db.name, directory: dir, store: store)
    }

    func testOtherCommitsArriveMarkedExternal() throws {
        let db = try Database.open(name: "shared", directory: dir)
        defer { try? db.close() }
        let c = try db.defaultCollection()
        _ = try c.put(docID: "before", json: "{}", parent: nil)
        let recorder = ChangeRecorder()
        let token = try c.addChangeObserver(recorder.callback)
        defer { token.remove() }

        _ = try c.put(docID: "mine", json: "{}", parent: nil)
        let other = try otherProcess(db)
        let started = MonotonicTime.now()
        let rev = try other.defaultCollection().put(docID: "theirs", json: #"{"x":1}"#, parent: nil).revID
        XCTAssertTrue(eventually(pollMs: 10) { recorder.events.contains { $0.docID == "theirs" } }, "\(recorder.events)")
        let delay = MonotonicTime.now().milliseconds - started.milliseconds
        XCTAssertLessThan(delay, 5000)
        let theirs = recorder.events.first { $0.docID == "theirs" }!
        XCTAssertTrue(theirs.external)
        XCTAssertEqual(theirs.revID, rev)

        // Ours: delivered once, not external, and not again by the watcher's next rounds.
        usleep(UInt32(ExternalChangeWatcher.intervalMs * 3 * 1000))
        let mine = recorder.events.filter { $0.docID == "mine" }
        XCTAssertEqual(mine.count, 1)
        XCTAssertFalse(mine.first?.external ?? true)
        XCTAssertFalse(recorder.events.contains { $0.docID == "before" })

        // A deletion by the other side arrives as a deleted change.
        let current = try other.defaultCollection().history(docID: "theirs", revID: nil)[0]
        _ = try other.defaultCollection().delete(docID: "theirs", parent: current)
        XCTAssertTrue(eventually(pollMs: 10) { recorder.events.contains { $0.docID == "theirs" && $0.deleted } })
        other.store.close()
    }

    func testOwnAndOtherWritesInterleaved() throws {
        let db = try Database.open(name: "mixed", directory: dir)
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let recorder = ChangeRecorder()
        let token = try c.addChangeObserver(recorder.callback)
        defer { token.remove() }
        let other = try otherProcess(db)
        defer { other.store.close() }
        let oc = try other.defaultCollection()
        for i in 0..<20 {
            _ = try c.put(docID: "mine\(i)", json: "{}", parent: nil)
            _ = try oc.put(docID: "theirs\(i)", json: "{}", parent: nil)
        }
        try c.purge(docID: "mine0")          // a purge names an old sequence: no block of ours
        _ = try oc.put(docID: "theirs-last", json: "{}", parent: nil)
        XCTAssertTrue(eventually(pollMs: 10) { recorder.events.contains { $0.docID == "theirs-last" } })
        usleep(UInt32(ExternalChangeWatcher.intervalMs * 2 * 1000))
        let external = recorder.events.filter(\.external).map(\.docID)
        XCTAssertEqual(Set(external), Set((0..<20).map { "theirs\($0)" } + ["theirs-last"]))
        XCTAssertEqual(external.count, 21, "each of theirs once")
        XCTAssertEqual(recorder.events.filter { !$0.external && $0.docID.hasPrefix("mine") }.count, 21)   // 20 saves + the purge
    }

    /// A purge allocates no sequence, so the changes feed cannot show it: another process's
    /// purges come from the purge log, as purges (no revision, deleted), marked external,
    /// and ours never come back from it.
    func testOtherProcessPurgesArriveAsPurges() throws {
        let db = try Database.open(name: "purged", directory: dir)
        defer { try? db.close() }
        let c = try db.defaultCollection()
        for id in ["a", "b", "mine"] { _ = try c.put(docID: id, json: "{}", parent: nil) }
        let recorder = ChangeRecorder()
        let token = try c.addChangeObserver(recorder.callback)
        defer { token.remove() }
        let other = try otherProcess(db)
        defer { other.store.close() }
        let oc = try other.defaultCollection()
        let seqA = try XCTUnwrap(try oc.changes(since: 0).first { $0.docID == "a" }?.sequence)
        try oc.purge(docID: "a")
        try c.purge(docID: "mine")
        _ = try oc.put(docID: "b2", json: "{}", parent: nil)
        XCTAssertTrue(eventually(pollMs: 10) { recorder.events.contains { $0.docID == "a" } && recorder.events.contains { $0.docID == "b2" } },
                      "\(recorder.events)")
        usleep(UInt32(ExternalChangeWatcher.intervalMs * 2 * 1000))
        let a = recorder.events.filter { $0.docID == "a" }
        XCTAssertEqual(a, [ChangeEvent(collectionID: 1, docID: "a", revID: "", sequence: seqA, deleted: true, external: true)])
        let mine = recorder.events.filter { $0.docID == "mine" }
        XCTAssertEqual(mine.count, 1, "our purge, once, by its commit")
        XCTAssertFalse(mine.first?.external ?? true)
        // A purge, then the same ID saved again, by the other side: purged first, then saved.
        try oc.purge(docID: "b2")
        _ = try oc.put(docID: "b2", json: #"{"again":true}"#, parent: nil)
        XCTAssertTrue(eventually(pollMs: 10) { recorder.events.filter { $0.docID == "b2" }.count == 3 }, "\(recorder.events)")
        XCTAssertEqual(recorder.events.filter { $0.docID == "b2" }.map(\.revID.isEmpty), [false, true, false])
    }

    /// The log keeps its newest entries only; readers see them oldest first.
    func testPurgeLogKeepsItsNewestEntries() throws {
        let db = try Database.open(name: "log", directory: dir)
        defer { try? db.close() }
        try db.store.write { conn, _ in
            XCTAssertEqual(try PurgeLog.lastID(conn), 0)
            for i in 0..<(PurgeLog.kept + 5) {
                try PurgeLog.record(conn, collectionID: 1, docID: "d\(i)", sequence: i, origin: 7)
            }
            XCTAssertEqual(try PurgeLog.lastID(conn), PurgeLog.kept + 5)
            XCTAssertEqual(try conn.queryInt("SELECT count(*) FROM purge_log"), PurgeLog.kept)
            let newest = try PurgeLog.entries(conn, after: PurgeLog.kept + 3)
            XCTAssertEqual(newest.map(\.docID), ["d\(PurgeLog.kept + 3)", "d\(PurgeLog.kept + 4)"])
            XCTAssertEqual(newest.first?.origin, 7)
        }
    }

    func testGapsSkipOwnBlocks() {
        let own = ExternalChangeWatcher.merged([5...7, 8...9, 12...12, 20...30])
        XCTAssertEqual(own, [5...9, 12...12, 20...30])
        let gaps = ExternalChangeWatcher.gaps(after: 2, upTo: 25, skip: own).map { [$0.after, $0.last] }
        XCTAssertEqual(gaps, [[2, 4], [9, 11], [12, 19]])
        XCTAssertEqual(ExternalChangeWatcher.gaps(after: 30, upTo: 40, skip: own).map { [$0.after, $0.last] }, [[30, 40]])
        XCTAssertTrue(ExternalChangeWatcher.gaps(after: 4, upTo: 9, skip: own).isEmpty)
        // A failed commit's block comes out of a merged range.
        XCTAssertEqual(ExternalChangeWatcher.subtracting(7...8, from: own), [5...6, 9...9, 12...12, 20...30])
        XCTAssertEqual(ExternalChangeWatcher.subtracting(5...9, from: own), [12...12, 20...30])
    }

    func testWatcherStopsWhenTheDatabaseCloses() throws {
        let db = try Database.open(name: "closing", directory: dir)
        let token = try db.defaultCollection().addChangeObserver { _ in }
        try db.close()                   // joins the watcher's thread: nothing left running
        token.remove()
        let again = try Database.open(name: "closing", directory: dir)
        XCTAssertNoThrow(try again.close())
    }
}
