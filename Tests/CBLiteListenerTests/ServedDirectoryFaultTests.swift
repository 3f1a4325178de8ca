import CBLiteCore
import CouchWire
import Glibc
import XCTest

/// The served directory changing under the listener: a database's files deleted, the
/// whole directory gone. Requests to what is gone get a clear 404; the rest is served.
final class ServedDirectoryFaultTests: ListenerTestCase {
    func testADatabaseWhoseFilesVanishIsA404AndTheOthersAreServed() throws {
        try start()
        let c = try client()
        for db in ["gone", "kept"] {
            XCTAssertEqual(try c.request("PUT", "/\(db)").status, 201)
            XCTAssertEqual(try c.json("PUT", "/\(db)/doc", #"{"n":1}"#).status, 201)
        }
        XCTAssertEqual(system("rm -rf '\(directory)/gone.cblite2'"), 0)
        let gone = try c.request("GET", "/gone/doc")
        XCTAssertEqual(gone.status, 404)
        XCTAssertEqual(gone.object["error"], .string("not_found"))
        XCTAssertEqual(try c.json("PUT", "/gone/doc2", #"{"n":2}"#).status, 404, "no write into the deleted file")
        XCTAssertEqual(try c.request("GET", "/kept/doc").status, 200)
        XCTAssertEqual(try c.json("PUT", "/kept/doc2", #"{"n":2}"#).status, 201)
        XCTAssertEqual(try c.request("GET", "/_all_dbs").json, .array([.string("kept")]))
        // The name can be made again, as a new database.
        XCTAssertEqual(try c.request("PUT", "/gone").status, 201)
        XCTAssertEqual(try c.request("GET", "/gone/doc").status, 404)
        XCTAssertEqual(try c.json("PUT", "/gone/doc", #"{"n":3}"#).status, 201)
    }

    func testTheWholeDirectoryGoneLeavesTheListenerServing() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        XCTAssertEqual(try c.json("PUT", "/db/doc", #"{"n":1}"#).status, 201)
        XCTAssertEqual(system("rm -rf '\(directory)'"), 0)
        XCTAssertEqual(try c.request("GET", "/db/doc").status, 404)
        XCTAssertEqual(try c.request("GET", "/_all_dbs").json, .array([]))
        XCTAssertEqual(try c.request("GET", "/").status, 200)
        XCTAssertEqual(try c.request("GET", "/_up").status, 200)
    }
}
