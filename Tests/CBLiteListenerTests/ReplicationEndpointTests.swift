import CBLiteCore
@testable import CBLiteListener
import CouchWire
import XCTest

/// The requests CouchDB 3.5's replicator makes of a peer, with bodies from the recordings.
final class ReplicationEndpointTests: ListenerTestCase {
    func recorded(_ file: String, _ seq: Int) throws -> (headers: [(String, String)], body: [UInt8]) {
        let path = ReplayFiles.directory + "/" + file
        guard let f = fopen(path, "r") else { throw ReplayFiles.Missing(what: path) }
        defer { fclose(f) }
        var line: UnsafeMutablePointer<CChar>? = nil
        var cap = 0
        defer { free(line) }
        while getline(&line, &cap, f) > 0 {
            let o = try JSONParser.parseObject(String(cString: line!))
            guard o["seq"]?.intValue == Int64(seq), let req = o["request"]?.objectValue else { continue }
            let text = req["body"]?.stringValue ?? ""
            let body = req["body_encoding"]?.stringValue == "base64" ? Base64.decode(text)! : Array(text.utf8)
            let headers = req["headers"]!.arrayValue!.map { ($0.arrayValue![0].stringValue!, $0.arrayValue![1].stringValue!) }
            return (headers.filter { ["content-type"].contains($0.0.lowercased()) }, body)
        }
        throw ReplayFiles.Missing(what: "exchange \(seq) of \(path)")
    }

