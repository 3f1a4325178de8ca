import CBLiteCore
@testable import CBLiteListener
import XCTest

final class DocumentEndpointTests: ListenerTestCase {
    func testDocumentCRUDWithCouchDBStatuses() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        let created = try c.json("PUT", "/db/doc1", #"{"n":1}"#)
        XCTAssertEqual(created.status, 201)
        XCTAssertEqual(created.object["ok"], .bool(true))
        let rev1 = created.object["rev"]!.stringValue!
        XCTAssertEqual(created.header("ETag"), "\"\(rev1)\"")
        let got = try c.request("GET", "/db/doc1")
        XCTAssertEqual(got.object["n"], .int(1))
        XCTAssertEqual(got.object["_rev"], .string(rev1))
        // Update without the current revision: conflict, as CouchDB.
        let conflict = try c.json("PUT", "/db/doc1", #"{"n":2}"#)
        XCTAssertEqual(conflict.status, 409)
        XCTAssertEqual(conflict.object["error"], .string("conflict"))
        XCTAssertEqual(conflict.object["reason"], .string("Document update conflict."))
        let rev2 = try c.json("PUT", "/db/doc1?rev=\(rev1)", #"{"n":2}"#).object["rev"]!.stringValue!
        XCTAssertEqual(try c.json("PUT", "/db/doc1", #"{"_rev":"\#(rev1)","n":3}"#).status, 409)
        // revs and conflicts.
        let revs = try c.request("GET", "/db/doc1?revs=true&revs_info=true").object
        XCTAssertEqual(revs["_revisions"]?.objectValue?["start"], .int(2))
        XCTAssertEqual(revs["_revs_info"]?.arrayValue?.count, 2)
        XCTAssertEqual(try c.request("GET", "/db/doc1?rev=\(rev1)").object["n"], .int(1))
        // POST creates with a generated ID.
        let posted = try c.json("POST", "/db", #"{"x":true}"#)
        XCTAssertEqual(posted.status, 201)
        XCTAssertNotNil(posted.object["id"]?.stringValue)
        // DELETE needs a rev.
        XCTAssertEqual(try c.request("DELETE", "/db/doc1").status, 409)
        let deleted = try c.request("DELETE", "/db/doc1?rev=\(rev2)")
        XCTAssertEqual(deleted.status, 200)
        let after = try c.request("GET", "/db/doc1")
        XCTAssertEqual(after.status, 404)
        XCTAssertEqual(after.object["reason"], .string("deleted"))
        // The database's counts: doc1 is a tombstone, the posted document lives.
        let info = try c.request("GET", "/db").object
        XCTAssertEqual(info["doc_count"], .int(1))
        XCTAssertEqual(info["doc_del_count"], .int(1))
        let missing = try c.request("GET", "/db/nothing")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(missing.object["reason"], .string("missing"))
        XCTAssertEqual(try c.request("GET", "/nodb/nothing").object["reason"], .string("Database does not exist."))
    }

    /// Design documents are documents over HTTP as in CouchDB (rest-design.jsonl):
    /// PUT/GET/DELETE by "_design/NAME" and "_design%2FNAME" (a GET of which is redirected
    /// to the slash), attachments, COPY, _bulk_docs, _changes, _all_docs (which lists
    /// them, not _local ones), _design_docs (only them).
    func testDesignDocumentsAreStoredAsDocuments() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        let put = try c.json("PUT", "/db/_design/app", #"{"views":{"v":{"map":"function(doc){}"}}}"#)
        XCTAssertEqual(put.status, 201)
        XCTAssertEqual(put.object["id"], .string("_design/app"))
        let rev1 = put.object["rev"]!.stringValue!
        XCTAssertEqual(try c.json("PUT", "/db/_design/app", "{}").status, 409)
        XCTAssertEqual(try c.request("GET", "/db/_design/app").object["_rev"], .string(rev1))
        let redirect = try c.request("GET", "/db/_design%2Fapp?revs=true")
        XCTAssertEqual(redirect.status, 301)
        XCTAssertEqual(redirect.header("Location"), "/db/_design/app?revs=true")
        let escaped = try c.json("PUT", "/db/_design%2Fother", #"{"language":"query"}"#)
        XCTAssertEqual(escaped.object["id"], .string("_design/other"))
        let att = try c.request("PUT", "/db/_design/app/page.html?rev=\(rev1)", headers: [("Content-Type", "text/html")],
                                body: Array("<p>".utf8))
        XCTAssertEqual(att.status, 201)
        let rev2 = att.object["rev"]!.stringValue!
        XCTAssertEqual(try c.request("GET", "/db/_design/app/page.html").body, Array("<p>".utf8))
        let copied = try c.request("COPY", "/db/_design/app", headers: [("Destination", "_design/copy")])
        XCTAssertEqual(copied.status, 201)
        XCTAssertEqual(copied.object["id"], .string("_design/copy"))
        // An illegal ID fails the whole request, as CouchDB's (nothing written).
        let illegal = try c.json("POST", "/db/_bulk_docs", #"{"docs":[{"_id":"plain"},{"_id":"_bad"}]}"#)
        XCTAssertEqual(illegal.status, 400)
        XCTAssertEqual(illegal.object["error"], .string("illegal_docid"))
        XCTAssertEqual(try c.json("GET", "/db/plain").status, 404)
        let bulk = try c.json("POST", "/db/_bulk_docs", #"{"docs":[{"_id":"_design/bulk","v":1},{"_id":"plain"}]}"#)
        XCTAssertEqual(bulk.json?.arrayValue?.map { $0.objectValue?["ok"] == .bool(true) }, [true, true])
        XCTAssertEqual(try c.json("PUT", "/db/_local/cp", "{}").status, 201)
        func ids(_ path: String) throws -> [String] {
            try c.request("GET", path).object["rows"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } ?? []
        }
        XCTAssertEqual(try ids("/db/_all_docs"), ["_design/app", "_design/bulk", "_design/copy", "_design/other", "plain"])
        XCTAssertEqual(try ids("/db/_design_docs"), ["_design/app", "_design/bulk", "_design/copy", "_design/other"])
        let changed = try c.request("GET", "/db/_changes").object["results"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue }
        XCTAssertEqual(changed, ["_design/other", "_design/app", "_design/copy", "_design/bulk", "plain"])   // by last change
        XCTAssertEqual(try c.request("DELETE", "/db/_design/app?rev=\(rev2)").status, 200)
        XCTAssertEqual(try c.request("GET", "/db/_design/app").object["reason"], .string("deleted"))
    }

    func testMalformedJSONIs400AndNothingIsStored() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        for body in ["{", "[1,2]", "nul", "{\"a\":1}x", "\u{1}"] {
            let r = try c.json("PUT", "/db/bad", body)
            XCTAssertEqual(r.status, 400, body)
            XCTAssertEqual(r.object["error"], .string("bad_request"))
        }
        XCTAssertEqual(try c.request("GET", "/db").object["doc_count"], .int(0))
    }

    func testCopyAndAllDocs() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        for i in 1...5 { XCTAssertEqual(try c.json("PUT", "/db/d\(i)", #"{"i":\#(i)}"#).status, 201) }
        let copied = try c.request("COPY", "/db/d1", headers: [("Destination", "copy1")])
        XCTAssertEqual(copied.status, 201)
        XCTAssertEqual(try c.request("GET", "/db/copy1").object["i"], .int(1))
        let all = try c.request("GET", "/db/_all_docs?startkey=%22d2%22&endkey=%22d4%22&include_docs=true").object
        XCTAssertEqual(all["total_rows"], .int(6))
        let rows = all["rows"]!.arrayValue!
        XCTAssertEqual(rows.compactMap { $0.objectValue?["id"]?.stringValue }, ["d2", "d3", "d4"])
        XCTAssertEqual(rows[0].objectValue?["doc"]?.objectValue?["i"], .int(2))
        let limited = try c.request("GET", "/db/_all_docs?descending=true&limit=2").object["rows"]!.arrayValue!
        XCTAssertEqual(limited.compactMap { $0.objectValue?["id"]?.stringValue }, ["d5", "d4"])
        let keyed = try c.json("POST", "/db/_all_docs", #"{"keys":["d3","zzz"]}"#).object["rows"]!.arrayValue!
        XCTAssertEqual(keyed[0].objectValue?["id"], .string("d3"))
        XCTAssertEqual(keyed[1].objectValue?["error"], .string("not_found"))
    }

    func testLocalDocumentsAsCheckpoints() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        let missing = try c.request("GET", "/db/_local/cp")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(missing.object["reason"], .string("missing"))
        // As CouchDB's replicator writes them: _id with the prefix, then _rev "0-1".
        let first = try c.json("PUT", "/db/_local/cp", #"{"_id":"_local/cp","session_id":"s1","history":[]}"#)
        XCTAssertEqual(first.status, 201)
        XCTAssertEqual(first.object["id"], .string("_local/cp"))
        XCTAssertEqual(first.object["rev"], .string("0-1"))
        XCTAssertEqual(try c.json("PUT", "/db/_local/cp", #"{"_rev":"0-1","session_id":"s2"}"#).object["rev"], .string("0-2"))
        // CouchDB 3's rule: a stale revision does not conflict; the new one follows it.
        XCTAssertEqual(try c.json("PUT", "/db/_local/cp", #"{"_rev":"0-1","session_id":"s3"}"#).object["rev"], .string("0-2"))
        let got = try c.request("GET", "/db/_local/cp").object
        XCTAssertEqual(got["_id"], .string("_local/cp"))
        XCTAssertEqual(got["_rev"], .string("0-2"))
        XCTAssertEqual(got["session_id"], .string("s3"))
        XCTAssertEqual(try c.request("DELETE", "/db/_local/cp?rev=0-2").status, 200)
        XCTAssertEqual(try c.request("GET", "/db/_local/cp").status, 404)
    }

    func testAttachmentsStreamWithRanges() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        let content = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let put = try c.request("PUT", "/db/doc/file.bin", headers: [("Content-Type", "application/octet-stream")], body: content)
        XCTAssertEqual(put.status, 201, put.text)
        let rev = put.object["rev"]!.stringValue!
        let got = try c.request("GET", "/db/doc/file.bin")
        XCTAssertEqual(got.status, 200)
        XCTAssertEqual(got.header("Content-Type"), "application/octet-stream")
        XCTAssertEqual(got.body, content)
        let part = try c.request("GET", "/db/doc/file.bin", headers: [("Range", "bytes=10-19")])
        XCTAssertEqual(part.status, 206)
        XCTAssertEqual(part.body, Array(content[10...19]))
        XCTAssertEqual(part.header("Content-Range"), "bytes 10-19/300000")
        XCTAssertEqual(try c.request("GET", "/db/doc/file.bin", headers: [("Range", "bytes=-5")]).body, Array(content.suffix(5)))
        XCTAssertEqual(try c.request("GET", "/db/doc/file.bin", headers: [("Range", "bytes=400000-")]).status, 416)
        let stub = try c.request("GET", "/db/doc").object["_attachments"]?.objectValue?["file.bin"]?.objectValue
        XCTAssertEqual(stub?["stub"], .bool(true))
        XCTAssertEqual(stub?["length"], .int(300_000))
        let inline = try c.request("GET", "/db/doc?attachments=true").object["_attachments"]?.objectValue?["file.bin"]?.objectValue
        XCTAssertNotNil(inline?["data"]?.stringValue)
        XCTAssertEqual(try c.request("DELETE", "/db/doc/file.bin").status, 409)
        XCTAssertEqual(try c.request("DELETE", "/db/doc/file.bin?rev=\(rev)").status, 200)
        XCTAssertEqual(try c.request("GET", "/db/doc/file.bin").status, 404)
    }
}

final class LocalDocsAndPurgeTests: ListenerTestCase {
    func testLocalDocsListingAndPurge() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        XCTAssertEqual(try c.json("PUT", "/db/_local/b", #"{"x":1}"#).status, 201)
        XCTAssertEqual(try c.json("PUT", "/db/_local/a", #"{"x":2}"#).status, 201)
        let list = try c.request("GET", "/db/_local_docs?include_docs=true").object
        XCTAssertEqual(list["total_rows"], .null)
        let rows = list["rows"]!.arrayValue!
        XCTAssertEqual(rows.compactMap { $0.objectValue?["id"]?.stringValue }, ["_local/a", "_local/b"])
        XCTAssertEqual(rows[0].objectValue?["value"]?.objectValue?["rev"], .string("0-1"))
        XCTAssertEqual(rows[0].objectValue?["doc"]?.objectValue?["_id"], .string("_local/a"))
        let rev = try c.json("PUT", "/db/gone", "{}").object["rev"]!.stringValue!
        let purged = try c.json("POST", "/db/_purge", #"{"gone":["\#(rev)"],"never":["1-abc"]}"#)
        XCTAssertEqual(purged.status, 201)
        XCTAssertEqual(purged.object["purged"]?.objectValue?["gone"], .array([.string(rev)]))
        XCTAssertEqual(purged.object["purged"]?.objectValue?["never"], .array([]))
        XCTAssertEqual(try c.request("GET", "/db/gone").status, 404)
        XCTAssertEqual(try c.request("GET", "/db/_changes").object["results"]?.arrayValue?.count, 0)
    }
}

final class CheckpointShapeTests: ListenerTestCase {
    /// CouchDB's replicator sends its second checkpoint with `_revisions` (push #36).
    func testCheckpointWithRevisionsAsCouchDBSendsIt() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        XCTAssertEqual(try c.json("PUT", "/db/_local/cp", #"{"_id":"_local/cp","history":[]}"#).status, 201)
        let second = try c.json("PUT", "/db/_local/cp", #"{"_id":"_local/cp","_rev":"0-1","history":[1],"_revisions":{"start":0,"ids":["1"]}}"#)
        XCTAssertEqual(second.status, 201, second.text)
        XCTAssertEqual(second.object["rev"], .string("0-2"))
        XCTAssertNil(try c.request("GET", "/db/_local/cp").object["_revisions"])
        XCTAssertEqual(try c.json("PUT", "/db/_local/cp", #"{"_rev":"0-2","_deleted":true}"#).status, 200)
        XCTAssertEqual(try c.request("GET", "/db/_local/cp").status, 404)
    }
}
