import CBLiteBase
@testable import CouchWire
import XCTest

final class MultipartTests: XCTestCase {
    struct Part: Equatable { var headers: PartHeaders; var content: [UInt8] }

    /// Parses `body` fed in pieces of `chunk` bytes.
    func parse(_ body: [UInt8], boundary: String, chunk: Int) throws -> [Part] {
        var p = try MultipartParser(boundary: boundary)
        var parts: [Part] = []
        var i = 0
        var ended = false
        while i < body.count {
            let piece = body[i..<min(body.count, i + chunk)]
            i += chunk
            for e in try p.feed(piece) {
                switch e {
                case .partBegin(let h): parts.append(Part(headers: h, content: []))
                case .body(let b): parts[parts.count - 1].content += b
                case .partEnd: break
                case .end: ended = true
                }
            }
        }
        try p.finish()
        XCTAssertTrue(ended)
        return parts
    }

    /// Every multipart body of the recordings parses into the parts the recorder saw
    /// (count, headers, MD5 of each part), whatever the chunking.
    func testRecordedMultipartBodiesParseLikeTheRecorderSawThem() throws {
        var checked = 0
        for file in ["client-shapes.jsonl", "push-by-couchdb.jsonl", "pull-by-couchdb.jsonl"] {
            for x in try RecordedExchange.load(file) {
                for message in [x.request, x.response] {
                    guard let expected = message["multipart"]?.arrayValue,
                          let ct = RecordedExchange.header(message, "Content-Type"), let type = MediaType(ct),
                          let boundary = type.parameter("boundary") else { continue }
                    let body = RecordedExchange.body(message)
                    for chunk in [1, 7, 100, 4096, body.count] {
                        let parts = try parse(body, boundary: boundary, chunk: chunk)
                        XCTAssertEqual(parts.count, expected.count, "\(file) #\(x.seq) chunk \(chunk)")
                        for (p, e) in zip(parts, expected) {
                            let e = e.objectValue!
                            XCTAssertEqual(p.content.count, Int(e["length"]!.intValue!), "\(file) #\(x.seq)")
                            XCTAssertEqual(Base64.encode(MD5.hash(p.content)), e["md5_base64"]!.stringValue!)
                            let hs = e["headers"]!.arrayValue!.map { ($0.arrayValue![0].stringValue!, $0.arrayValue![1].stringValue!) }
                            XCTAssertEqual(p.headers, PartHeaders(hs.map { (name: $0.0, value: $0.1) }))
                            // Nested multipart/related inside _bulk_get's and open_revs' multipart/mixed.
                            if let nested = e["parts"]?.arrayValue, let inner = p.headers.contentType?.parameter("boundary") {
                                let innerParts = try parse(p.content, boundary: inner, chunk: chunk)
                                XCTAssertEqual(innerParts.count, nested.count)
                                for (ip, ie) in zip(innerParts, nested) {
                                    XCTAssertEqual(Base64.encode(MD5.hash(ip.content)), ie.objectValue!["md5_base64"]!.stringValue!)
                                }
                            }
                        }
                    }
                    checked += 1
                }
            }
        }
        XCTAssertGreaterThanOrEqual(checked, 10, "expected the recordings' multipart bodies")
    }

    func testWriterRoundTripsAndEndsWithoutCRLFAfterTheClosingDelimiter() throws {
        var w = MultipartWriter()
        let json = Array(#"{"_id":"a","_attachments":{"x.bin":{"follows":true}}}"#.utf8)
        var binary = (0..<70_000).map { UInt8($0 % 251) }
        // Content that contains a near-delimiter must survive.
        binary.replaceSubrange(100..<104, with: Array("\r\n--".utf8))
        var body = w.part([("Content-Type", "application/json")], json)
        body += w.beginPart([("Content-Disposition", "attachment; filename=\"x.bin\""), ("Content-Type", "application/octet-stream")])
        body += binary
        body += w.close()
        XCTAssertTrue(body.suffix(2 + w.boundary.utf8.count + 2).elementsEqual(Array("--\(w.boundary)--".utf8)))
        XCTAssertEqual(MediaType(w.contentType("related"))?.parameter("boundary"), w.boundary)
        for chunk in [1, 3, 64, 65536] {
            let parts = try parse(body, boundary: w.boundary, chunk: chunk)
            XCTAssertEqual(parts.count, 2)
            XCTAssertEqual(parts[0].content, json)
            XCTAssertEqual(parts[1].content, binary)
            XCTAssertEqual(parts[1].headers.filename, "x.bin")
        }
    }

    func testAcceptsPreambleAndCRLFAfterClose() throws {
        let body = Array("\r\n--b\r\nContent-Type: application/json\r\n\r\n{}\r\n--b\r\n\r\nraw\r\n--b--\r\n".utf8)
        let parts = try parse(body, boundary: "b", chunk: 2)
        XCTAssertEqual(parts.map(\.content), [Array("{}".utf8), Array("raw".utf8)])
        XCTAssertEqual(parts[1].headers, PartHeaders())
    }

    func testMalformedBodiesAreErrorsNotCrashes() throws {
        // Never closed.
        var p = try MultipartParser(boundary: "b")
        _ = try p.feed(Array("--b\r\n\r\nabc".utf8))
        XCTAssertThrowsError(try p.finish())
        // Garbage after a delimiter.
        p = try MultipartParser(boundary: "b")
        XCTAssertThrowsError(try p.feed(Array("--bXY\r\n\r\n".utf8)))
        // Headers without a colon.
        p = try MultipartParser(boundary: "b")
        XCTAssertThrowsError(try p.feed(Array("--b\r\nnocolon\r\n\r\nx\r\n--b--".utf8)))
        // Endless headers.
        p = try MultipartParser(boundary: "b", maxHeaderBytes: 100)
        XCTAssertThrowsError(try p.feed(Array("--b\r\n".utf8) + [UInt8](repeating: 65, count: 200))) { e in
            XCTAssertEqual(CouchError.from(e).status, 413)
        }
        // No boundary at all: nothing, and finish fails.
        p = try MultipartParser(boundary: "b")
        XCTAssertEqual(try p.feed(Array("just some text".utf8)), [])
        XCTAssertThrowsError(try p.finish())
        XCTAssertThrowsError(try MultipartParser(boundary: ""))
    }

    func testBodyIsStreamedInBoundedPieces() throws {
        var p = try MultipartParser(boundary: "b")
        _ = try p.feed(Array("--b\r\n\r\n".utf8))
        var total = 0
        for _ in 0..<100 {
            for e in try p.feed([UInt8](repeating: 120, count: 10_000)) {
                if case .body(let b) = e { total += b.count; XCTAssertLessThanOrEqual(b.count, 10_010) }
            }
        }
        XCTAssertGreaterThan(total, 999_000)       // all but a delimiter's length already out
    }

    func testMediaTypeParsing() {
        let t = MediaType(#"multipart/mixed; boundary="--0b2e"; charset=utf-8"#)!
        XCTAssertEqual(t.type, "multipart/mixed")
        XCTAssertEqual(t.parameter("boundary"), "--0b2e")
        XCTAssertEqual(t.parameter("CHARSET"), "utf-8")
        XCTAssertEqual(MediaType("multipart/related; boundary=--a7b6")!.parameter("boundary"), "--a7b6")
        XCTAssertEqual(MediaType(#"application/json; error="true""#)!.parameter("error"), "true")
        XCTAssertNil(MediaType("nonsense"))
        XCTAssertEqual(PartHeaders([("Content-Disposition", #"attachment; filename="a b.txt""#)]).filename, "a b.txt")
    }
}
