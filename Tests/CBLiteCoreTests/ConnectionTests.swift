@testable import CBLiteCore
import Glibc
import XCTest

final class ConnectionTests: XCTestCase {
    func testSQLTextNumbersAreOnePerText() {
        let a = SQLText("SELECT 1 -- sqltext test a")
        XCTAssertEqual(SQLText("SELECT 1 -- sqltext test a").number, a.number)
        XCTAssertNotEqual(SQLText("SELECT 1 -- sqltext test b").number, a.number)
    }

    /// A statement prepared by SQLText and by its text is the same cached statement, and
    /// both caches are dropped at close.
    func testStatementsAreCachedByNumberAndByText() throws {
        var template = Array("/tmp/cblite-conn-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { try? FileSystem.remove(dir) }
        let conn = try Connection(path: dir + "/t.sqlite3", create: true, busyTimeoutMs: 1000)
        let sql = SQLText("SELECT 40 + 2")
        let s1 = try conn.prepare(sql)
        XCTAssertTrue(s1 === (try conn.prepare(sql)))
        XCTAssertTrue(s1 === (try conn.prepare("SELECT 40 + 2")))
        XCTAssertTrue(try s1.step())
        XCTAssertEqual(s1.int(0), 42)
        s1.reset()
        conn.close()
    }
}
