import CBLiteBase
import XCTest
@testable import CBLiteListener

/// Attachments over HTTP as CouchDB 3.5 answers them: MD5 digests and ETags, CouchDB's stub
/// forms and refusals, the stored Content-Type parameters, ranges.
final class AttachmentEndpointTests: ListenerTestCase {
    func testDigestsETagsAndStubsAsCouchDB() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        let text = Array("Grüße\n".utf8)
        let put = try c.request("PUT", "/db/doc/note.txt", headers: [("Content-Type", "text/plain; charset=utf-8")], body: text)
        XCTAssertEqual(put.status, 201)
        let rev1 = put.object["rev"]!.stringValue!
        let md5 = Base64.encode(MD5.hash(text))
        // The stub's digest is CouchDB's; our SHA-1 and "md5" member stay inside.
        let stub = try c.request("GET", "/db/doc").object["_attachments"]?.objectValue?["note.txt"]?.objectValue
        XCTAssertEqual(stub?["digest"], .string("md5-" + md5))
        XCTAssertNil(stub?["md5"])
        // The attachment: its ETag the quoted base64 MD5, its type with the charset it was stored with.
        let got = try c.request("GET", "/db/doc/note.txt")
        XCTAssertEqual(got.body, text)
        XCTAssertEqual(got.header("ETag"), "\"\(md5)\"")
        XCTAssertEqual(got.header("Content-Type"), "text/plain; charset=utf-8")
        XCTAssertEqual(try c.request("GET", "/db/doc/note.txt", headers: [("If-None-Match", "\"\(md5)\"")]).status, 304)
        // {"stub":true} alone keeps it; a revpos it does not have is 412 missing_stub.
        let kept = try c.json("PUT", "/db/doc", #"{"_rev":"\#(rev1)","v":2,"_attachments":{"note.txt":{"stub":true}}}"#)
        XCTAssertEqual(kept.status, 201)
        let rev2 = kept.object["rev"]!.stringValue!
        let bad = try c.json("PUT", "/db/doc", #"{"_rev":"\#(rev2)","_attachments":{"note.txt":{"stub":true,"revpos":99}}}"#)
        XCTAssertEqual(bad.status, 412)
        XCTAssertEqual(bad.object["error"], .string("missing_stub"))
        XCTAssertEqual(bad.object["reason"], .string("Invalid attachment stub in doc for note.txt"))
        // Reserved names and IDs, a missing attachment.
        XCTAssertEqual(try c.request("PUT", "/db/doc/_x?rev=\(rev2)", body: [1]).status, 400)
        XCTAssertEqual(try c.request("PUT", "/db/_x/a", body: [1]).object["error"], .string("illegal_docid"))
        XCTAssertEqual(try c.request("PUT", "/db/_local/x/a", body: [1]).object["reason"], .string("_local documents do not accept attachments."))
        let missing = try c.request("DELETE", "/db/doc/nope?rev=\(rev2)")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(missing.object["reason"], .string("Document is missing attachment"))
        XCTAssertEqual(try c.request("DELETE", "/db/doc/note.txt?rev=\(rev1)").status, 409)
    }

    func testRanges() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        let bytes = (0..<100).map { UInt8($0) }
        XCTAssertEqual(try c.request("PUT", "/db/d/b.bin", headers: [("Content-Type", "application/octet-stream")], body: bytes).status, 201)
        let one = try c.request("GET", "/db/d/b.bin", headers: [("Range", "bytes=10-12")])
        XCTAssertEqual(one.status, 206)
        XCTAssertEqual(one.body, [10, 11, 12])
        // A malformed range is ignored, as CouchDB; several give multipart/byteranges.
        XCTAssertEqual(try c.request("GET", "/db/d/b.bin", headers: [("Range", "abc")]).status, 200)
        let two = try c.request("GET", "/db/d/b.bin", headers: [("Range", "bytes=0-1,4-5")])
        XCTAssertEqual(two.status, 206)
        XCTAssertTrue(two.header("Content-Type")?.hasPrefix("multipart/byteranges; boundary=") == true)
        XCTAssertTrue(String(decoding: two.body, as: UTF8.self).contains("Content-Range: bytes 4-5/100"))
        XCTAssertEqual(try c.request("GET", "/db/d/b.bin", headers: [("Range", "bytes=500-")]).status, 416)
    }
}
