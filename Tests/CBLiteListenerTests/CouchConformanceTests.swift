import CBLiteCore
@testable import CBLiteListener
import XCTest

/// What CouchDB 3.5 answers that its clients read (Tests/Fixtures/couchdb-3.5/rest-documents.jsonl):
/// the headers of every response, `Location`s, 304s, the changes feed's ETag, and the
/// document API's rules for `_purge`, `_all_docs`, `_local` documents and `_bulk_get`.
final class CouchConformanceTests: ListenerTestCase {
    func testRequestIDAndBodyTimeOnEveryResponse() throws {
        try start()
        let c = try client()
        let mine = try c.request("GET", "/", headers: [("X-Couch-Request-ID", "client-id_01")])
        XCTAssertEqual(mine.header("X-Couch-Request-ID"), "client-id_01", "a valid ID is echoed")
        for bad in [String(repeating: "r", count: 37), "has*star", ""] {
            let r = try c.request("GET", "/", headers: [("X-Couch-Request-ID", bad)])
            XCTAssertNotEqual(r.header("X-Couch-Request-ID"), bad)
            XCTAssertNotNil(r.header("X-Couch-Request-ID")?.range(of: "^[0-9a-f]{10}$", options: .regularExpression))
        }
        let a = try c.request("GET", "/nodb").header("X-Couch-Request-ID"), b = try c.request("GET", "/_up").header("X-Couch-Request-ID")
        XCTAssertNotNil(a)
        XCTAssertNotEqual(a, b, "a new one for each request")
        for r in [try c.request("GET", "/nodb"), try c.json("PUT", "/db")] {
            XCTAssertNotNil(r.header("X-CouchDB-Body-Time").flatMap(Int.init), "errors and writes too")
        }
    }

