import XCTest
import Glibc
@testable import CBLiteCore

/// Diagnosis that loses nothing: a damaged file is not "encrypted", an empty or missing
/// database file is never replaced by a new database, read-only handles write nothing,
/// and salvage reads what a damaged page left readable.
final class DiagnosisTests: XCTestCase {
    private var dir = ""

    override func setUp() {
        var template = Array("/tmp/cblite-diag-XXXXXX".utf8CString)
        dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    override func tearDown() { try? FileSystem.remove(dir) }

    private func file(_ name: String) -> String { dir + "/\(name).cblite2/db.sqlite3" }

    private func make(_ name: String, docs: Int, key: EncryptionKey? = nil) throws {
        var o = OpenOptions()
        o.encryptionKey = key
        let db = try Database.open(name: name, directory: dir, options: o)
        let c = try db.defaultCollection()
        let pad = String(repeating: "x", count: 300)
        for i in 1...docs { _ = try c.put(docID: "d\(i)", json: #"{"n":\#(i),"pad":"\#(pad)"}"#, parent: nil) }
        try db.close()
    }

    private func readBytes(_ path: String) -> [UInt8] {
        guard let f = fopen(path, "rb") else { return [] }
        defer { fclose(f) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true { let n = fread(&buf, 1, buf.count, f); if n <= 0 { break }; out += buf[0..<n] }
        return out
    }

    private func writeBytes(_ path: String, _ bytes: [UInt8], at offset: Int) {
        let f = fopen(path, "r+b")!
        fseek(f, offset, SEEK_SET)
        _ = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
    }

    private func readOnly() -> OpenOptions { var o = OpenOptions(); o.readOnly = true; return o }

    func testClassification() throws {
        try make("plain", docs: 2)
        XCTAssertEqual(FileDiagnosis.classify(file("plain")), .plainSQLite)
        try make("secret", docs: 2, key: .password("pw"))
        XCTAssertEqual(FileDiagnosis.classify(file("secret")), .looksEncrypted)
        XCTAssertEqual(FileDiagnosis.classify(dir + "/nothing"), .missing)
        writeBytes(file("plain"), Array("garbled header!!".utf8), at: 0)
        XCTAssertEqual(FileDiagnosis.classify(file("plain")), .damaged)
        let text = dir + "/text"
        let f = fopen(text, "wb")!
        for _ in 0..<200 { fputs("not a database at all, just text\n", f) }
        fclose(f)
        XCTAssertEqual(FileDiagnosis.classify(text), .damaged)
    }

    func testGarbledHeaderIsDamagedNotEncrypted() throws {
        try make("g", docs: 3)
        writeBytes(file("g"), Array("garbage garbage garbage!".utf8), at: 0)
        let e = assertStatus(.internalError, try Database.open(name: "g", directory: dir))
        XCTAssertEqual((e?.detail ?? 0) & 0xFF, 26)
        XCTAssertTrue(e?.message.contains("not a database") == true, e?.message ?? "")
        XCTAssertFalse(e?.message.contains("SELECT") == true)      // the SQL stays in the log
        try make("s", docs: 1, key: .password("pw"))
        let enc = assertStatus(.unauthorized, try Database.open(name: "s", directory: dir))
        XCTAssertTrue(enc?.message.contains("encrypted") == true)
    }

    func testEmptyOrMissingFileIsNeverReset() throws {
        try make("e", docs: 2)
        XCTAssertEqual(truncate(file("e"), 0), 0)
        let e = assertStatus(.internalError, try Database.open(name: "e", directory: dir))
        XCTAssertTrue(e?.message.contains("empty") == true)
        XCTAssertEqual(FileSystem.fileSize(file("e")), 0)
        try make("m", docs: 2)
        try FileSystem.remove(file("m"))
        assertStatus(.internalError, try Database.open(name: "m", directory: dir))
        XCTAssertFalse(FileSystem.exists(file("m")))
        // A fresh name still creates a database.
        XCTAssertNoThrow(try Database.open(name: "fresh", directory: dir).close())
    }

    func testReadOnlyWritesNothing() throws {
        try make("r", docs: 2)
        let before = readBytes(file("r"))
        let db = try Database.open(name: "r", directory: dir, options: readOnly())
        XCTAssertTrue(db.isReadOnly)
        let c = try db.defaultCollection()
        XCTAssertEqual(try c.count, 2)
        assertStatus(.forbidden, try c.put(docID: "x", json: "{}", parent: nil))
        assertStatus(.forbidden, try db.compact())
        assertStatus(.forbidden, try db.begin())
        assertStatus(.notAcceptable, try Database.open(name: "r", directory: dir))   // no mixing in one process
        try db.close()
        XCTAssertEqual(readBytes(file("r")), before)
        assertStatus(.notFound, try Database.open(name: "absent", directory: dir, options: readOnly()))
        XCTAssertFalse(FileSystem.exists(dir + "/absent.cblite2"))
        XCTAssertEqual(try OpenOptions(json: #"{"read_only":true}"#).readOnly, true)
        assertStatus(.badRequest, try OpenOptions(json: #"{"read_only":"yes"}"#))
    }

    func testImmutableURIKeepsOddPaths() {
        XCTAssertEqual(Connection.uri("/a b/c?d#e%f", readOnly: true, immutable: true),
                       "file:/a%20b/c%3Fd%23e%25f?mode=ro&immutable=1")
        XCTAssertEqual(Connection.uri("/x/db.sqlite3", readOnly: false, immutable: false), "file:/x/db.sqlite3")
    }

    func testSalvageReadsAroundADamagedPage() throws {
        try make("h", docs: 30)
        let bytes = readBytes(file("h"))
        let marker = Array(#""n":17,"#.utf8)
        let at = (0..<(bytes.count - marker.count)).first { Array(bytes[$0..<($0 + marker.count)]) == marker }!
        writeBytes(file("h"), [UInt8](repeating: 0xA5, count: 4096), at: at - at % 4096)

        let db = try Database.open(name: "h", directory: dir, options: readOnly())
        defer { try? db.close() }
        let c = try db.defaultCollection()
        var all = QueryOptions()
        all.allDocsMode = .includeDeleted
        assertStatus(.internalError, try c.allDocsQuery(all).allRows())   // the listing stops
        var lines: [[UInt8]] = []
        let report = try c.salvage { lines.append($0) }
        XCTAssertEqual(report.documents, lines.count)
        XCTAssertTrue(report.lost.contains { $0.docID == "d17" })
        XCTAssertEqual(report.documents + report.lost.count, 30)
        XCTAssertGreaterThanOrEqual(report.documents, 20)
        // What salvage writes goes back into a new database with the same revisions.
        let target = try Database.open(name: "rescued", directory: dir)
        defer { try? target.close() }
        let results = try target.defaultCollection().insertExistingRevisions(
            try lines.map { Collection.ExistingRevision(body: try JSONParser.parseObject(String(decoding: $0, as: UTF8.self), what: "line")) })
        XCTAssertTrue(results.allSatisfy { $0.error == nil })
        XCTAssertEqual(try target.defaultCollection().count, Int64(report.documents))
    }

    func testReindex() throws {
        try make("i", docs: 3)
        let db = try Database.open(name: "i", directory: dir)
        defer { try? db.close() }
        try db.reindex()
        XCTAssertEqual(try db.integrityCheck(), [])
        try db.begin()
        assertStatus(.notAcceptable, try db.reindex())
        try db.abort()
    }
}
