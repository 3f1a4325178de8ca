@testable import CBLiteCore
import CSQLCipher
import Glibc
import XCTest

final class ConnectionTests: CBLTestCase {
    /// A new SQLite file in the test's directory (removed by CBLTestCase).
    private func newConnection() throws -> Connection {
        try Connection(path: dir + "/t.sqlite3", create: true, busyTimeoutMs: 1000)
    }

    func testSQLTextNumbersAreOnePerText() {
        let a = SQLText("SELECT 1 -- sqltext test a")
        XCTAssertEqual(SQLText("SELECT 1 -- sqltext test a").number, a.number)
        XCTAssertNotEqual(SQLText("SELECT 1 -- sqltext test b").number, a.number)
    }

    /// A statement prepared by SQLText and by its text is the same cached statement, and
    /// both caches are dropped at close.
    func testStatementsAreCachedByNumberAndByText() throws {
        let conn = try newConnection()
        let sql = SQLText("SELECT 40 + 2")
        let s1 = try conn.prepare(sql)
        XCTAssertTrue(s1 === (try conn.prepare(sql)))
        XCTAssertTrue(s1 === (try conn.prepare("SELECT 40 + 2")))
        XCTAssertTrue(try s1.step())
        XCTAssertEqual(s1.int(0), 42)
        s1.reset()
        conn.close()
    }

    /// A scan larger than the connection's page cache runs with a 256 KiB cache, and its
    /// pages' memory goes back to the heap; the cache's size is set back after. A scan
    /// that fits keeps the cache as it is.
    func testAScanLargerThanTheCacheRunsWithASmallOne() throws {
        let conn = try newConnection()
        defer { conn.close() }
        try conn.exec("CREATE TABLE t(x BLOB)")
        try conn.exec("BEGIN")
        for _ in 0..<2000 { try conn.exec("INSERT INTO t VALUES (randomblob(3000))") }
        try conn.exec("COMMIT")
        func cacheBytes() -> Int32 {
            var current: Int32 = 0, highest: Int32 = 0
            sqlite3_db_status(conn.db, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0)
            return current
        }
        func readAll() throws { XCTAssertEqual(try conn.queryInt("SELECT sum(length(x)) FROM t"), 6_000_000) }

        try readAll()
        XCTAssertGreaterThan(cacheBytes(), 1_500_000, "a full 2 MiB cache")
        try conn.scanning(bytes: 6_000_000) {
            XCTAssertEqual(try conn.queryInt("PRAGMA cache_size"), -256)
            XCTAssertLessThan(cacheBytes(), 400_000, "the cache's pages given back")
            try readAll()
            XCTAssertLessThan(cacheBytes(), 400_000, "the scan stays in 256 KiB")
        }
        XCTAssertEqual(try conn.queryInt("PRAGMA cache_size"), -2000, "set back")
        try readAll()
        XCTAssertGreaterThan(cacheBytes(), 1_500_000, "and filled again by later reads")
        try conn.scanning(bytes: 1_000_000) {
            XCTAssertEqual(try conn.queryInt("PRAGMA cache_size"), -2000, "a scan that fits keeps the cache")
        }
    }

    /// Columns read where SQLite holds the row (cblite_result_row.h) give what SQLite's
    /// public calls give, for every kind of value: NULL, empty and non-empty text and blobs,
    /// text holding a 0 byte, zero-filled blobs, integers, reals, and a column number out of
    /// range or a statement with no current row.
    func testResultRowReadsMatchSQLitesOwnCalls() throws {
        let conn = try newConnection()
        defer { conn.close() }
        try conn.exec("CREATE TABLE t(v)")
        try conn.exec("""
        INSERT INTO t VALUES (NULL), (''), (x''), ('text'), (x'00ff10'), ('a' || char(0) || 'b'),
            (zeroblob(5)), (42), (-9007199254740993), (1.5), (1e300), (randomblob(70000))
        """)
        let s = try conn.prepare("SELECT v, typeof(v) FROM t ORDER BY rowid")
        var rows = 0
        while try s.step() {
            rows += 1
            let h = s.handle
            let type = s.string(1) ?? "?"
            // What SQLite's public calls say.
            let isNull = sqlite3_column_type(h, 0) == SQLITE_NULL
            let n = Int(sqlite3_column_bytes(h, 0))
            let p = sqlite3_column_blob(h, 0)
            let expected: [UInt8]? = isNull ? nil : (p == nil ? [] : [UInt8](UnsafeRawBufferPointer(start: p, count: n)))
            XCTAssertEqual(s.bytes(0), expected, type)
            XCTAssertEqual(s.borrowedBytes(0).map { [UInt8]($0) }, expected, type)
            XCTAssertEqual(s.borrowedNonEmpty(0).map { [UInt8]($0) }, expected?.isEmpty == false ? expected : nil, type)
            XCTAssertEqual(s.withBytes(0) { [UInt8]($0) }, expected ?? [], type)
            XCTAssertEqual(s.string(0), expected.map { String(decoding: $0, as: UTF8.self) }, type)
            XCTAssertEqual(s.int(0), sqlite3_column_int64(h, 0), type)
            XCTAssertEqual(s.isNull(0), isNull, type)
            // Out of range: nothing, as SQLite's calls give.
            XCTAssertNil(s.borrowedBytes(7))
            XCTAssertEqual(s.int(-1), 0)
        }
        XCTAssertEqual(rows, 12)
        // No current row (the last step returned SQLITE_DONE).
        XCTAssertNil(s.borrowedBytes(0))
        XCTAssertEqual(s.int(0), 0)
        s.reset()
    }
}
