import CBLiteCore
import CBLiteDiscovery
import XCTest

final class ServiceTXTTests: XCTestCase {
    func testBuildsAndParsesBack() {
        let fp = String(repeating: "ab", count: 32)
        let txt = ServiceTXT(databases: ["notes", "photos.s.c"], tls: true, sha256: fp)
        let items = txt.build()
        XCTAssertEqual(items, ["txtvers=1", "tls=1", "sha256=\(fp)", "db=notes,photos.s.c"])
        let back = ServiceTXT(parsing: items)
        XCTAssertEqual(back.databases, ["notes", "photos.s.c"])
        XCTAssertTrue(back.tls)
        XCTAssertEqual(back.sha256, fp)
        XCTAssertFalse(back.moreDatabases)
        XCTAssertEqual(back.items["txtvers"], "1")
    }

    func testWithoutTLSOrDatabases() {
        XCTAssertEqual(ServiceTXT(databases: [], tls: false, sha256: nil).build(), ["txtvers=1", "tls=0"])
    }

    /// Names past one item's 255 bytes go on in db2, db3…; past the record's budget they are
    /// left out and db_more says so. Every item stays within 255 bytes, the record within 1300.
    func testManyNamesAreSplitAndBounded() {
        let names = (0..<200).map { "database-number-\($0)" }
        let items = ServiceTXT(databases: names, tls: false, sha256: nil).build()
        XCTAssertTrue(items.allSatisfy { $0.utf8.count <= 255 }, "\(items.map(\.utf8.count))")
        XCTAssertLessThanOrEqual(items.reduce(0) { $0 + 1 + $1.utf8.count }, ServiceTXT.maxBytes)
        XCTAssertTrue(items.contains("db2=" + items.first { $0.hasPrefix("db2=") }!.dropFirst(4)))
        XCTAssertEqual(items.last, "db_more=1")
        let back = ServiceTXT(parsing: items)
        XCTAssertTrue(back.moreDatabases)
        XCTAssertGreaterThan(back.databases.count, 20)
        XCTAssertEqual(back.databases, Array(names.prefix(back.databases.count)))
    }

    /// Other implementations' records: keys are case-insensitive, the first of a repeated
    /// key wins, a key alone is a boolean attribute, a malformed fingerprint is ignored.
    func testParsesForeignRecords() {
        let t = ServiceTXT(parsing: ["TLS=1", "tls=0", "path=/", "flag", "sha256=xyz", "", "=novalue"])
        XCTAssertTrue(t.tls)
        XCTAssertNil(t.sha256)
        XCTAssertEqual(t.items["path"], "/")
        XCTAssertEqual(t.items["flag"], "")
        XCTAssertEqual(t.databases, [])
        XCTAssertNil(t.items[""])
    }

    func testServiceTypesAndNamesAreChecked() throws {
        try ServiceType.validate("_couchdb._tcp")
        try ServiceType.validate("_my-app._udp")
        for bad in ["couchdb._tcp", "_couchdb", "_couchdb._sctp", "_._tcp", "_a_b._tcp", "_averyveryverylongname._tcp"] {
            XCTAssertThrowsError(try ServiceType.validate(bad), bad) { XCTAssertEqual(($0 as? CBLError)?.status, .badRequest) }
        }
        try ServiceType.validate(name: "Kitchen tablet")
        XCTAssertThrowsError(try ServiceType.validate(name: ""))
        XCTAssertThrowsError(try ServiceType.validate(name: String(repeating: "x", count: 64)))
        XCTAssertThrowsError(try ServiceType.validate(name: "a\nb"))
    }
}
