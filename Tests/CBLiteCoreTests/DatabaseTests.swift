import XCTest
import Foundation
@testable import CBLiteCore

final class DatabaseTests: CBLTestCase {
    func testValidNames() throws {
        for name in ["a", "db", "a1", "x_$()+-/y", "my-db(2)", String(repeating: "a", count: 239)] {
            XCTAssertNoThrow(try DatabaseName.validate(name), name)
        }
        for name in ["", "A", "Abc", "1abc", "_a", "$a", "/a", "a b", "a.b", "a\\b", "aB", "é", "a\u{0}",
                     "../x", ".x", String(repeating: "a", count: 240)] {
            assertStatus(.badRequest, try DatabaseName.validate(name), name.debugDescription)
            assertStatus(.badRequest, try Database.open(name: name, directory: dir), name.debugDescription)
            assertStatus(.badRequest, try Database.exists(name: name, directory: dir), name.debugDescription)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [], "nothing created for bad names")
    }

    /// An empty directory is 400 for every call that takes one (it would put the files
    /// at the root of the file system); a missing one is "no databases".
    func testEmptyAndMissingDirectories() throws {
        assertStatus(.badRequest, try Database.open(name: "db", directory: ""))
        assertStatus(.badRequest, try Database.exists(name: "db", directory: ""))
        assertStatus(.badRequest, try Database.list(directory: ""))
        assertStatus(.badRequest, try Database.delete(name: "db", directory: ""))
        XCTAssertFalse(try Database.exists(name: "db", directory: dir + "/missing"))
        XCTAssertEqual(try Database.list(directory: dir + "/missing"), [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/missing"), "asking creates nothing")
    }

    func testSlashInNameStaysInsideTheDirectory() throws {
        let db = try open("a/b")
        XCTAssertEqual(db.name, "a/b")
        XCTAssertEqual(db.path, dir + "/a:b.cblite2")
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/a:b.cblite2/db.sqlite3"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/a"), "no subdirectory made from the name")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["a:b.cblite2"])
        XCTAssertTrue(try Database.exists(name: "a/b", directory: dir))
        XCTAssertEqual(try Database.list(directory: dir), ["a/b"])
        // Several slashes stay in `dir` too.
        let deep = try open("x/y/z")
        XCTAssertEqual(deep.path, dir + "/x:y:z.cblite2")
        XCTAssertEqual(try Database.list(directory: dir), ["a/b", "x/y/z"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/x"))
    }

    func testOpenCreatesOrRefuses() throws {
        assertStatus(.notFound, try Database.open(name: "absent", directory: dir, options: OpenOptions(json: #"{"create":false}"#)))
        XCTAssertFalse(try Database.exists(name: "absent", directory: dir))
        XCTAssertEqual(try Database.list(directory: dir), [])

        let db = try open("made")
        let c = try db.defaultCollection()
        _ = try c.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        try db.close()
        XCTAssertTrue(try Database.exists(name: "made", directory: dir))

        let again = try open("made", options: #"{"create":false}"#)
        XCTAssertEqual(try again.defaultCollection().doc("d")["v"], .int(1))
        XCTAssertEqual(again.name, "made")
    }

    func testOpenOptions() throws {
        XCTAssertTrue(try OpenOptions(json: nil).create)
        XCTAssertEqual(try OpenOptions(json: nil).busyTimeoutMs, 10_000)
        let o = try OpenOptions(json: #"{"create":false,"busy_timeout_ms":250}"#)
        XCTAssertFalse(o.create)
        XCTAssertEqual(o.busyTimeoutMs, 250)
        for bad in [#"{"create":1}"#, #"{"busy_timeout_ms":"5"}"#, #"{"busy_timeout_ms":-1}"#, #"{"nope":true}"#, "[]", "{", "null"] {
            assertStatus(.badRequest, try OpenOptions(json: bad), bad)
        }
    }

    func testListExistsDelete() throws {
        for n in ["zeta", "alpha", "mid-1"] { _ = try open(n) }
        // A folder that is not a database and a stray file are not listed.
        try FileManager.default.createDirectory(atPath: dir + "/junk.cblite2", withIntermediateDirectories: false)
        _ = FileManager.default.createFile(atPath: dir + "/other.txt", contents: Data())
        XCTAssertEqual(try Database.list(directory: dir), ["alpha", "mid-1", "zeta"])
        XCTAssertTrue(try Database.exists(name: "alpha", directory: dir))
        XCTAssertFalse(try Database.exists(name: "junk", directory: dir))

        // Deleting a database that is open in this process: 503.
        assertStatus(.busy, try Database.delete(name: "alpha", directory: dir))
        let alpha = try open("alpha")            // second handle
        assertStatus(.busy, try alpha.delete(), "another handle still has it open")
        try alpha.close()

        assertStatus(.notFound, try Database.delete(name: "nothere", directory: dir))
        assertStatus(.badRequest, try Database.delete(name: "Bad", directory: dir))
    }

    func testDeleteClosedAndThroughHandle() throws {
        let a = try open("a")
        try a.close()
        _ = try Database.delete(name: "a", directory: dir)
        XCTAssertFalse(try Database.exists(name: "a", directory: dir))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/a.cblite2"))

        let b = try open("b")
        _ = try b.defaultCollection().put(docID: "x", json: "{}", parent: nil)
        _ = try b.delete()
        XCTAssertTrue(b.isClosed)
        XCTAssertFalse(try Database.exists(name: "b", directory: dir))
        XCTAssertEqual(try Database.list(directory: dir), [])
        // Reopening creates an empty database.
        let b2 = try open("b")
        XCTAssertEqual(try b2.defaultCollection().count, 0)
    }

    func testCopy() throws {
        let src = try open("src")
        let c = try src.defaultCollection()
        _ = try c.put(docID: "doc", json: #"{"hello":"world"}"#, parent: nil)
        let path = src.path
        try src.close()

        try Database.copy(from: path, name: "dst", directory: dir)
        XCTAssertEqual(try Database.list(directory: dir), ["dst", "src"])
        let dst = try open("dst", options: #"{"create":false}"#)
        XCTAssertEqual(try dst.defaultCollection().doc("doc")["hello"], .string("world"))
        assertSound(dst)
        // The copy is independent of the source.
        _ = try dst.defaultCollection().put(docID: "only-in-copy", json: "{}", parent: nil)
        let src2 = try open("src")
        assertStatus(.notFound, try src2.defaultCollection().get(docID: "only-in-copy"))

        assertStatus(.preconditionFailed, try Database.copy(from: path, name: "dst", directory: dir))
        assertStatus(.preconditionFailed, try Database.copy(from: path, name: "src", directory: dir))
        assertStatus(.notFound, try Database.copy(from: dir + "/missing.cblite2", name: "x", directory: dir))
        try FileManager.default.createDirectory(atPath: dir + "/empty.cblite2", withIntermediateDirectories: false)
        assertStatus(.notFound, try Database.copy(from: dir + "/empty.cblite2", name: "x", directory: dir), "not a database")
        assertStatus(.badRequest, try Database.copy(from: path, name: "Bad Name", directory: dir))
        XCTAssertFalse(try Database.exists(name: "x", directory: dir))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix(".") }
        XCTAssertEqual(leftovers, [], "no temporary copies left behind")
    }

    func testTwoHandlesShareDataAndNotifications() throws {
        let h1 = try open("shared")
        let h2 = try open("shared")
        let rec = ChangeRecorder()
        let token = try h1.defaultCollection().addChangeObserver(rec.callback)
        defer { token.remove() }
        let r = try h2.defaultCollection().put(docID: "d", json: #"{"n":1}"#, parent: nil)
        try h2.waitForNotifications(timeoutMs: 10_000)
        try h1.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.events.map(\.docID), ["d"])
        XCTAssertEqual(rec.events.first?.revID, r.revID)
        XCTAssertEqual(try h1.defaultCollection().doc("d")["_rev"], .string(r.revID))
        // Closing one handle leaves the other working.
        try h2.close()
        _ = try h1.defaultCollection().put(docID: "e", json: "{}", parent: nil)
        XCTAssertEqual(try h1.defaultCollection().count, 2)
    }

    func testCloseWithOpenTransactionIs406() throws {
        let db = try open()
        try db.begin()
        _ = try db.defaultCollection().put(docID: "t", json: "{}", parent: nil)
        assertStatus(.notAcceptable, try db.close())
        XCTAssertFalse(db.isClosed, "the handle stays open")
        try db.commit()
        try db.close()
        XCTAssertTrue(db.isClosed)
        // Data committed before close is there.
        let again = try open()
        XCTAssertEqual(try again.defaultCollection().count, 1)
    }

    func testClosedHandleIs400() throws {
        let db = try open()
        let coll = try db.defaultCollection()
        _ = try coll.put(docID: "a", json: "{}", parent: nil)
        try db.close()
        assertStatus(.badRequest, try db.close(), "closing twice")
        assertStatus(.badRequest, try db.defaultCollection())
        assertStatus(.badRequest, try coll.get(docID: "a"))
        assertStatus(.badRequest, try coll.put(docID: "b", json: "{}", parent: nil))
        assertStatus(.badRequest, try coll.count)
        assertStatus(.badRequest, try db.begin())
        assertStatus(.badRequest, try db.maxRevTreeDepth)
        assertStatus(.badRequest, try db.integrityCheck())
    }

    func testMaxRevTreeDepth() throws {
        let db = try open()
        XCTAssertEqual(try db.maxRevTreeDepth, 20)
        try db.setMaxRevTreeDepth(7)
        XCTAssertEqual(try db.maxRevTreeDepth, 7)
        assertStatus(.badRequest, try db.setMaxRevTreeDepth(0))
        assertStatus(.badRequest, try db.setMaxRevTreeDepth(100_001))
        XCTAssertEqual(try db.maxRevTreeDepth, 7)
        try db.setMaxRevTreeDepth(1)
        try db.setMaxRevTreeDepth(100_000)
        try db.setMaxRevTreeDepth(9)
        // Stored in the database: visible to another handle and after reopening.
        let other = try open()
        XCTAssertEqual(try other.maxRevTreeDepth, 9)
        try other.close()
        try db.close()
        let reopened = try open()
        XCTAssertEqual(try reopened.maxRevTreeDepth, 9)
    }

    /// A lowered maxRevTreeDepth (CouchDB's `_revs_limit`) shows at once in the history a
    /// read gives (`_revisions`), before the next write prunes the stored tree to it.
    func testLoweredDepthTrimsHistoryAtOnce() throws {
        let db = try open()
        let c = try db.defaultCollection()
        var rev: String? = nil
        for i in 0..<6 { rev = try c.put(docID: "d", json: "{\"i\":\(i)}", parent: rev).revID }
        func history() throws -> [String] {
            var o = RevisionOptions()
            o.revisions = true
            let r = try c.revision(docID: "d", revID: nil, options: o)
            return obj(r.json)["_revisions"]?.objectValue?["ids"]?.arrayValue?.compactMap(\.stringValue) ?? []
        }
        XCTAssertEqual(try history().count, 6)
        try db.setMaxRevTreeDepth(3)
        XCTAssertEqual(try history().count, 3)
        XCTAssertEqual(try c.history(docID: "d", revID: nil).count, 6, "the stored tree waits for the next write")
        rev = try c.put(docID: "d", json: "{\"i\":6}", parent: rev).revID
        XCTAssertEqual(try c.history(docID: "d", revID: nil).count, 3)
        XCTAssertEqual(try history().count, 3)
    }

    func testTransactionsNestAndAbort() throws {
        let db = try open()
        let c = try db.defaultCollection()
        assertStatus(.notAcceptable, try db.commit(), "commit without begin")
        assertStatus(.notAcceptable, try db.abort(), "abort without begin")

        try db.begin()
        try db.begin()
        _ = try c.put(docID: "n", json: "{}", parent: nil)
        try db.commit()                              // inner: nothing written yet
        try db.abort()                               // rolls back everything
        assertStatus(.notFound, try c.get(docID: "n"))
        assertStatus(.notAcceptable, try db.commit(), "abort ended the whole nesting")

        try db.begin()
        try db.begin()
        _ = try c.put(docID: "m", json: "{}", parent: nil)
        try db.commit()
        try db.commit()
        XCTAssertNoThrow(try c.get(docID: "m"))

        // inTransaction: true commits, false aborts with 409, a throw aborts and rethrows.
        try db.inTransaction { _ = try c.put(docID: "it1", json: "{}", parent: nil); return true }
        XCTAssertNoThrow(try c.get(docID: "it1"))
        assertStatus(.conflict, try db.inTransaction { _ = try c.put(docID: "it2", json: "{}", parent: nil); return false })
        assertStatus(.notFound, try c.get(docID: "it2"))
        assertStatus(.badRequest, try db.inTransaction {
            _ = try c.put(docID: "it3", json: "{}", parent: nil)
            _ = try c.put(docID: "bad", json: "not json", parent: nil)
            return true
        })
        assertStatus(.notFound, try c.get(docID: "it3"))
        XCTAssertEqual(try c.count, 2)
        assertSound(db)
    }

    func testCommitFromAnotherThreadIs406() throws {
        let db = try open()
        try db.begin()
        let status = Locked<Status?>(nil)
        runOnThreads(1) { _ in
            do { try db.commit(); status.set(.ok) } catch let e as CBLError { status.set(e.status) } catch {}
        }
        XCTAssertEqual(status.get(), .notAcceptable)
        // The failed foreign commit must not end this thread's transaction.
        assertStatus(.notAcceptable, try db.close(), "the transaction is still open")
        XCTAssertEqual(db.store.transactionDepth, 1)
        if db.isClosed {
            try? db.store.abort()            // clean up after the failure above
        } else {
            try db.commit()
            try db.close()
        }
    }

    func testCloseFromAnotherThreadWhileTransactionOpenIs406() throws {
        let db = try open()
        try db.begin()
        let status = Locked<Status?>(nil)
        runOnThreads(1) { _ in
            do { try db.close(); status.set(.ok) } catch let e as CBLError { status.set(e.status) } catch {}
        }
        XCTAssertEqual(status.get(), .notAcceptable, "this handle has a transaction open")
        XCTAssertFalse(db.isClosed)
        try db.abort()
        try db.close()
    }

    func testDeleteWithOpenTransactionIs406() throws {
        let db = try open("busy")
        try db.begin()
        assertStatus(.notAcceptable, try db.delete())
        XCTAssertFalse(db.isClosed)
        XCTAssertTrue(try Database.exists(name: "busy", directory: dir), "nothing deleted")
        try db.abort()
        _ = try db.delete()
        XCTAssertFalse(try Database.exists(name: "busy", directory: dir))
    }

    func testOpenCreatesMissingDirectory() throws {
        let nested = dir + "/one/two"
        let db = try Database.open(name: "n", directory: nested)
        defer { try? db.close() }
        XCTAssertTrue(try Database.exists(name: "n", directory: nested))
        XCTAssertEqual(try Database.list(directory: nested), ["n"])
        assertStatus(.notFound, try Database.open(name: "n", directory: dir + "/absent-dir",
                                                  options: OpenOptions(json: #"{"create":false}"#)))
    }
}
