import XCTest
import Foundation
import Glibc
import Synchronization
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

    /// A reader busy on another thread while the key changes gives its connection back
    /// after the swap: that connection is on the old file, with the old key, and must not
    /// serve a later read (which would then miss every write made after the swap).
    func testAReaderBusyDuringARekeyIsNotReusedAfterIt() throws {
        var o = try options(password)
        o.busyTimeoutMs = 200                   // the re-key's checkpoint waits for the busy reader
        let db = try Database.open(name: "busy", directory: dir, options: o)
        let c = try db.defaultCollection()
        _ = try c.put(docID: "before", json: "{}", parent: nil)
        let inFilter = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        try db.setFilter(name: "hold") { _, _ in
            inFilter.signal()
            proceed.wait()
            return true
        }
        let reader = Thread {
            var options = ChangesOptions()
            options.filter = "hold"
            _ = try? c.changes(since: 0, options: options)
            done.signal()
        }
        reader.start()
        inFilter.wait()                         // the reader is inside its read, on the old file
        try db.changeEncryptionKey(try EncryptionKey(jsonText: rawKey))
        proceed.signal()
        done.wait()                             // its connection has been given back
        try db.setFilter(name: "hold", nil)
        _ = try c.put(docID: "after", json: "{}", parent: nil)
        for _ in 0..<3 {                        // every pooled or idle reader
            XCTAssertNoThrow(try c.get(docID: "after"), "a read after the re-key sees the write made after it")
            XCTAssertEqual(try c.count, 2)
        }
        try db.close()
    }

    /// Readers on other threads keep reading while the key changes back and forth: every
    /// re-key drops the pooled readers, so they open new connections while the file and the
    /// key are swapped. None of their reads may fail, and each sees every document.
    func testReadsOnOtherThreadsDuringRekeysNeverFail() throws {
        let keys = [rawKey, #"{"raw_hex":"1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100"}"#]
        let db = try Database.open(name: "rekeys", directory: dir, options: options(keys[0]))
        let c = try db.defaultCollection()
        for i in 0..<20 { _ = try c.put(docID: "doc\(i)", json: #"{"i":\#(i)}"#, parent: nil) }
        let stop = Atomic<Bool>(false)
        let failures = LockedValue<[String]>([])
        let reads = Atomic<Int>(0)
        let group = DispatchGroup()
        for t in 0..<3 {
            DispatchQueue.global().async(group: group) {
                var i = t
                while !stop.load(ordering: .relaxed) {
                    do {
                        _ = try c.get(docID: "doc\(i % 20)")
                        if try c.count != 20 { failures.withLock { $0.append("count changed") } }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                    reads.add(1, ordering: .relaxed)
                    i += 1
                }
            }
        }
        for k in 1...20 { try db.changeEncryptionKey(try EncryptionKey(jsonText: keys[k % 2])) }
        stop.store(true, ordering: .relaxed)
        group.wait()
        XCTAssertEqual(failures.withLock { $0 }.prefix(3), [], "reads during re-keys")
        XCTAssertGreaterThan(reads.load(ordering: .relaxed), 0)
        XCTAssertEqual(try c.count, 20)
        try db.close()
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

    func testAttachmentsAreEncryptedAndFollowKeyChanges() throws {
        let attMarker = "ATTACHMENT-MARKER-51c2"
        let content = Array(String(repeating: attMarker + " ", count: 5000).utf8)   // ~115 KB: two chunks
        var db = try Database.open(name: "photos", directory: dir, options: options(password))
        var c = try db.defaultCollection()
        let rev = try c.setAttachment(docID: "p1", parent: nil, name: "a.txt", contentType: "text/plain", bytes: content)
        _ = try c.setAttachment(docID: "p2", parent: nil, name: "same.txt", contentType: "text/plain", bytes: content)
        XCTAssertFalse(rev.isEmpty)
        let folder = dir + "/photos.cblite2/attachments"
        let files = try FileSystem.list(folder).filter { $0.hasSuffix(".blob") }
        XCTAssertEqual(files.count, 1, "equal content is stored once, encrypted too")
        let digestHex = try BlobDigest.parse(String(decoding: try c.get(docID: "p1"), as: UTF8.self)
            .components(separatedBy: "\"digest\":\"")[1].components(separatedBy: "\"")[0]).hex
        XCTAssertFalse(files[0].uppercased().contains(digestHex), "the file name must not reveal the digest")
        _ = try c.put(docID: "note", json: #"{"text":"\#(marker)"}"#, parent: nil)
        try db.close()
        // Every file of the bundle (SQLite file, WAL, attachments): neither the document's
        // nor the attachment's plaintext appears anywhere.
        let everything = try allBytes(under: dir + "/photos.cblite2")
        XCTAssertFalse(contains(everything, attMarker), "attachment plaintext on disk")
        XCTAssertFalse(contains(everything, marker), "document plaintext on disk")
        db = try Database.open(name: "photos", directory: dir, options: options(password))
        c = try db.defaultCollection()
        XCTAssertEqual(try c.attachmentContent(docID: "p1", name: "a.txt"), content)

        for next in [rawKey, nil, password] as [String?] {
            try db.changeEncryptionKey(try next.map { try EncryptionKey(jsonText: $0) })
            XCTAssertEqual(try c.attachmentContent(docID: "p2", name: "same.txt"), content)
            try db.close()
            db = try Database.open(name: "photos", directory: dir, options: options(next))
            c = try db.defaultCollection()
            XCTAssertEqual(try c.attachmentContent(docID: "p1", name: "a.txt"), content, "after changing the key to \(next ?? "none")")
            XCTAssertEqual(contains(try allBytes(under: dir + "/photos.cblite2"), attMarker), next == nil)
            XCTAssertFalse(FileSystem.exists(dir + "/photos.cblite2/attachments.rekey"))
        }
        try db.close()
    }

    func testInterruptedAttachmentRekeyIsRecoveredOnOpen() throws {
        let content = Array("recover me".utf8)
        let db = try Database.open(name: "crash", directory: dir, options: options(password))
        _ = try db.defaultCollection().setAttachment(docID: "d", parent: nil, name: "f", contentType: nil, bytes: content)
        let newKey = try EncryptionKey(jsonText: rawKey)
        // Simulate a crash after the database file was swapped but before the folders were:
        // stage the new-key files, swap only the database.
        try db.store.changeKey(newKey, beforeSwap: { conn in
            try AttachmentRekey.stage(bundle: db.store.bundlePath, from: try EncryptionKey(jsonText: self.password), to: newKey, conn)
        })
        XCTAssertTrue(FileSystem.isDirectory(dir + "/crash.cblite2/attachments.rekey"))
        try db.close()
        let reopened = try Database.open(name: "crash", directory: dir, options: options(rawKey))
        XCTAssertEqual(try reopened.defaultCollection().attachmentContent(docID: "d", name: "f"), content)
        XCTAssertFalse(FileSystem.exists(dir + "/crash.cblite2/attachments.rekey"))
        try reopened.close()
    }

    func testChangingTheKeyTwiceOnOneHandle() throws {
        let db = try Database.open(name: "twice", directory: dir, options: options(nil))
        _ = try db.defaultCollection().put(docID: "x", json: #"{"n":1}"#, parent: nil)
        try db.changeEncryptionKey(try EncryptionKey(jsonText: password))
        try db.changeEncryptionKey(try EncryptionKey(jsonText: rawKey))
        try db.changeEncryptionKey(nil)
        try db.changeEncryptionKey(try EncryptionKey(jsonText: password))
        try db.close()
        let again = try Database.open(name: "twice", directory: dir, options: options(password))
        XCTAssertEqual(try again.defaultCollection().count, 1)
        try again.close()
    }

    func testPagesAreAuthenticatedWithHMACSHA256() throws {
        let db = try Database.open(name: "hmac", directory: dir, options: options(password))
        let algorithm = try db.store.read { try $0.queryString("PRAGMA cipher_hmac_algorithm") }
        XCTAssertEqual(algorithm, "HMAC_SHA256")
        try db.close()
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