    func testAbsoluteLocationOn201s() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.json("PUT", "/db").header("Location"), "http://127.0.0.1/db")
        let put = try c.json("PUT", "/db/_design/app", "{}")
        XCTAssertEqual(put.header("Location"), "http://127.0.0.1/db/_design%2Fapp")
        XCTAssertNotNil(put.header("ETag"))
        let post = try c.json("POST", "/db", #"{"_id":"a b"}"#)
        XCTAssertEqual(post.header("Location"), "http://127.0.0.1/db/a%20b")
        XCTAssertNil(post.header("ETag"), "a POST names no ETag (CouchDB's)")
        XCTAssertEqual(try c.json("PUT", "/db/_local/x", "{}").header("Location"), "http://127.0.0.1/db/_local%2Fx")
        let rev = put.object["rev"]!.stringValue!
        let att = try c.request("PUT", "/db/_design/app/dir/f.txt?rev=\(rev)", headers: [("Content-Type", "text/plain")], body: Array("hi".utf8))
        XCTAssertEqual(att.status, 201)
        XCTAssertEqual(att.header("Location"), "http://127.0.0.1/db/_design%2Fapp/dir%2Ff.txt")
        // Behind a proxy: the host and scheme it names.
        let proxied = try c.json("PUT", "/db/p", "{}", headers: [("X-Forwarded-Host", "couch.example:8443"), ("X-Forwarded-Proto", "https")])
        XCTAssertEqual(proxied.header("Location"), "https://couch.example:8443/db/p")
        // A '+' in the path is a space (CouchDB 3.5's default).
        let plus = try c.json("PUT", "/db/plus+sign", "{}")
        XCTAssertEqual(plus.object["id"], .string("plus sign"))
        XCTAssertEqual(plus.header("Location"), "http://127.0.0.1/db/plus%20sign")
        XCTAssertEqual(try c.json("PUT", "/db/real%2Bplus", "{}").object["id"], .string("real+plus"))
        // `[chttpd] decode_plus_to_space = false` keeps it a '+', at once.
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/chttpd/decode_plus_to_space", #""false""#).status, 200)
        XCTAssertEqual(try c.json("PUT", "/db/kept+plus", "{}").object["id"], .string("kept+plus"))
        XCTAssertNil(try c.request("GET", "/db/p").header("Location"), "only 201s")
    }

    func testNotModifiedCarriesNoBodyHeaders() throws {
        try start()
        let c = try client()
        _ = try c.json("PUT", "/db")
        let etag = try c.json("PUT", "/db/d", "{}").header("ETag")!
        let r = try c.request("GET", "/db/d", headers: [("If-None-Match", etag)])
        XCTAssertEqual(r.status, 304)
        XCTAssertEqual(r.header("Content-Length"), "0")
        XCTAssertEqual(r.header("ETag"), etag)
        XCTAssertNil(r.header("Content-Type"))
        XCTAssertNil(r.header("Cache-Control"))
        XCTAssertNotNil(r.header("X-Couch-Request-ID"))
    }

    /// The listener frames its answers itself (NIO would drop a 304's Content-Length: 0):
    /// a streamed answer is chunked for HTTP/1.1 and, for HTTP/1.0, ends with the connection.
    func testStreamedAnswersAreFramedForTheClientsVersion() throws {
        try start()
        let c = try client()
        _ = try c.json("PUT", "/db")
        _ = try c.json("PUT", "/db/a", "{}")
        let chunked = try c.request("GET", "/db/_all_docs")
        XCTAssertEqual(chunked.header("Transfer-Encoding"), "chunked")
        XCTAssertEqual(chunked.object["total_rows"], .int(1))
        XCTAssertEqual(try c.request("GET", "/_up").status, 200, "the connection goes on")
        let old = try client()
        old.send("GET /db/_all_docs HTTP/1.0\r\n\r\n")
        XCTAssertTrue(old.isClosedByServer(), "the body ends with the connection")
        let text = old.readUntil("never")
        XCTAssertTrue(text.hasPrefix("HTTP/1.0 200"), text)
        XCTAssertFalse(text.lowercased().contains("transfer-encoding"), text)
        XCTAssertTrue(text.hasSuffix("]}\n"), text)
    }

    func testChangesFeedETag() throws {
        try start()
        let c = try client()
        _ = try c.json("PUT", "/db")
        _ = try c.json("PUT", "/db/d", "{}")
        let first = try c.request("GET", "/db/_changes")
        let etag = try XCTUnwrap(first.header("ETag"))
        XCTAssertNotNil(etag.range(of: "^\"[0-9A-Z]+\"$", options: .regularExpression), "CouchDB's form: \(etag)")
        XCTAssertEqual(try c.request("GET", "/db/_changes?limit=1").header("ETag"), etag, "the database's state, not the query's")
        let same = try c.request("GET", "/db/_changes", headers: [("If-None-Match", etag)])
        XCTAssertEqual(same.status, 304)
        _ = try c.json("PUT", "/db/e", "{}")
        let next = try c.request("GET", "/db/_changes", headers: [("If-None-Match", etag)])
        XCTAssertEqual(next.status, 200)
        XCTAssertNotEqual(next.header("ETag"), etag)
        XCTAssertNil(try c.request("GET", "/db/_changes?feed=longpoll&since=0").header("ETag"), "only the normal feed")
    }

    func testPurgeHistoryEndpoints() throws {
        try start()
        let c = try client()
        _ = try c.json("PUT", "/db")
        let r1 = try c.json("PUT", "/db/p", #"{"v":1}"#).object["rev"]!.stringValue!
        let r2 = try c.json("PUT", "/db/p?rev=\(r1)", #"{"v":2}"#).object["rev"]!.stringValue!
        XCTAssertEqual(try c.request("GET", "/db").object["purge_seq"], .int(0))
        let purged = try c.json("POST", "/db/_purge", #"{"p":["\#(r2)"],"gone":["1-ffff"]}"#)
        XCTAssertEqual(purged.status, 201)
        XCTAssertEqual(purged.object["purged"], try JSONParser.parse(#"{"p":["\#(r2)"],"gone":[]}"#), "only the leaves purged")
        XCTAssertEqual(try c.request("GET", "/db").object["purge_seq"], .int(2))
        XCTAssertEqual(try c.request("GET", "/db/_purged_infos").object["purged_infos"],
                       try JSONParser.parse(#"[{"id":"p","revs":["\#(r2)"]},{"id":"gone","revs":["1-ffff"]}]"#))
        XCTAssertEqual(try c.json("POST", "/db/_purge", #"{"p":"notalist"}"#).object["reason"], .string("Invalid list of revisions"))
        XCTAssertEqual(try c.json("POST", "/db/_compact", "{}").status, 202)
        XCTAssertEqual(try c.request("GET", "/db").object["purge_seq"], .int(2), "compaction keeps it")
        XCTAssertEqual(try c.request("GET", "/db/_purged_infos_limit").body, Array("1000\n".utf8))
        XCTAssertEqual(try c.json("PUT", "/db/_purged_infos_limit", "500").status, 200)
        XCTAssertEqual(try c.json("PUT", "/db/_purged_infos_limit", #""abc""#).status, 400)
        XCTAssertEqual(try c.request("GET", "/db/_purged_infos_limit").body, Array("500\n".utf8))
    }

    func testAllDocsQueriesAndParameters() throws {
        try start()
        let c = try client()
        _ = try c.json("PUT", "/db")
        for id in ["a", "b", "c", "d"] { _ = try c.json("PUT", "/db/\(id)", "{}") }
        let offset = try c.request("GET", "/db/_all_docs?startkey=%22c%22&skip=1")
        XCTAssertEqual(offset.object["offset"], .int(3))
        XCTAssertEqual(offset.object["rows"]?.arrayValue?.count, 1)
        let keyed = try c.json("POST", "/db/_all_docs?descending=true", #"{"keys":["a",1,"c"],"limit":2}"#)
        XCTAssertEqual(keyed.object["offset"], .null)
        let rows = try XCTUnwrap(keyed.object["rows"]?.arrayValue)
        XCTAssertEqual(rows.map { $0.objectValue?["key"] }, [.string("c"), .int(1)], "reversed, then limited")
        XCTAssertEqual(rows[1], try JSONParser.parse(#"{"key":1,"error":"not_found"}"#))
        let seq = try c.request("GET", "/db/_all_docs?update_seq=true&limit=0").object
        XCTAssertEqual(seq["update_seq"], .int(4))
        let queries = try c.json("POST", "/db/_all_docs/queries", #"{"queries":[{"keys":["b"]},{"limit":1,"skip":2}]}"#)
        XCTAssertEqual(queries.status, 200)
        let results = try XCTUnwrap(queries.object["results"]?.arrayValue)
        XCTAssertEqual(results.count, 2)
        XCTAssertEqual(results[0].objectValue?["offset"], .null)
        XCTAssertEqual(results[1].objectValue?["offset"], .int(2))
        XCTAssertEqual(results[1].objectValue?["rows"]?.arrayValue?.first?.objectValue?["id"], .string("c"))
        XCTAssertEqual(try c.json("POST", "/db/_all_docs/queries", #"{"queries":[{"keys":"b"}]}"#).status, 400)
        // _local_docs takes keys, limit and queries alike.
        _ = try c.json("PUT", "/db/_local/l1", "{}")
        _ = try c.json("PUT", "/db/_local/l2", "{}")
        let local = try c.request("GET", "/db/_local_docs?keys=%5B%22_local%2Fl2%22%2C%22_local%2Fnone%22%5D&limit=1").object
        XCTAssertEqual(local["rows"]?.arrayValue?.count, 1)
        XCTAssertEqual(local["rows"]?.arrayValue?.first?.objectValue?["id"], .string("_local/l2"))
        let localQueries = try c.json("POST", "/db/_local_docs/queries", #"{"queries":[{"descending":true},{"keys":["_local/x"]}]}"#).object
        XCTAssertEqual(localQueries["results"]?.arrayValue?.first?.objectValue?["rows"]?.arrayValue?.first?.objectValue?["id"], .string("_local/l2"))
        XCTAssertEqual(localQueries["results"]?.arrayValue?.last?.objectValue?["rows"],
                       try JSONParser.parse(#"[{"key":"_local/x","error":"not_found"}]"#))
    }

    func testLocalDocumentsFollowCouchDBsRevisionRule() throws {
        try start()
        let c = try client()
        _ = try c.json("PUT", "/db")
        XCTAssertEqual(try c.json("PUT", "/db/_local/l", #"{"v":1}"#).object["rev"], .string("0-1"))
        XCTAssertEqual(try c.json("PUT", "/db/_local/l", #"{"_rev":"0-1","v":2}"#).object["rev"], .string("0-2"))
        XCTAssertEqual(try c.json("PUT", "/db/_local/l", #"{"v":3}"#).object["rev"], .string("0-1"), "no conflict")
        XCTAssertEqual(try c.json("PUT", "/db/_local/l", #"{"_rev":"0-9","v":3}"#).object["rev"], .string("0-10"))
        XCTAssertEqual(try c.request("GET", "/db/_local/l?revs=true").object["_revisions"], try JSONParser.parse(#"{"start":0,"ids":["10"]}"#))
        let bulk = try c.json("POST", "/db/_bulk_docs",
                              #"{"docs":[{"_id":"_local/n","v":1},{"_id":"plain"},{"_id":"_local/l","_rev":"0-2","v":"bulk"},{"_id":"_design/d"}]}"#)
        XCTAssertEqual(bulk.status, 201)
        let rows = try XCTUnwrap(bulk.json?.arrayValue)
        XCTAssertEqual(rows.map { $0.objectValue?["id"] }, [.string("_local/n"), .string("plain"), .string("_local/l"), .string("_design/d")])
        XCTAssertEqual(rows[0].objectValue?["rev"], .string("0-1"))
        XCTAssertEqual(rows[2].objectValue?["rev"], .string("0-3"))
        XCTAssertEqual(rows[3].objectValue?["ok"], .bool(true))
        XCTAssertEqual(try c.request("GET", "/db/_local/l").object["v"], .string("bulk"))
        XCTAssertEqual(try c.request("GET", "/db/_all_docs").object["total_rows"], .int(2), "local documents are not documents")
    }

    func testBulkGetEntryWithoutIDAndNewEditsFalseRevInQuery() throws {
        try start()
        let c = try client()
        _ = try c.json("PUT", "/db")
        _ = try c.json("PUT", "/db/a", "{}")
        let got = try c.json("POST", "/db/_bulk_get", #"{"docs":[{"id":"a"},{"rev":"1-x"}]}"#)
        XCTAssertEqual(got.status, 200)
        let results = try XCTUnwrap(got.object["results"]?.arrayValue)
        XCTAssertEqual(results.count, 2)
        XCTAssertEqual(results[1], try JSONParser.parse(
            #"{"id":null,"docs":[{"error":{"id":null,"rev":null,"error":"bad_request","reason":"document id missed"}}]}"#))
        let put = try c.json("PUT", "/db/old?new_edits=false&rev=3-abc", #"{"v":1}"#)
        XCTAssertEqual(put.status, 201)
        XCTAssertEqual(try c.request("GET", "/db/old").object["_rev"], .string("3-abc"))
    }

    func testRevsLimitTrimsHistoryAtOnce() throws {
        try start()
        let c = try client()
        _ = try c.json("PUT", "/db")
        var rev = try c.json("PUT", "/db/d", "{}").object["rev"]!.stringValue!
        for i in 0..<4 { rev = try c.json("PUT", "/db/d?rev=\(rev)", #"{"i":\#(i)}"#).object["rev"]!.stringValue! }
        func ids() throws -> Int? { try c.request("GET", "/db/d?revs=true").object["_revisions"]?.objectValue?["ids"]?.arrayValue?.count }
        XCTAssertEqual(try ids(), 5)
        XCTAssertEqual(try c.json("PUT", "/db/_revs_limit", "2").status, 200)
        XCTAssertEqual(try ids(), 2)
        XCTAssertEqual(try c.json("PUT", "/db/_revs_limit", #""abc""#).status, 400)
    }
}
