import XCTest
@testable import CBLiteCore

/// CouchDB's form of attachments kept beside ours: the MD5 (CouchDB's digest) in each stub,
/// and for the types a database compresses a gzip form stored as content of its own.
final class AttachmentCouchFormTests: CBLTestCase {
    /// A stand-in for gzip (the engine has no zlib): "Z" then the content reversed.
    struct Reverser: AttachmentCompressor {
        func gzip(level: Int, from source: any AttachmentSource, to sink: any AttachmentSink) throws {
            var all: [UInt8] = []
            while case let piece = try source.read(max: 7), !piece.isEmpty { all += piece }
            try sink.write([UInt8(ascii: "Z")] + all.reversed())
        }
    }

    func encoded(_ bytes: [UInt8]) -> [UInt8] { [UInt8(ascii: "Z")] + bytes.reversed() }
    func md5(_ bytes: [UInt8]) -> JSONValue { .string("md5-" + Base64.encode(MD5.hash(bytes))) }

    func stub(_ c: Collection, _ id: String, _ name: String) throws -> JSONObject {
        try XCTUnwrap(c.doc(id)["_attachments"]?.objectValue?[name]?.objectValue)
    }

    func testCompressibleTypesGetAGzipFormAndItsMD5() throws {
        let db = try open()
        let c = try db.defaultCollection()
        db.attachmentCompression = AttachmentCompression(compressor: Reverser())
        let text = Array("hello, text".utf8), png = Array("\u{89}PNG".utf8)
        let r1 = try c.put(docID: "d", json: #"{"_attachments":{"a.txt":{"content_type":"text/plain; charset=utf-8","data":"\#(Base64.encode(text))"},"p.png":{"content_type":"image/png","data":"\#(Base64.encode(png))"}}}"#, parent: nil).revID
        let t = try stub(c, "d", "a.txt")
        XCTAssertEqual(t["digest"], .string(BlobDigest.of(text).string))
        XCTAssertEqual(t["length"], .int(Int64(text.count)))
        XCTAssertEqual(t["encoding"], .string("gzip"))
        XCTAssertEqual(t["encoded_length"], .int(Int64(text.count + 1)))
        XCTAssertEqual(t["encoded_digest"], .string(BlobDigest.of(encoded(text)).string))
        XCTAssertEqual(t["md5"], md5(encoded(text)), "CouchDB's digest is the MD5 of the form it stores")
        let p = try stub(c, "d", "p.png")
        XCTAssertNil(p["encoding"])
        XCTAssertEqual(p["md5"], md5(png))
        XCTAssertEqual(try c.attachmentContent(docID: "d", name: "a.txt"), text)

        // Kept as it is by a body-only update and by CouchDB's stub; new content gets its own.
        let r2 = try c.put(docID: "d", json: #"{"v":2}"#, parent: r1).revID
        let r3 = try c.put(docID: "d", json: #"{"v":3,"_attachments":{"a.txt":{"stub":true}}}"#, parent: r2).revID
        XCTAssertEqual(try stub(c, "d", "a.txt"), t)
        db.attachmentCompression = nil
        _ = try c.put(docID: "d", json: #"{"v":4,"_attachments":{"a.txt":{"stub":true},"b.txt":{"content_type":"text/plain","data":"eA=="}}}"#, parent: r3)
        XCTAssertEqual(try stub(c, "d", "a.txt"), t)
        XCTAssertNil(try stub(c, "d", "b.txt")["encoding"], "attached while compression is off: as it is")

        // As CouchDB's peers read it.
        let wire = obj(try c.couchDocumentJSON(try c.get(docID: "d")))["_attachments"]!.objectValue!
        XCTAssertEqual(wire["a.txt"]?.objectValue?["digest"], md5(encoded(text)))
        XCTAssertNil(wire["a.txt"]?.objectValue?["md5"])
        XCTAssertNil(wire["a.txt"]?.objectValue?["encoded_digest"])
        XCTAssertNil(wire["a.txt"]?.objectValue?["encoding"])
        let info = obj(try c.couchDocumentJSON(try c.get(docID: "d"), encodingInfo: true))["_attachments"]!.objectValue!
        XCTAssertEqual(info["a.txt"]?.objectValue?["encoding"], .string("gzip"))
        XCTAssertEqual(info["a.txt"]?.objectValue?["encoded_length"], .int(Int64(text.count + 1)))

        // Through the ABI, following and inline content is the content itself: no encoding shown.
        var follows = RevisionOptions()
        follows.attachments = .follows
        let rev = try c.revision(docID: "d", revID: nil, options: follows)
        XCTAssertEqual(rev.followingAttachments.first { $0.name == "a.txt" }?.encoded?.digest, BlobDigest.of(encoded(text)))
        let entry = obj(rev.json)["_attachments"]!.objectValue!["a.txt"]!.objectValue!
        XCTAssertEqual(entry["follows"], .bool(true))
        XCTAssertNil(entry["encoding"])
        XCTAssertEqual(entry["digest"], .string(BlobDigest.of(text).string))
        // For CouchDB's peers the part goes gzip-encoded, and says so.
        follows.couchDigests = true
        let wireEntry = obj(try c.revision(docID: "d", revID: nil, options: follows).json)["_attachments"]!.objectValue!["a.txt"]!.objectValue!
        XCTAssertEqual(wireEntry["encoding"], .string("gzip"))
        XCTAssertEqual(wireEntry["digest"], md5(encoded(text)))

        // Compaction keeps the gzip form while a kept revision refers to it, then drops it.
        try db.compact()
        XCTAssertTrue(try db.blobStore.contains(BlobDigest.of(encoded(text))))
        _ = try c.put(docID: "d", json: #"{"_attachments":{}}"#, parent: try c.doc("d")["_rev"]!.stringValue!)
        try db.compact()
        XCTAssertFalse(try db.blobStore.contains(BlobDigest.of(encoded(text))))
        XCTAssertFalse(try db.blobStore.contains(BlobDigest.of(text)))
    }

    func testTheSameChangeGetsTheSameRevisionIDWithOrWithoutAGzipForm() throws {
        let plain = try open("plain"), served = try open("served")
        served.attachmentCompression = AttachmentCompression(compressor: Reverser())
        let body = #"{"_attachments":{"a.txt":{"content_type":"text/plain","data":"aGVsbG8="}}}"#
        let r1 = try plain.defaultCollection().put(docID: "d", json: body, parent: nil).revID
        let r2 = try served.defaultCollection().put(docID: "d", json: body, parent: nil).revID
        XCTAssertNotNil(try stub(served.defaultCollection(), "d", "a.txt")["encoding"])
        XCTAssertEqual(r1, r2)
    }

    func testStubsWrittenBeforeTheMD5WasKeptGetItFromTheStore() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let content = Array("older".utf8)
        let d = try db.blobStore.put(content).digest
        // A stub as cblite wrote it before: no md5.
        let old = Array(#"{"_id":"o","_rev":"1-a","_attachments":{"x":{"content_type":"text/plain","digest":"\#(d.string)","length":5,"revpos":1,"stub":true}}}"#.utf8)
        let wire = obj(try c.couchDocumentJSON(old))["_attachments"]!.objectValue!["x"]!.objectValue!
        XCTAssertEqual(wire["digest"], md5(content))
        XCTAssertEqual(try c.couchMD5(AttachmentInfo(name: "x", contentType: "text/plain", digest: d, length: 5, revpos: 1)), MD5.hash(content))
    }
}
