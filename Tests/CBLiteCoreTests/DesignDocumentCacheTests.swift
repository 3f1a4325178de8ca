import XCTest
import Glibc
@testable import CBLiteCore

/// The indexes a collection's design documents define are kept between queries
/// (DesignDocumentCache) and must follow every change of them: a design document
/// created, updated, deleted, replicated in or purged (a purge leaves the collection's
/// sequence where it was), an index created or deleted through the API, a write by
/// another process, and a transaction's writes, seen inside it and gone after its abort.
final class DesignDocumentCacheTests: CBLCollectionTestCase {
    var c: Collection { coll }

    private static let byAge = #"{"language":"query","views":{"age":{"map":{"fields":{"age":"asc"},"partial_filter_selector":{}},"reduce":"_count","options":{"def":{"fields":["age"]}}}}}"#
    private static let byName = #"{"language":"query","views":{"name":{"map":{"fields":{"name":"asc"},"partial_filter_selector":{}},"reduce":"_count","options":{"def":{"fields":["name"]}}}}}"#

    override func setUp() {
        super.setUp()
        for (id, age) in [("a", 31), ("b", 25), ("c", 40)] {
            _ = try! c.put(docID: id, json: #"{"name":"\#(id)","age":\#(age)}"#, parent: nil)
        }
    }

    /// The index an age query runs on ("_all_docs" when none serves it), its results checked.
    private func ageIndex(file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let cur = try c.find(json: #"{"selector":{"age":{"$gt":30}}}"#)
        var ids: [String] = []
        while let d = try cur.next() { ids.append(d.objectValue?["_id"]?.stringValue ?? "?") }
        XCTAssertEqual(ids.sorted(), ["a", "c"], file: file, line: line)
        return cur.plan.index.ddoc.map { $0 + "/" + cur.plan.index.name } ?? cur.plan.index.name
    }

    private func listed() throws -> [String] { try c.mangoIndexes().map { ($0.ddoc ?? "") + "/" + $0.name } }

    private func rev(_ id: String) throws -> String? { try c.doc(id)["_rev"]?.stringValue }

    private func mangoViews() throws -> [String] {
        try c.store.read { try ViewStorage.names($0, collectionID: c.id) }.filter { $0.hasPrefix(MangoIndex.viewPrefix) }
    }

    func testMangoIndexesFollowEveryChangeOfTheDesignDocuments() throws {
        XCTAssertEqual(try ageIndex(), "_all_docs")
        XCTAssertEqual(try listed(), [])

        // Created by a document write, then changed to index another field: its view goes.
        _ = try c.put(docID: "_design/q", json: Self.byAge, parent: nil)
        XCTAssertEqual(try ageIndex(), "_design/q/age")
        XCTAssertEqual(try listed(), ["_design/q/age"])
        XCTAssertEqual(try mangoViews().count, 1)
        _ = try c.put(docID: "_design/q", json: Self.byName, parent: try rev("_design/q"))
        XCTAssertEqual(try ageIndex(), "_all_docs")
        XCTAssertEqual(try listed(), ["_design/q/name"])
        XCTAssertEqual(try mangoViews(), [])

        // Deleted.
        _ = try c.delete(docID: "_design/q", parent: try rev("_design/q"))
        XCTAssertEqual(try listed(), [])

        // Replicated in (an existing revision, with its history).
        XCTAssertTrue(try c.putExisting(docID: "_design/r", json: Self.byAge, history: ["2-bbb", "1-aaa"]))
        XCTAssertEqual(try ageIndex(), "_design/r/age")
        XCTAssertEqual(try mangoViews().count, 1)

        // Purged: the collection's last sequence does not move, the index goes all the same.
        let before = try c.lastSequence
        try c.purge(docID: "_design/r")
        XCTAssertEqual(try c.lastSequence, before)
        XCTAssertEqual(try ageIndex(), "_all_docs")
        XCTAssertEqual(try listed(), [])
        XCTAssertEqual(try mangoViews(), [])

        // Created and deleted through the API.
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["age"]},"ddoc":"api","name":"age"}"#))
        XCTAssertEqual(try ageIndex(), "_design/api/age")
        try c.deleteMangoIndex(ddoc: "api", type: "json", name: "age")
        XCTAssertEqual(try ageIndex(), "_all_docs")
        XCTAssertEqual(try c.mangoIndexListJSON().objectValue?["total_rows"], .int(1))
    }

