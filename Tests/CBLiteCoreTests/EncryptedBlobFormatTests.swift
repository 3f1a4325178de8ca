import XCTest
import Glibc
@testable import CBLiteCore

/// The encrypted attachment file format: exact round trips at every chunk boundary,
/// random-access reads, and authentication failures on tampering, truncation or a
/// wrong key.
final class EncryptedBlobFormatTests: XCTestCase {
    private var dir = ""
    private let key = try! EncryptionKey(jsonText: #"{"password":"attachments"}"#)

    override func setUp() {
        var template = Array("/tmp/cblite-eblob-XXXXXX".utf8CString)
        dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    override func tearDown() { try? FileSystem.remove(dir) }

    private func write(_ data: [UInt8], _ format: EncryptedBlobFileFormat, name: String, pieces: Int = 3) throws -> String {
        let path = dir + "/" + name
        let file = try BlobFile.create(path)
        let enc = try format.makeEncoder(for: file)
        var offset = 0
        let step = max(1, data.count / pieces)
        while offset < data.count {
            let n = min(step, data.count - offset)
            try data.withUnsafeBytes { try enc.write(UnsafeRawBufferPointer(rebasing: $0[offset..<offset + n])) }
            offset += n
        }
        try enc.finish()
        file.close()
        return path
    }

    private func readAll(_ path: String, _ format: EncryptedBlobFileFormat, at offset: UInt64 = 0, count: Int? = nil) throws -> [UInt8] {
        let file = try BlobFile.openForReading(path, what: "test")
        let dec = try format.makeDecoder(for: file)
        let want = count ?? Int(dec.length - offset)
        var out = [UInt8](repeating: 0, count: want)
        let n = try out.withUnsafeMutableBytes { try dec.read(at: offset, into: $0) }
        return Array(out[0..<n])
    }

    func testRoundTripsAtEveryBoundary() throws {
        let format = EncryptedBlobFileFormat(key: key, chunkSize: 16)
        var rng = SystemRandomNumberGenerator()
        for size in [0, 1, 15, 16, 17, 31, 32, 33, 100, 1000] {
            let data = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let path = try write(data, format, name: "f\(size)")
            XCTAssertEqual(try readAll(path, format), data, "size \(size)")
            let file = try BlobFile.openForReading(path, what: "t")
            XCTAssertEqual(try format.makeDecoder(for: file).length, UInt64(size))
            if size > 20 {
                XCTAssertEqual(try readAll(path, format, at: 7, count: 13), Array(data[7..<20]), "random access")
                XCTAssertEqual(try readAll(path, format, at: UInt64(size - 3), count: 10), Array(data[(size - 3)...]))
            }
        }
    }

    func testPlaintextIsNotInTheFile() throws {
        let format = EncryptedBlobFileFormat(key: key)
        let marker = Array(String(repeating: "SECRET-MARKER ", count: 200).utf8)
        let path = try write(marker, format, name: "m")
        let raw = try readRaw(path)
        XCTAssertFalse(String(decoding: raw, as: UTF8.self).contains("SECRET-MARKER"))
        XCTAssertEqual(try readAll(path, format), marker)
    }

    private func readRaw(_ path: String) throws -> [UInt8] {
        let f = try BlobFile.openForReading(path, what: "raw")
        var out = [UInt8](repeating: 0, count: Int(try f.size()))
        _ = try out.withUnsafeMutableBytes { try f.read(at: 0, into: $0) }
        return out
    }

    private func overwrite(_ path: String, _ bytes: [UInt8]) throws {
        try FileSystem.remove(path)
        let f = try BlobFile.create(path)
        try bytes.withUnsafeBytes { try f.append($0) }
    }

    func testTamperingTruncationAndWrongKeyAreDetected() throws {
        let format = EncryptedBlobFileFormat(key: key, chunkSize: 16)
        let data = Array(0..<64).map { UInt8($0) }
        let path = try write(data, format, name: "t")
        let good = try readRaw(path)

        var flipped = good
        flipped[EncryptedBlobFileFormat.headerSize + 3] ^= 1
        try overwrite(path, flipped)
        XCTAssertThrowsError(try readAll(path, format))

        try overwrite(path, Array(good.dropLast(32)))          // drop the last chunk
        XCTAssertThrowsError(try readAll(path, format))

        try overwrite(path, good)
        let other = EncryptedBlobFileFormat(key: try EncryptionKey(jsonText: #"{"password":"other"}"#), chunkSize: 16)
        XCTAssertThrowsError(try readAll(path, other))
        XCTAssertEqual(try readAll(path, format), data)
    }

    func testNamesAreKeyedAndHideTheDigest() throws {
        let digest = BlobDigest(bytes: Array(repeating: 7, count: 20))
        let a = EncryptedBlobFileFormat(key: key).fileName(forDigest: digest)
        let b = EncryptedBlobFileFormat(key: try EncryptionKey(jsonText: #"{"password":"other"}"#)).fileName(forDigest: digest)
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(a, EncryptedBlobFileFormat(key: key).fileName(forDigest: digest), "deterministic: dedup works")
        XCTAssertFalse(a.uppercased().contains(digest.hex.uppercased()))
        XCTAssertEqual(a.utf8.count, 64 + 5)
    }
}
