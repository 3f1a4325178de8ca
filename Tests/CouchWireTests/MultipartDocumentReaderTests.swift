import CBLiteBase
@testable import CouchWire
import XCTest

/// An attachment part must match what the document's JSON declares of it, and nothing
/// is stored before the whole body has arrived and checked.
final class MultipartDocumentReaderTests: XCTestCase {
    /// gzip of 256 KiB of zeros (Python: gzip.compress(b"\0" * 262144, 9, mtime=0)).
    static let gzippedZeros = Base64.decode("H4sIAAAAAAACA+3BMQEAAADCoPVP7W0HoA" + String(repeating: "A", count: 338) + "3gAi6g7iAAAEAA==")!

    /// A document with one attachment part `content`, its JSON declaring `entry`.
    func body(_ entry: String, _ content: [UInt8], partHeaders: [(String, String)] = []) -> (boundary: String, bytes: [UInt8]) {
        var mp = MultipartWriter(boundary: "b0undary")
        let json = #"{"_id":"d","_rev":"1-a","_attachments":{"a.bin":{"follows":true,"content_type":"application/octet-stream","#
            + entry + "}}}"
        var bytes = mp.part([("Content-Type", "application/json")], Array(json.utf8))
        bytes += mp.part([("Content-Disposition", "attachment; filename=\"a.bin\"")] + partHeaders, content)
        bytes += mp.close()
        return ("b0undary", bytes)
    }

    /// Reads `body` into `store`; the reader's outcome.
    func read(_ body: (boundary: String, bytes: [UInt8]), into store: MemoryAttachmentStore, upTo end: Int? = nil) throws -> [String: BlobInfo] {
        var parser = try MultipartParser(boundary: body.boundary)
        let reader = MultipartDocumentReader(maxDocumentBytes: 1 << 20, maxAttachmentBytes: 1 << 30, makeWriter: store.makeWriter)
        let bytes = body.bytes[..<(end ?? body.bytes.count)]
        var i = bytes.startIndex
        while i < bytes.endIndex {        // in small pieces, as a network would deliver them
            for e in try parser.feed(bytes[i..<min(i + 7, bytes.endIndex)]) { try reader.handle(e) }
            i += 7
        }
        if end != nil { return [:] }      // the client went away: the reader is dropped unfinished
        try parser.finish()
        return try reader.finish().attachments
    }

    func md5(_ b: [UInt8]) -> String { "md5-" + Base64.encode(MD5.hash(b)) }

    func testMatchingLengthsAndDigestsAreStored() throws {
        let content = Array("hello, attachment".utf8)
        for entry in [#""length":17"#, #""length":17,"digest":"\#(md5(content))""#,
                      #""length":17,"digest":"\#(BlobDigest.of(content).string)""#, #""digest":"sha256-whatever""#] {
            let store = MemoryAttachmentStore()
            let atts = try read(body(entry, content), into: store)
            XCTAssertEqual(atts["a.bin"]?.length, 17, entry)
            XCTAssertEqual(store.blobs.values.first, content, entry)
        }
    }

    func testMismatchesAre400AndStoreNothing() throws {
        let content = Array("hello, attachment".utf8)
        for (entry, what) in [(#""length":18"#, "shorter than declared"), (#""length":16"#, "longer than declared"),
                              (#""length":17,"digest":"\#(md5(Array("other".utf8)))""#, "another md5"),
                              (#""length":17,"digest":"\#(BlobDigest.of(Array("other".utf8)).string)""#, "another sha1"),
                              (#""length":-1"#, "a negative length"), (#""digest":"md5-!!""#, "a malformed md5")] {
            let store = MemoryAttachmentStore()
            XCTAssertThrowsError(try read(body(entry, content), into: store), what) { e in
                XCTAssertEqual((e as? CouchError)?.status, 400, "\(what): \(e)")
            }
            XCTAssertTrue(store.blobs.isEmpty, what)
        }
    }

    /// A gzip part: `encoded_length` and the md5 are of the bytes sent, `length` of the content.
    func testGzipPartsAreCheckedAsSentAndAsDecoded() throws {
        let gz = Self.gzippedZeros
        let good = #""encoding":"gzip","length":262144,"encoded_length":\#(gz.count),"digest":"\#(md5(gz))""#
        let store = MemoryAttachmentStore()
        XCTAssertEqual(try read(body(good, gz), into: store)["a.bin"]?.length, 262144)
        for entry in [#""encoding":"gzip","length":262145"#, #""encoding":"gzip","encoded_length":\#(gz.count + 1)"#,
                      #""encoding":"gzip","digest":"\#(md5(Array(repeating: 0, count: 262144)))""#] {
            let store = MemoryAttachmentStore()
            XCTAssertThrowsError(try read(body(entry, gz), into: store), entry)
            XCTAssertTrue(store.blobs.isEmpty, entry)
        }
    }

    /// Parts already complete are not stored either when the body stops before its end.
    func testABodyCutShortStoresNothing() throws {
        var mp = MultipartWriter(boundary: "b0undary")
        var bytes = mp.part([("Content-Type", "application/json")],
                            Array(#"{"_id":"d","_rev":"1-a","_attachments":{"one":{"follows":true},"two":{"follows":true}}}"#.utf8))
        bytes += mp.part([], Array("first".utf8))
        let cut = bytes.count + 20
        bytes += mp.part([], Array(repeating: 7, count: 100))
        bytes += mp.close()
        let store = MemoryAttachmentStore()
        _ = try read(("b0undary", bytes), into: store, upTo: cut)
        XCTAssertTrue(store.blobs.isEmpty)
        XCTAssertThrowsError(try read(("b0undary", Array(bytes[..<cut])), into: store))    // and an early end is an error
        XCTAssertTrue(store.blobs.isEmpty)
    }

    /// A bomb never inflates at once: each piece is at most 64 KiB, whatever one input holds.
    func testGzipInflatesInBoundedPieces() throws {
        let inflater = try GzipInflater(maxOutput: 1 << 20)
        try inflater.feed(Self.gzippedZeros)
        var pieces: [Int] = []
        while let p = try inflater.next() { pieces.append(p.count) }
        try inflater.finish()
        XCTAssertEqual(pieces.reduce(0, +), 262144)
        XCTAssertGreaterThanOrEqual(pieces.count, 4)
        XCTAssertTrue(pieces.allSatisfy { $0 <= GzipInflater.pieceSize }, "\(pieces)")
        let small = try GzipInflater(maxOutput: 100_000)
        XCTAssertThrowsError(try small.inflate(Self.gzippedZeros) { _ in }) { e in XCTAssertEqual((e as? CouchError)?.status, 413) }
    }
}