    func testAnotherProcessesDesignDocumentIsSeen() throws {
        XCTAssertEqual(try ageIndex(), "_all_docs")
        let store = try Store(bundlePath: db.path, filePath: db.path + "/" + DatabaseName.sqliteFile, create: false,
                              busyTimeoutMs: 5000, key: nil)
        let other = Database(name: db.name, directory: db.directory, store: store)
        defer { try? other.close() }
        _ = try other.defaultCollection().put(docID: "_design/theirs", json: Self.byAge, parent: nil)
        XCTAssertEqual(try ageIndex(), "_design/theirs/age")
        try other.defaultCollection().purge(docID: "_design/theirs")
        XCTAssertEqual(try ageIndex(), "_all_docs")
    }

    func testATransactionsDesignDocumentIsSeenInsideItAndGoneAfterItsAbort() throws {
        // The view registry made first, outside the transactions (a rolled-back
        // transaction that made it: testAnAbortedTransactionThatMadeTheViewRegistry...).
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["name"]},"ddoc":"n","name":"name"}"#))
        XCTAssertEqual(try c.find(json: #"{"selector":{"name":"a"}}"#).plan.index.name, "name")
        XCTAssertEqual(try ageIndex(), "_all_docs")
        try db.begin()
        _ = try c.put(docID: "_design/t", json: Self.byAge, parent: nil)
        XCTAssertEqual(try ageIndex(), "_design/t/age")
        try db.abort()
        // The next write takes the aborted one's sequence: what it defines is what counts.
        _ = try c.put(docID: "_design/t", json: Self.byName, parent: nil)
        XCTAssertEqual(try listed(), ["_design/n/name", "_design/t/name"])
        XCTAssertEqual(try ageIndex(), "_all_docs")

        try db.begin()
        _ = try c.put(docID: "_design/u", json: Self.byAge, parent: nil)
        XCTAssertEqual(try ageIndex(), "_design/u/age")
        try db.abort()
        XCTAssertEqual(try ageIndex(), "_all_docs")
        XCTAssertEqual(try listed(), ["_design/n/name", "_design/t/name"])
    }

    /// A rolled-back transaction that made the view registry (the first index of the
    /// database) takes the table with it: the next transaction makes it again, although
    /// the writer's cached statements on it were prepared while it existed.
    func testAnAbortedTransactionThatMadeTheViewRegistryLeavesTheNextOneWorking() throws {
        try db.begin()
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["age"]},"ddoc":"a","name":"age"}"#))
        XCTAssertEqual(try ageIndex(), "_design/a/age")
        try db.abort()
        XCTAssertEqual(try ageIndex(), "_all_docs")
        try db.begin()
        _ = try c.createMangoIndex(jsonValue(#"{"index":{"fields":["age"]},"ddoc":"a","name":"age"}"#))
        XCTAssertEqual(try ageIndex(), "_design/a/age")
        try db.commit()
        XCTAssertEqual(try ageIndex(), "_design/a/age")
    }

    /// Text indexes are kept the same way: a purged design document takes its index with it.
    func testTextIndexesFollowAPurge() throws {
        try c.createTextIndex(FullTextIndex(ddoc: "fts", name: "t", fields: ["name"]))
        XCTAssertEqual(try c.search(index: "t", FullTextSearchRequest(query: "a")).hits.map(\.docID), ["a"])
        try c.purge(docID: "_design/fts")
        XCTAssertThrowsError(try c.search(index: "t", FullTextSearchRequest(query: "a")))
        XCTAssertEqual(try c.textIndexes(), [])
    }
}
