import XCTest
@testable import CBLiteCore

final class MaintenanceTests: CBLTestCase {
    /// A database with a bit of everything: updates, conflicts, tombstones, purges,
    /// imported revisions, a second collection and local documents.
    private func populate(_ db: Database) throws {
        let c = try db.defaultCollection()
        let other = try db.createCollection(scope: "s", name: "c")
        for i in 0..<30 {
            var rev: String? = nil
            for j in 0..<3 { rev = try c.put(docID: "doc\(i)", json: #"{"i":\#(i),"j":\#(j)}"#, parent: rev).revID }
            if i % 5 == 0 { _ = try c.delete(docID: "doc\(i)", parent: rev) }
            if i % 7 == 0 { try c.putExisting(docID: "doc\(i)", json: #"{"peer":true}"#, history: ["2-peer", "1-x"]) }
        }
        let r = try c.put(docID: "branchy", json: "{}", parent: nil)
        _ = try c.put(docID: "branchy", json: #"{"a":1}"#, parent: r.revID)
        _ = try c.put(docID: "branchy", json: #"{"b":1}"#, parent: r.revID, allowConflict: true)
        try c.purge(docID: "doc1")
        _ = try other.put(docID: "o", json: "{}", parent: nil)
        _ = try c.putLocal(id: "l", json: "{}", parent: nil)
    }

    func testIntegrityCheckOnSoundDatabases() throws {
        let empty = try open("empty")
        XCTAssertEqual(try empty.integrityCheck(), [])
        let db = try open()
        try populate(db)
        XCTAssertEqual(try db.integrityCheck(), [])
    }

    func testIntegrityCheckFindsProblems() throws {
        let db = try open()
        let c = try db.defaultCollection()
        _ = try c.put(docID: "a", json: "{}", parent: nil)
        _ = try c.put(docID: "c", json: "{}", parent: nil)
        let r = try c.put(docID: "b", json: "{}", parent: nil)
        _ = try c.put(docID: "b", json: #"{"x":1}"#, parent: r.revID)
        XCTAssertEqual(try db.integrityCheck(), [])
        // Damage the rows behind the engine's back.
        let raw = try Connection(path: db.path + "/db.sqlite3", create: false, busyTimeoutMs: 5_000)
        try raw.exec("UPDATE docs_1 SET sequence = 1000 WHERE docid = 'a'")           // above the last sequence
        try raw.exec("UPDATE docs_1 SET flags = flags | 1 WHERE docid = 'c'")         // live count no longer matches
        try raw.exec("UPDATE docs_1 SET revid = '\(r.revID)' WHERE docid = 'b'")      // current is not in the tree as current
        let problems = try db.integrityCheck()
        XCTAssertTrue(problems.contains { $0.hasPrefix("b:") }, "\(problems)")
        XCTAssertTrue(problems.contains { $0.contains("sequence") }, "sequence above last_seq: \(problems)")
        XCTAssertTrue(problems.contains { $0.contains("count") }, "document count mismatch: \(problems)")
    }

    func testCompact() throws {
        let db = try open()
        try populate(db)
        let c = try db.defaultCollection()
        let before = try c.changes(since: 0, options: ChangesOptions(json: #"{"include_docs":true,"all_revs":true}"#))
        let count = try c.count
        let seq = try c.lastSequence
        try db.compact()
        try db.compact()                     // twice: harmless
        let after = try c.changes(since: 0, options: ChangesOptions(json: #"{"include_docs":true,"all_revs":true}"#))
        XCTAssertEqual(after.map(\.docID), before.map(\.docID))
        XCTAssertEqual(after.map(\.revs), before.map(\.revs), "leaves unchanged")
        XCTAssertEqual(after.map { $0.doc ?? [] }, before.map { $0.doc ?? [] }, "current bodies unchanged")
        XCTAssertEqual(try c.count, count)
        XCTAssertEqual(try c.lastSequence, seq, "compaction is not a change")
        XCTAssertEqual(try db.integrityCheck(), [])
        XCTAssertNoThrow(try c.getLocal(id: "l"))
        // Not inside a transaction.
        try db.begin()
        assertStatus(.notAcceptable, try db.compact())
        try db.abort()
    }

    func testOptimize() throws {
        let db = try open()
        try populate(db)
        let c = try db.defaultCollection()
        XCTAssertEqual(try c.count, 25)   // 30 - 6 deleted + doc0 revived by a live peer branch + branchy - purged doc1
        try db.optimize()
        try db.optimize()
        XCTAssertEqual(try db.integrityCheck(), [])
        XCTAssertEqual(try c.count, 25, "documents untouched")
        try db.begin()
        XCTAssertNoThrow(try db.optimize(), "allowed inside a transaction")
        try db.commit()
    }
}
