import XCTest
import CSQLCipher
@testable import CBLiteCore

/// cblite's SQLCipher provider (page_crypto.c: HMAC and AES contexts kept per connection)
/// gives the bytes SQLCipher's stock OpenSSL provider gives: the same MAC, ciphertext and
/// plaintext for every page, across pages that reuse the kept contexts, a key change (a
/// re-key) and a change of HMAC algorithm. Encrypted files written before it still open
/// (CryptoCompatibilityTests, EncryptionTests).
final class PageCryptoTests: XCTestCase {
    private struct Page {
        var mac = [UInt8](repeating: 0, count: 64)
        var encrypted = [UInt8](repeating: 0, count: 4016)
        var decrypted = [UInt8](repeating: 0, count: 4016)
    }

    private func random(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8.random(in: 0...255) } }

    private func run(stock: Bool, algorithm: Int32, hmacKey: [UInt8], key: [UInt8], iv: [UInt8], page: [UInt8],
                     state: inout UnsafeMutableRawPointer?) -> Page {
        var out = Page()
        var hmacKey = hmacKey, key = key, iv = iv, page = page
        let rc = cblite_sqlcipher_page_crypto_check(stock ? 1 : 0, algorithm, &hmacKey, &key, Int32(key.count), &iv,
                                                    &page, Int32(page.count), &out.mac, &out.encrypted, &out.decrypted, &state)
        XCTAssertEqual(rc, SQLITE_OK)
        return out
    }

    func testKeptContextsGiveTheStockProvidersBytes() throws {
        _ = try Connection(path: ":memory:", create: true, busyTimeoutMs: 0)   // SQLCipher configured
        var state: UnsafeMutableRawPointer?
        defer { cblite_sqlcipher_page_crypto_release(&state) }
        var unused: UnsafeMutableRawPointer?
        var key = random(32), hmacKey = random(32)
        for step in 0..<120 {
            if step == 40 { key = random(32); hmacKey = random(32) }          // a re-key
            let algorithm: Int32 = step < 80 ? 1 : (step < 100 ? 2 : 0)       // SHA256, then SHA512, then SHA1
            let iv = random(16), page = random(4016)
            let stock = run(stock: true, algorithm: algorithm, hmacKey: hmacKey, key: key, iv: iv, page: page, state: &unused)
            let kept = run(stock: false, algorithm: algorithm, hmacKey: hmacKey, key: key, iv: iv, page: page, state: &state)
            XCTAssertEqual(kept.mac, stock.mac, "step \(step): MAC")
            XCTAssertEqual(kept.encrypted, stock.encrypted, "step \(step): ciphertext")
            XCTAssertEqual(kept.decrypted, page, "step \(step): decrypted")
            XCTAssertNotEqual(kept.encrypted, page)
        }
        XCTAssertNotNil(state, "the provider's context was made once and kept")
    }

    /// Through a database: an encrypted file written and read back with the kept contexts,
    /// its pages authenticated on every read, and a wrong key refused.
    func testAnEncryptedDatabaseRoundTrips() throws {
        var template = Array("/tmp/cblite-pagecrypto-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { try? FileSystem.remove(dir) }
        let options = try OpenOptions(json: #"{"encryption_key":{"raw_hex":"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}}"#)
        do {
            let db = try Database.open(name: "enc", directory: dir, options: options)
            let c = try db.defaultCollection()
            try db.inTransaction {
                for i in 0..<2000 { _ = try c.put(docID: "d\(i)", json: #"{"i":\#(i),"pad":"\#(String(repeating: "x", count: 300))"}"#, parent: nil) }
                return true
            }
            try db.close()
        }
        let db = try Database.open(name: "enc", directory: dir, options: options)
        defer { try? db.close() }
        let c = try db.defaultCollection()
        for i in stride(from: 0, to: 2000, by: 7) { XCTAssertEqual(try c.doc("d\(i)")["i"], .int(Int64(i))) }
        XCTAssertEqual(try db.integrityCheck(), [])
        let wrong = try OpenOptions(json: #"{"encryption_key":{"raw_hex":"ff112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}}"#)
        assertStatus(.unauthorized, try Database.open(name: "enc", directory: dir, options: wrong))
    }
}
