import XCTest
import Glibc
@testable import CBLiteCore

/// A query that finds its index current skips the registry read while its reader
/// connection's PRAGMA data_version is unchanged (IndexUpdater): every commit since, by this
/// process or another, must still reach the next query.
final class ViewCurrentIndexTests: XCTestCase {
    private var dir = ""

    override func setUp() {
        var template = Array("/tmp/cblite-vcur-XXXXXX".utf8CString)
        dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    override func tearDown() { try? FileSystem.remove(dir) }

    /// A handle on its own Store: its connections are those another process would have.
    private func otherProcess(_ db: Database) throws -> Database {
        let store = try Store(bundlePath: db.path, filePath: db.path + "/db.sqlite3", create: false, busyTimeoutMs: 5000, key: nil)
        return Database(name: db.name, directory: dir, store: store)
    }

    private func byK(_ c: Collection, version: String, plus: Int64 = 0) throws -> View {
        let v = try c.view(named: "byK")
        v.setMapReduce(map: { doc, emit in
            if let k = try doc.object["k"]?.intValue { emit.emit(.int(k + plus), nil) }
        }, reduce: nil, version: version)
        return v
    }

    private func keys(_ v: View) throws -> [String] { try v.query().allRows().map(\.keyJSON) }

    func testQueriesSeeEveryCommitAfterFindingTheIndexCurrent() throws {
        let db = try Database.open(name: "vcur", directory: dir)
        defer { try? db.close() }
        let c = try db.defaultCollection()
        for i in 0..<3 { _ = try c.put(docID: "d\(i)", json: "{\"k\":\(i)}", parent: nil) }
        let v = try byK(c, version: "1")
        XCTAssertEqual(try keys(v), ["0", "1", "2"])
        XCTAssertEqual(try keys(v), ["0", "1", "2"])        // current: from the remembered state

        // This process's own commit.
        _ = try c.put(docID: "d3", json: #"{"k":3}"#, parent: nil)
        XCTAssertEqual(try keys(v), ["0", "1", "2", "3"])
        XCTAssertEqual(try v.lastSequenceIndexed, try c.lastSequence)

        // Another process's document.
        let other = try otherProcess(db)
        defer { try? other.close() }
        let oc = try other.defaultCollection()
        _ = try oc.put(docID: "d4", json: #"{"k":4}"#, parent: nil)
        XCTAssertEqual(try keys(v), ["0", "1", "2", "3", "4"])

        // Another process deletes the index (the collection does not move): rebuilt here.
        let ov = try byK(oc, version: "1")
        try ov.delete()
        XCTAssertEqual(try keys(v), ["0", "1", "2", "3", "4"])

        // Another process rebuilds it with another version of the map: rebuilt here with ours.
        let ov2 = try byK(oc, version: "2", plus: 100)
        XCTAssertEqual(try ov2.query().allRows().map(\.keyJSON), ["100", "101", "102", "103", "104"])
        XCTAssertEqual(try keys(v), ["0", "1", "2", "3", "4"])

        // Inside a transaction: the transaction's own uncommitted document.
        try db.begin()
        _ = try c.put(docID: "d5", json: #"{"k":5}"#, parent: nil)
        XCTAssertEqual(try keys(v), ["0", "1", "2", "3", "4", "5"])
        try db.abort()
        XCTAssertEqual(try keys(v), ["0", "1", "2", "3", "4"])
    }
}
