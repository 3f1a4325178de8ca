import CBLiteBase
@testable import CouchWire
import XCTest

/// The gzip form of compressible attachments: byte for byte what CouchDB 3.5 stores (so its
/// MD5, CouchDB's digest, is the same), streamed in bounded pieces, and the type rules.
final class GzipDeflaterTests: XCTestCase {
    final class Source: AttachmentSource {
        var bytes: [UInt8]
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        func read(max: Int) throws -> [UInt8] {
            let n = min(max, bytes.count)
            defer { bytes.removeFirst(n) }
            return Array(bytes[0..<n])
        }
        func close() {}
    }

    final class Sink: AttachmentSink {
        var bytes: [UInt8] = []
        var writes = 0
        var length: UInt64 { UInt64(bytes.count) }
        func write(_ more: [UInt8]) throws { bytes += more; writes += 1 }
        func finish() throws -> BlobInfo { BlobInfo(digest: BlobDigest.of(bytes), length: length) }
        func cancel() {}
    }

    func gzip(_ bytes: [UInt8], level: Int = AttachmentCompression.defaultLevel) throws -> Sink {
        let sink = Sink()
        try GzipDeflater().gzip(level: level, from: Source(bytes), to: sink)
        return sink
    }

    func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let inflater = try GzipInflater(maxOutput: 1 << 30)
        var out: [UInt8] = []
        try inflater.inflate(bytes) { out += $0 }
        try inflater.finish()
        return out
    }

    func testCouchDBsGzipFormOfARecordedTextAttachment() throws {
        // rest-attachments seq 13: readme.txt sent with Accept-Encoding: gzip, as CouchDB stores it.
        let rec = try XCTUnwrap(try RecordedExchange.load("rest-attachments.jsonl").first { $0.seq == 13 })
        let couchGzip = RecordedExchange.body(rec.response)
        XCTAssertEqual(RecordedExchange.header(rec.response, "Content-Encoding"), "gzip")
        let text = try gunzip(couchGzip)
        XCTAssertEqual(text.count, 4620)
        let ours = try gzip(text).bytes
        XCTAssertEqual(ours, couchGzip)
        XCTAssertEqual("\"" + Base64.encode(MD5.hash(ours)) + "\"", RecordedExchange.header(rec.response, "ETag"))
    }

    func testLargeContentStreamsAndRoundTrips() throws {
        var g = SystemRandomNumberGenerator()
        let words = (0..<64).map { _ in String((0..<6).map { _ in Character(UnicodeScalar(UInt8.random(in: 97...122, using: &g))) }) }
        let text = Array((0..<60_000).map { _ in words.randomElement(using: &g)! }.joined(separator: " ").utf8)   // ~420 KB
        let sink = try gzip(text)
        XCTAssertGreaterThan(sink.writes, 1, "written in pieces, not at once")
        XCTAssertLessThan(sink.bytes.count, text.count / 2)
        XCTAssertEqual(try gunzip(sink.bytes), text)
        XCTAssertEqual(try gunzip(try gzip([]).bytes), [])
        XCTAssertEqual(try gunzip(try gzip(text, level: 1).bytes), text)
    }

    func testCompressibleTypes() {
        let c = AttachmentCompression(compressor: GzipDeflater())
        for yes in ["text/plain", "text/plain; charset=utf-8", "TEXT/HTML", "application/json", "application/javascript", "application/xml"] {
            XCTAssertTrue(c.compresses(yes), yes)
        }
        for no in ["image/png", "application/octet-stream", "application/jsonx", "textual/plain"] {
            XCTAssertFalse(c.compresses(no), no)
        }
        XCTAssertFalse(AttachmentCompression(level: 0, compressor: GzipDeflater()).compresses("text/plain"))
        let only = AttachmentCompression(types: " image/svg+xml ,text/csv", compressor: GzipDeflater())
        XCTAssertTrue(only.compresses("image/svg+xml"))
        XCTAssertFalse(only.compresses("text/plain"))
    }
}
