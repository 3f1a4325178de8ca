import XCTest
import Foundation
@testable import CBLiteCore

/// A database written before revision IDs were ordered as CouchDB orders them opens with
/// CouchDB's winners. `Fixtures/format1-winners.cblite2` was written through the C API
/// by libcblite at commit a77b083 (format 1, ASCII order) with `format1-winners.c`.
final class FormatUpgradeTests: CBLTestCase {
    static let ours = "2-748efd35aa5e1b2c3d4e5f60718293a4b5c6d7e8"
    static let couch = "2-4dc79c95e1a2b3c4d5e6f708192a3b4c"

    private func copyFixture() throws {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/format1-winners.cblite2").path
        XCTAssertTrue(FileManager.default.fileExists(atPath: source + "/db.sqlite3"), "fixture missing")
        try FileManager.default.copyItem(atPath: source, toPath: dir + "/format1.cblite2")
    }

    private func row(_ db: Database, _ collection: Int64, _ docID: String) throws -> (seq: Int64, rev: String, body: String) {
        try db.store.read { conn in
            let s = try conn.prepareUncached("SELECT sequence, revid, body FROM docs_\(collection) WHERE docid=?")
            s.bind(1, docID)
            guard try s.step() else { throw CBLError.notFound(docID) }
            return (s.int(0), s.string(1) ?? "", s.string(2) ?? "")
        }
    }

    private func schema(_ db: Database) throws -> Int64? {
        try db.store.read { try $0.queryInt("SELECT value FROM info WHERE key='schema'") }
    }

    func testFirstWritableOpenGivesEveryCollectionCouchDBsWinners() throws {
        try copyFixture()
        let db = try open("format1")
        XCTAssertEqual(try schema(db), 2)
        assertSound(db)
        let c = try db.defaultCollection()
        let mixed = try row(db, 1, "mixed")
        XCTAssertEqual(mixed.rev, Self.couch, "CouchDB's 32-hex leaf wins, as CouchDB decides")
        XCTAssertEqual(mixed.body, #"{"side":"couchdb"}"#)
        XCTAssertGreaterThan(mixed.seq, 9, "the changed document has a new sequence (views and replications see it)")
        let conflicts = try c.revision(docID: "mixed", revID: nil, options: { var o = RevisionOptions(); o.conflicts = true; return o }())
        XCTAssertTrue(String(decoding: conflicts.json, as: UTF8.self).contains(Self.ours), "the other leaf is a conflict")
        XCTAssertEqual(try row(db, 1, "tombstones").rev, Self.couch, "among deleted leaves too")
        XCTAssertEqual(try row(db, 1, "ours-only").seq, 8, "unchanged by the rule: untouched")
        XCTAssertEqual(try row(db, 1, "single").seq, 9)
        let named = try XCTUnwrap(db.collection(scope: "s", name: "named"))
        XCTAssertEqual(try row(db, named.id, "mixed").rev, Self.couch)
        // The other leaf's body survives the swap (it was the row's body, now in the tree).
        XCTAssertEqual(String(decoding: try c.get(docID: "mixed", revID: Self.ours), as: UTF8.self),
                       #"{"_id":"mixed","_rev":"\#(Self.ours)","side":"ours"}"#)

        // Once: a second open changes nothing.
        let seq = try row(db, 1, "mixed").seq
        try db.close()
        let again = try open("format1")
        XCTAssertEqual(try row(again, 1, "mixed").seq, seq)
        assertSound(again)
    }

    func testReadOnlyOpenLeavesTheFileAsFound() throws {
        try copyFixture()
        let db = try open("format1", options: #"{"read_only":true}"#)
        XCTAssertEqual(try schema(db), 1)
        XCTAssertEqual(try row(db, 1, "mixed").rev, Self.ours, "not upgraded: a read-only handle writes nothing")
    }

    func testNewDatabasesStartAtTheCurrentFormat() throws {
        let db = try open()
        XCTAssertEqual(try schema(db), Schema.version)
    }
}
