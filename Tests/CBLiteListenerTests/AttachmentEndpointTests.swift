import CBLiteBase
import CouchWire
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
        // Text is kept gzip-encoded as CouchDB keeps it: its digest is the MD5 of that form.
        let md5 = Base64.encode(MD5.hash(try c.request("GET", "/db/doc/note.txt", headers: [("Accept-Encoding", "gzip")]).body))
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

    func testCompressibleTypesAreKeptGzipEncodedAsCouchDB() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        let text = Array(String(repeating: "The quick brown fox jumps over the lazy dog.\n", count: 50).utf8)
        let rev = try c.request("PUT", "/db/d/r.txt", headers: [("Content-Type", "text/plain")], body: text).object["rev"]!.stringValue!
        XCTAssertEqual(try c.request("PUT", "/db/d/b.bin?rev=\(rev)", headers: [("Content-Type", "application/octet-stream")], body: text).status, 201)
        let stubs = try c.request("GET", "/db/d?att_encoding_info=true").object["_attachments"]!.objectValue!
        let r = stubs["r.txt"]!.objectValue!
        XCTAssertEqual(r["encoding"], .string("gzip"))
        let encodedLength = try XCTUnwrap(r["encoded_length"]?.intValue)
        XCTAssertLessThan(encodedLength, Int64(text.count))
        XCTAssertNil(stubs["b.bin"]!.objectValue!["encoding"])
        XCTAssertNil(try c.request("GET", "/db/d").object["_attachments"]!.objectValue!["r.txt"]!.objectValue!["encoding"])
        // Decoded for a client that does not take gzip (a Range ignored); the stored form for one that does.
        let plain = try c.request("GET", "/db/d/r.txt", headers: [("Range", "bytes=0-3")])
        XCTAssertEqual(plain.status, 200)
        XCTAssertEqual(plain.body, text)
        XCTAssertEqual(plain.header("Accept-Ranges"), "none")
        let gz = try c.request("GET", "/db/d/r.txt", headers: [("Accept-Encoding", "gzip")])
        XCTAssertEqual(gz.header("Content-Encoding"), "gzip")
        XCTAssertEqual(Int64(gz.body.count), encodedLength)
        XCTAssertEqual(r["digest"], .string("md5-" + Base64.encode(MD5.hash(gz.body))), "CouchDB's digest: the MD5 of what it stores")
        XCTAssertEqual(gz.header("ETag"), plain.header("ETag"))
        let inflater = try GzipInflater(maxOutput: 1 << 20)
        var back: [UInt8] = []
        try inflater.inflate(gz.body) { back += $0 }
        XCTAssertEqual(back, text)
        // Inline data is the content, or its gzip form for X-CouchDB-Send-Encoded-Atts.
        let inline = try c.request("GET", "/db/d?attachments=true").object["_attachments"]!.objectValue!["r.txt"]!.objectValue!
        XCTAssertEqual(inline["data"], .string(Base64.encode(text)))
        let sent = try c.request("GET", "/db/d?attachments=true", headers: [("X-CouchDB-Send-Encoded-Atts", "true")])
            .object["_attachments"]!.objectValue!["r.txt"]!.objectValue!
        XCTAssertEqual(sent["data"], .string(Base64.encode(gz.body)))
        XCTAssertEqual(sent["encoding"], .string("gzip"))

        // The [attachments] settings: compression off from then on.
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/attachments/compression_level", #""0""#).status, 200)
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/attachments/compression_level", #""12""#).status, 400)
        let d2 = try c.request("PUT", "/db/d2/r.txt", headers: [("Content-Type", "text/plain")], body: text)
        XCTAssertEqual(d2.status, 201)
        XCTAssertNil(try c.request("GET", "/db/d2?att_encoding_info=true").object["_attachments"]!.objectValue!["r.txt"]!.objectValue!["encoding"])
    }

    func testFormUploadAndFeedsInCouchDBsForm() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        let rev1 = try c.json("PUT", "/db/page", #"{"title":"t"}"#).object["rev"]!.stringValue!
        // A browser form: _rev, then a file in the _attachments field.
        let b = "----form7d1a"
        let form = Array(("--\(b)\r\nContent-Disposition: form-data; name=\"_rev\"\r\n\r\n\(rev1)\r\n"
            + "--\(b)\r\nContent-Disposition: form-data; name=\"_attachments\"; filename=\"photo.png\"\r\nContent-Type: image/png\r\n\r\n"
            + "PNGDATA\r\n--\(b)--\r\n").utf8)
        let posted = try c.request("POST", "/db/page", headers: [("Content-Type", "multipart/form-data; boundary=\(b)")], body: form)
        XCTAssertEqual(posted.status, 201)
        XCTAssertTrue(posted.object["rev"]?.stringValue?.hasPrefix("2-") == true)
        let doc = try c.request("GET", "/db/page").object
        XCTAssertEqual(doc["title"], .string("t"))
        XCTAssertEqual(doc["_attachments"]?.objectValue?["photo.png"]?.objectValue?["content_type"], .string("image/png"))
        XCTAssertEqual(try c.request("GET", "/db/page/photo.png").body, Array("PNGDATA".utf8))
        XCTAssertEqual(try c.request("POST", "/db/page", headers: [("Content-Type", "application/json")], body: Array("{}".utf8)).status, 415)

        // _all_docs and _changes with include_docs: CouchDB's digests, and the content with attachments=true.
        let md5 = JSONValue.string("md5-" + Base64.encode(MD5.hash(Array("PNGDATA".utf8))))
        let all = try c.request("GET", "/db/_all_docs?include_docs=true").object["rows"]!.arrayValue!
        XCTAssertEqual(all[0].objectValue?["doc"]?.objectValue?["_attachments"]?.objectValue?["photo.png"]?.objectValue?["digest"], md5)
        let allInline = try c.request("GET", "/db/_all_docs?include_docs=true&attachments=true").object["rows"]!.arrayValue!
        XCTAssertEqual(allInline[0].objectValue?["doc"]?.objectValue?["_attachments"]?.objectValue?["photo.png"]?.objectValue?["data"],
                       .string(Base64.encode(Array("PNGDATA".utf8))))
        let changes = try c.request("GET", "/db/_changes?include_docs=true&attachments=true").object["results"]!.arrayValue!
        let att = changes[0].objectValue?["doc"]?.objectValue?["_attachments"]?.objectValue?["photo.png"]?.objectValue
        XCTAssertEqual(att?["digest"], md5)
        XCTAssertEqual(att?["data"], .string(Base64.encode(Array("PNGDATA".utf8))))
    }
}
