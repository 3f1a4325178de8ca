import XCTest
import Glibc
@testable import CBLiteCore

/// Encryption at rest: create/open with a key, wrong or missing key (401, files
/// untouched), rekey, remove, add, and no plaintext anywhere on disk.
final class EncryptionTests: XCTestCase {
    private var dir = ""

    override func setUp() {
        var template = Array("/tmp/cblite-enc-XXXXXX".utf8CString)
        dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    override func tearDown() { try? FileSystem.remove(dir) }

    private func options(_ key: String?, create: Bool = true) throws -> OpenOptions {
        var o = OpenOptions()
        o.create = create
        o.encryptionKey = try key.map { try EncryptionKey(jsonText: $0) }
        return o
    }

    private let password = #"{"password":"correct horse battery staple"}"#
    private let rawKey = #"{"raw_hex":"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"}"#
    private let marker = "PLAINTEXT-MARKER-7f3a9"

    private func allBytes(under path: String) throws -> [UInt8] {
        var out: [UInt8] = []
        for name in try FileSystem.list(path) {
            let p = path + "/" + name
            if FileSystem.isDirectory(p) { out += try allBytes(under: p); continue }
            let fd = open(p, O_RDONLY)
            defer { close(fd) }
            var buf = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                out += buf[0..<n]
            }
        }
        return out
    }

    private func contains(_ hay: [UInt8], _ needle: String) -> Bool {
        let n = Array(needle.utf8)
        guard hay.count >= n.count else { return false }
        for i in 0...(hay.count - n.count) where hay[i] == n[0] && Array(hay[i..<i + n.count]) == n { return true }
        return false
    }

    func testEncryptedDatabaseHasNoPlaintextAndNeedsItsKey() throws {
        let db = try Database.open(name: "secret", directory: dir, options: options(password))
        XCTAssertTrue(db.isEncrypted)
        let c = try db.defaultCollection()
        _ = try c.put(docID: "d1", json: #"{"note":"\#(marker)"}"#, parent: nil)
        try db.close()
        let bundle = dir + "/secret.cblite2"
        XCTAssertFalse(contains(try allBytes(under: bundle), marker), "plaintext found in an encrypted database")

        let mainFile = bundle + "/db.sqlite3"
        let before = try allBytes(under: bundle)
        XCTAssertFalse(FileSystem.exists(mainFile + "-wal"), "closing the last handle checkpoints the WAL")
        XCTAssertThrowsError(try Database.open(name: "secret", directory: dir, options: options(nil))) { e in
            XCTAssertEqual((e as? CBLError)?.status, .unauthorized)
        }
        XCTAssertThrowsError(try Database.open(name: "secret", directory: dir, options: options(#"{"password":"wrong"}"#))) { e in
            XCTAssertEqual((e as? CBLError)?.status, .unauthorized)
            XCTAssertFalse((e as? CBLError)?.message.contains("wrong\"") ?? true)
        }
        XCTAssertTrue(try allBytes(under: bundle) == before, "a failed open changed the files")

        let again = try Database.open(name: "secret", directory: dir, options: options(password))
        let json = String(decoding: try again.defaultCollection().get(docID: "d1"), as: UTF8.self)
        XCTAssertTrue(json.contains(marker))
        try again.close()
    }

    func testPlainDatabaseRefusesAKey() throws {
        let db = try Database.open(name: "plain", directory: dir, options: options(nil))
        _ = try db.defaultCollection().put(docID: "x", json: "{}", parent: nil)
        try db.close()
        XCTAssertThrowsError(try Database.open(name: "plain", directory: dir, options: options(password))) { e in
            XCTAssertEqual((e as? CBLError)?.status, .unauthorized)
        }
    }

    func testRekeyRemoveAndAddKeepEveryDocument() throws {
        let db = try Database.open(name: "rotate", directory: dir, options: options(password))
        let c = try db.defaultCollection()
        for i in 0..<50 { _ = try c.put(docID: "doc\(i)", json: #"{"i":\#(i),"m":"\#(marker)"}"#, parent: nil) }
        let second = try Database.open(name: "rotate", directory: dir, options: options(password))

        try db.changeEncryptionKey(try EncryptionKey(jsonText: rawKey))
        XCTAssertEqual(try second.defaultCollection().count, 50, "another handle follows the new key")
        try second.close()
        try db.close()
        XCTAssertThrowsError(try Database.open(name: "rotate", directory: dir, options: options(password)))
        var db2 = try Database.open(name: "rotate", directory: dir, options: options(rawKey))
        XCTAssertEqual(try db2.defaultCollection().count, 50)
        XCTAssertTrue(db2.integrityCheckPassed)

        try db2.changeEncryptionKey(nil)                       // remove encryption
        try db2.close()
        XCTAssertThrowsError(try Database.open(name: "rotate", directory: dir, options: options(rawKey)))
        db2 = try Database.open(name: "rotate", directory: dir, options: options(nil))
        XCTAssertFalse(db2.isEncrypted)
        XCTAssertTrue(contains(try allBytes(under: dir + "/rotate.cblite2"), marker))

        try db2.changeEncryptionKey(try EncryptionKey(jsonText: password))   // add encryption
        _ = try db2.defaultCollection().put(docID: "after", json: "{}", parent: nil)
        try db2.close()
        XCTAssertFalse(contains(try allBytes(under: dir + "/rotate.cblite2"), marker))
        let db3 = try Database.open(name: "rotate", directory: dir, options: options(password))
        XCTAssertEqual(try db3.defaultCollection().count, 51)
        let doc = String(decoding: try db3.defaultCollection().get(docID: "doc7"), as: UTF8.self)
        XCTAssertTrue(doc.contains(#""i":7"#))
        try db3.close()
    }

    func testBadKeysAreRejected() {
        for bad in [#"{"raw_hex":"abc"}"#, #"{"password":""}"#, #"{"other":"x"}"#, #""pw""#, #"{"password":1}"#] {
            XCTAssertThrowsError(try EncryptionKey(jsonText: bad)) { e in
                XCTAssertEqual((e as? CBLError)?.status, .badRequest, bad)
            }
        }
        XCTAssertEqual(try EncryptionKey(jsonText: #"{"password":"p"}"#).description, "<encryption key>")
    }
}

extension Database {
    var integrityCheckPassed: Bool { ((try? integrityCheck()) ?? ["failed"]).isEmpty }
}
