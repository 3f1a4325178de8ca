import XCTest
import Foundation
import Glibc
@testable import CBLiteCore

/// Databases written before the engine's cryptography moved from swift-crypto to the
/// system's OpenSSL still open: `Fixtures/swift-crypto-encrypted.cblite2` was written by
/// `testWriteFixture` (run with CBLITE_WRITE_CRYPTO_FIXTURE=<dir>) at commit 7578ef3, when
/// SHA-1, HKDF, HMAC and AES-GCM came from swift-crypto. Reading it back checks the
/// encrypted attachment format byte for byte (file names: HKDF + HMAC; content: HKDF +
/// AES-256-GCM per chunk) and that revision IDs (SHA-1) are computed as before.
final class CryptoCompatibilityTests: XCTestCase {
    private var dir = ""

    static let password = #"{"password":"fixture written with swift-crypto"}"#
    static let fixtureName = "swift-crypto-encrypted"

    /// Two 64 KiB chunks and a bit (the last chunk partial), deterministic.
    static let bigContent: [UInt8] = {
        var x: UInt32 = 0x1234_5678
        return (0..<(2 * 65536 + 1000)).map { _ in
            x = x &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: x >> 24)
        }
    }()
    static let smallContent = Array("a small attachment, one chunk".utf8)
    static let fullChunkContent = [UInt8](repeating: 0xA5, count: 65536)   // exactly one full chunk

    override func setUp() {
        var template = Array("/tmp/cblite-cryptocompat-XXXXXX".utf8CString)
        dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    override func tearDown() { try? FileSystem.remove(dir) }

    private func options(_ key: String) throws -> OpenOptions {
        var o = OpenOptions()
        o.create = true
        o.encryptionKey = try EncryptionKey(jsonText: key)
        return o
    }

    static var fixtureBundle: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/\(fixtureName).cblite2").path
    }

    /// Writes the fixture (the database bundle) into $CBLITE_WRITE_CRYPTO_FIXTURE; skipped
    /// otherwise.
    func testWriteFixture() throws {
        guard let out = ProcessInfo.processInfo.environment["CBLITE_WRITE_CRYPTO_FIXTURE"] else {
            throw XCTSkip("set CBLITE_WRITE_CRYPTO_FIXTURE=<dir> to write the fixture")
        }
        let db = try Database.open(name: CryptoCompatibilityTests.fixtureName, directory: out, options: options(CryptoCompatibilityTests.password))
        let c = try db.defaultCollection()
        let r1 = try c.put(docID: "doc", json: #"{"title":"fixture","n":1}"#, parent: nil).revID
        let r2 = try c.setAttachment(docID: "doc", parent: r1, name: "big.bin", contentType: "application/octet-stream",
                                     bytes: CryptoCompatibilityTests.bigContent)
        let r3 = try c.setAttachment(docID: "doc", parent: r2, name: "small.txt", contentType: "text/plain",
                                     bytes: CryptoCompatibilityTests.smallContent)
        let r4 = try c.setAttachment(docID: "doc", parent: r3, name: "full.bin", contentType: nil,
                                     bytes: CryptoCompatibilityTests.fullChunkContent)
        let e1 = try c.setAttachment(docID: "empty", parent: nil, name: "empty", contentType: nil, bytes: [])
        try db.close()
        print("FIXTURE REVS doc: \(r1) \(r2) \(r3) \(r4) empty: \(e1)")
    }

    func testEncryptedBundleWrittenWithSwiftCryptoStillOpens() throws {
        let source = CryptoCompatibilityTests.fixtureBundle
        guard FileSystem.isDirectory(source) else { return XCTFail("missing fixture \(source)") }
        let target = dir + "/\(CryptoCompatibilityTests.fixtureName).cblite2"
        try FileManager.default.copyItem(atPath: source, toPath: target)

        let db = try Database.open(name: CryptoCompatibilityTests.fixtureName, directory: dir,
                                   options: options(CryptoCompatibilityTests.password))
        defer { try? db.close() }
        let c = try db.defaultCollection()
        XCTAssertEqual(try c.attachmentContent(docID: "doc", name: "big.bin"), CryptoCompatibilityTests.bigContent)
        XCTAssertEqual(try c.attachmentContent(docID: "doc", name: "small.txt"), CryptoCompatibilityTests.smallContent)
        XCTAssertEqual(try c.attachmentContent(docID: "doc", name: "full.bin"), CryptoCompatibilityTests.fullChunkContent)
        XCTAssertEqual(try c.attachmentContent(docID: "empty", name: "empty"), [])
        // Random access into the second chunk, and a sequential read that checks the digest.
        let reader = try c.openAttachment(docID: "doc", name: "big.bin")
        try reader.seek(to: 65536 + 10)
        XCTAssertEqual(try reader.read(max: 20), Array(CryptoCompatibilityTests.bigContent[(65536 + 10)..<(65536 + 30)]))
        try reader.seek(to: 0)
        XCTAssertEqual(try reader.read(max: 1 << 20), CryptoCompatibilityTests.bigContent)
        reader.close()

        // Revision IDs: the same edits on a new database give the fixture's IDs.
        let stored = try c.doc("doc")["_rev"]?.stringValue
        let fresh = try Database.open(name: "fresh", directory: dir, options: options(CryptoCompatibilityTests.password))
        defer { try? fresh.close() }
        let f = try fresh.defaultCollection()
        let r1 = try f.put(docID: "doc", json: #"{"title":"fixture","n":1}"#, parent: nil).revID
        let r2 = try f.setAttachment(docID: "doc", parent: r1, name: "big.bin", contentType: "application/octet-stream",
                                     bytes: CryptoCompatibilityTests.bigContent)
        let r3 = try f.setAttachment(docID: "doc", parent: r2, name: "small.txt", contentType: "text/plain",
                                     bytes: CryptoCompatibilityTests.smallContent)
        let r4 = try f.setAttachment(docID: "doc", parent: r3, name: "full.bin", contentType: nil,
                                     bytes: CryptoCompatibilityTests.fullChunkContent)
        XCTAssertEqual(r4, stored)
        // The attachment files are named as before (HKDF + HMAC of the digest under the key).
        let names = { (d: Database) in Set(try FileSystem.list(try d.blobStore.directory).filter { $0.hasSuffix(".blob") }) }
        XCTAssertEqual(try names(fresh).subtracting(try names(db)), [])
        XCTAssertEqual(try names(db).count, 4)
        // New content written now reads back through the old database's store too.
        _ = try c.setAttachment(docID: "new", parent: nil, name: "n", contentType: nil, bytes: Array("written with OpenSSL".utf8))
        XCTAssertEqual(try c.attachmentContent(docID: "new", name: "n"), Array("written with OpenSSL".utf8))
    }
}