    func testPushOfAGzipAttachmentAsCouchDBSendsIt() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/dst").status, 201)
        // push-by-couchdb #14: PUT att-text?new_edits=false, multipart/related with a gzip part.
        let (headers, body) = try recorded("push-by-couchdb.jsonl", 14)
        let r = try c.request("PUT", "/dst/att-text?new_edits=false", headers: headers, body: body)
        XCTAssertEqual(r.status, 201, r.text)
        XCTAssertEqual(r.object["rev"], .string("1-1e1b6dfb2145bc326409e05b4222068f"))
        let text = try c.request("GET", "/dst/att-text/readme.txt")
        XCTAssertEqual(text.status, 200)
        XCTAssertEqual(text.body.count, 4620)
        XCTAssertTrue(text.text.hasPrefix("Line 001: The quick brown fox"))
        // Read back as a replicator would: open_revs with multipart/mixed and attachments.
        let mixed = try c.request("GET", "/dst/att-text?open_revs=all&revs=true&latest=true&attachments=true",
                                  headers: [("Accept", "multipart/mixed")])
        XCTAssertEqual(mixed.status, 200)
        let type = MediaType(mixed.header("Content-Type")!)!
        XCTAssertEqual(type.type, "multipart/mixed")
        var p = try MultipartParser(boundary: type.parameter("boundary")!)
        var parts: [(PartHeaders, [UInt8])] = []
        for e in try p.feed(mixed.body) {
            if case .partBegin(let h) = e { parts.append((h, [])) }
            if case .body(let b) = e { parts[parts.count - 1].1 += b }
        }
        try p.finish()
        XCTAssertFalse(mixed.body.suffix(2) == [13, 10], "no CRLF after the closing delimiter")
        XCTAssertEqual(parts.count, 1)
        let inner = MediaType(parts[0].0["Content-Type"]!)!
        XCTAssertEqual(inner.type, "multipart/related")
        var q = try MultipartParser(boundary: inner.parameter("boundary")!)
        var innerParts: [(PartHeaders, [UInt8])] = []
        for e in try q.feed(parts[0].1) {
            if case .partBegin(let h) = e { innerParts.append((h, [])) }
            if case .body(let b) = e { innerParts[innerParts.count - 1].1 += b }
        }
        XCTAssertEqual(innerParts.count, 2)
        let doc = try innerParts[0].1.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
        let entry = doc["_attachments"]?.objectValue?["readme.txt"]?.objectValue
        XCTAssertEqual(entry?["follows"], .bool(true))
        // Text travels gzip-encoded, as CouchDB sends it: the same bytes CouchDB pushed (its
        // digest, the MD5 of that form, again), decoding to the content.
        XCTAssertEqual(entry?["encoding"], .string("gzip"))
        XCTAssertEqual(innerParts[1].0["Content-Encoding"], "gzip")
        XCTAssertEqual(entry?["digest"], .string("md5-" + Base64.encode(MD5.hash(innerParts[1].1))))
        XCTAssertEqual(entry?["digest"], .string("md5-0iQKX1Z9sM7xF8XA5kl3qA=="), "CouchDB's digest of readme.txt")
        let inflater = try GzipInflater(maxOutput: 1 << 20)
        var decoded: [UInt8] = []
        try inflater.inflate(innerParts[1].1) { decoded += $0 }
        XCTAssertEqual(decoded, text.body)
    }

    func testRevsDiffBulkDocsAndBulkGet() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/dst").status, 201)
        let push = #"{"new_edits":false,"docs":[{"_id":"conflicted","_rev":"2-a43763cb6510199739a3d88e72322572","value":"here","_revisions":{"start":2,"ids":["a43763cb6510199739a3d88e72322572","d3be72beae043af6e69cf3f780dc4ced"]}},{"_id":"conflicted","_rev":"2-0123456789abcdef0123456789abcdef","value":"there","_revisions":{"start":2,"ids":["0123456789abcdef0123456789abcdef","d3be72beae043af6e69cf3f780dc4ced"]}}]}"#
        let bulk = try c.json("POST", "/dst/_bulk_docs", push)
        XCTAssertEqual(bulk.status, 201)
        XCTAssertEqual(bulk.json, .array([]))
        let diff = try c.json("POST", "/dst/_revs_diff", #"{"conflicted":["2-a43763cb6510199739a3d88e72322572","3-00000000000000000000000000000002"],"new":["1-00000000000000000000000000000003"]}"#).object
        XCTAssertEqual(diff["conflicted"]?.objectValue?["missing"], .array([.string("3-00000000000000000000000000000002")]))
        XCTAssertEqual(diff["conflicted"]?.objectValue?["possible_ancestors"]?.arrayValue?.count, 2)
        XCTAssertEqual(diff["new"]?.objectValue?["missing"], .array([.string("1-00000000000000000000000000000003")]))
        XCTAssertNil(diff["new"]?.objectValue?["possible_ancestors"])
        // The winner is the higher revision ID, as CouchDB.
        XCTAssertEqual(try c.request("GET", "/dst/conflicted?conflicts=true").object["_rev"], .string("2-a43763cb6510199739a3d88e72322572"))
        let newEdits = try c.json("POST", "/dst/_bulk_docs", #"{"docs":[{"_id":"conflicted","x":1},{"_id":"fresh"}]}"#).json!.arrayValue!
        XCTAssertEqual(newEdits[0].objectValue?["error"], .string("conflict"))
        XCTAssertEqual(newEdits[1].objectValue?["ok"], .bool(true))
        let aon = try c.json("POST", "/dst/_bulk_docs", #"{"all_or_nothing":true,"docs":[{"_id":"x"}]}"#)
        XCTAssertEqual(aon.status, 417, "CouchDB 3's answer: every document refused")
        XCTAssertEqual(aon.json?.arrayValue?.first?.objectValue?["error"], .string("not_implemented"))
        let get = try c.json("POST", "/dst/_bulk_get?revs=true", #"{"docs":[{"id":"conflicted","rev":"2-0123456789abcdef0123456789abcdef"},{"id":"nope"},{"id":"fresh","rev":"9-0000"}]}"#).object
        let results = get["results"]!.arrayValue!
        XCTAssertEqual(results.count, 3)
        let ok = results[0].objectValue?["docs"]?.arrayValue?[0].objectValue?["ok"]?.objectValue
        XCTAssertEqual(ok?["value"], .string("there"))
        XCTAssertEqual(ok?["_revisions"]?.objectValue?["start"], .int(2))
        let missingDoc = results[1].objectValue?["docs"]?.arrayValue?[0].objectValue?["error"]?.objectValue
        XCTAssertEqual(missingDoc?["error"], .string("not_found"))
        XCTAssertEqual(missingDoc?["rev"], .string("undefined"))
        // JSON when the client takes JSON only (CouchDB answers multipart/mixed otherwise).
        let jsonOnly = [("Accept", "application/json")]
        let openRevs = try c.request("GET", "/dst/conflicted?open_revs=all&revs=true", headers: jsonOnly).json?.arrayValue
        XCTAssertEqual(openRevs?.count, 2)
        let multipart = try c.request("GET", "/dst/conflicted?open_revs=all&revs=true")
        XCTAssertTrue(multipart.header("Content-Type")?.hasPrefix("multipart/mixed") == true)
        let some = try c.request("GET", "/dst/conflicted?open_revs=%5B%222-a43763cb6510199739a3d88e72322572%22%2C%229-00%22%5D",
                                 headers: jsonOnly).json?.arrayValue
        XCTAssertEqual(some?[1].objectValue?["missing"], .string("9-00"))
    }
}

/// The CouchDB 3.5 recordings, part of the repository (Tests/Fixtures/couchdb-3.5).
enum ReplayFiles {
    /// Tests/CBLiteListenerTests/ReplicationEndpointTests.swift -> Tests/Fixtures/couchdb-3.5.
    static let directory = "/" + #filePath.split(separator: "/").dropLast(2).joined(separator: "/") + "/Fixtures/couchdb-3.5"

    /// A missing recording fails the test: a skip would pass without checking anything.
    struct Missing: Error, CustomStringConvertible {
        let what: String
        var description: String { "CouchDB recording missing: \(what)" }
    }
}

final class MultipartNewEditsTests: ListenerTestCase {
    /// A multipart/related PUT without new_edits=false makes a new revision whose
    /// attachment is the streamed part.
    func testMultipartPutMakesANewRevision() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        var w = MultipartWriter()
        let content = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 31) }
        var body = w.part([("Content-Type", "application/json")],
                          Array(#"{"title":"with file","_attachments":{"f.bin":{"follows":true,"content_type":"application/x-test","length":100000}}}"#.utf8))
        body += w.beginPart([("Content-Disposition", "attachment; filename=\"f.bin\"")]) + content + w.close()
        let r = try c.request("PUT", "/db/mp", headers: [("Content-Type", w.contentType("related"))], body: body)
        XCTAssertEqual(r.status, 201, r.text)
        XCTAssertTrue(r.object["rev"]?.stringValue?.hasPrefix("1-") == true)
        let att = try c.request("GET", "/db/mp/f.bin")
        XCTAssertEqual(att.body, content)
        XCTAssertEqual(att.header("Content-Type"), "application/x-test")
        XCTAssertEqual(try c.request("GET", "/db/mp").object["title"], .string("with file"))
        // A part missing for a "follows" entry is a 400.
        var w2 = MultipartWriter()
        let short = w2.part([("Content-Type", "application/json")], Array(#"{"_attachments":{"g":{"follows":true}}}"#.utf8)) + w2.close()
        XCTAssertEqual(try c.request("PUT", "/db/mp2", headers: [("Content-Type", w2.contentType("related"))], body: short).status, 400)
    }
}
