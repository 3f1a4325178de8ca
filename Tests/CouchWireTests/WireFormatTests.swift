import CBLiteBase
@testable import CouchWire
import XCTest

final class WireFormatTests: XCTestCase {
    func testRevisionsObjectAndBack() throws {
        let history = ["3-ccc", "2-bbb", "1-aaa"]
        let o = CouchRevisions.revisionsObject(history)!
        XCTAssertEqual(JSONWriter.canonicalString(.object(o)), #"{"ids":["ccc","bbb","aaa"],"start":3}"#)
        XCTAssertEqual(try CouchRevisions.revIDs(.object(o)), history)
        // A gap in generations cuts the history there.
        XCTAssertEqual(CouchRevisions.revisionsObject(["5-e", "3-c"])!["ids"], .array([.string("e")]))
        XCTAssertThrowsError(try CouchRevisions.revIDs(.object(JSONObject([("start", .int(1)), ("ids", .array([.string("a"), .string("b")]))]))))
        XCTAssertThrowsError(try CouchRevisions.revIDs(.string("x")))
        XCTAssertThrowsError(try CouchRevisions.revIDs(.object(JSONObject([("start", .int(2)), ("ids", .array([.int(1)]))]))))
    }

    func testQueryParametersDecodeCouchDBValues() throws {
        // As the replicator sends it (client-shapes #14).
        let q = try QueryParameters(query: "open_revs=%5B%222-a437%22%2C%20%229-0000%22%5D&revs=true&latest=true&since=31-g1AAAACb&startkey=%22a+b%22")
        XCTAssertEqual(try q.openRevs(), .revs(["2-a437", "9-0000"]))
        XCTAssertEqual(try q.bool("revs"), true)
        XCTAssertNil(try q.bool("missing"))
        XCTAssertEqual(try q.since(), .sequence(31))
        XCTAssertEqual(try q.json("startkey"), .string("a b"))
        XCTAssertEqual(try QueryParameters(query: "open_revs=all").openRevs(), .all)
        XCTAssertEqual(try QueryParameters(query: "since=now").since(), .now)
        XCTAssertEqual(try QueryParameters(query: "since=12").since(), .sequence(12))
        XCTAssertThrowsError(try QueryParameters(query: "revs=yes").bool("revs"))
        XCTAssertThrowsError(try QueryParameters(query: "limit=x").int("limit"))
        XCTAssertThrowsError(try QueryParameters(query: "open_revs=%5Bnope").openRevs())
        XCTAssertThrowsError(try QueryParameters(query: "open_revs=%5B1%5D").openRevs())
        XCTAssertThrowsError(try QueryParameters(query: "since=abc").since())
        XCTAssertThrowsError(try QueryParameters(query: "a=%zz"))
        XCTAssertThrowsError(try QueryParameters(query: "a=%ff"))    // not UTF-8
    }

    func testRequestPathKeepsEscapedSlashesAndSpecialPrefixes() throws {
        XCTAssertEqual(try RequestPath(target: "/db%2Fsub/doc%2Fid?x=1").segments, ["db/sub", "doc/id"])
        XCTAssertEqual(try RequestPath(target: "/db%2Fsub/doc%2Fid?x=1").query, "x=1")
        XCTAssertEqual(try RequestPath(target: "/db/_local/abc").segments, ["db", "_local/abc"])
        XCTAssertEqual(try RequestPath(target: "/db/_design%2Fd/_view/v").segments, ["db", "_design/d", "_view", "v"])
        XCTAssertEqual(try RequestPath(target: "/db/doc/att/with/slashes").segments, ["db", "doc", "att", "with", "slashes"])
        XCTAssertEqual(try RequestPath(target: "/db/").segments, ["db"])
        XCTAssertEqual(try RequestPath(target: "/").segments, [])
        XCTAssertThrowsError(try RequestPath(target: "/db/%G0"))
        XCTAssertThrowsError(try RequestPath(target: "http://x/db"))
    }

    /// CouchDB 3.5's default (`decode_plus_to_space`): '+' in a path is a space; "%2B" is '+'.
    func testRequestPathPlusIsASpaceByDefault() throws {
        XCTAssertEqual(try RequestPath(target: "/db/plus+sign").segments, ["db", "plus sign"])
        XCTAssertEqual(try RequestPath(target: "/db/plus%2Bsign").segments, ["db", "plus+sign"])
        XCTAssertEqual(try RequestPath(target: "/db/plus+sign", plusAsSpace: false).segments, ["db", "plus+sign"])
        XCTAssertEqual(try RequestPath(target: "/db/_local/a+b").segments, ["db", "_local/a b"])
    }

    /// `_bulk_get`: an entry without an `id` is answered in its place with CouchDB's error;
    /// the C ABI's parser (request) still refuses the request.
    func testBulkGetEntryWithoutID() throws {
        let body = try JSONParser.parseObject(#"{"docs":[{"id":"a"},{"rev":"1-x"},{"id":7}]}"#)
        let entries = try BulkGetShape.entries(body)
        XCTAssertEqual(entries.map { $0?.id }, ["a", nil, nil])
        XCTAssertThrowsError(try BulkGetShape.request(body))
        XCTAssertThrowsError(try BulkGetShape.entries(JSONParser.parseObject(#"{"docs":"a"}"#)))
        let answer = try JSONParser.parse(String(decoding: BulkGetShape.answer([nil]), as: UTF8.self))
        XCTAssertEqual(answer, try JSONParser.parse(
            #"{"results":[{"id":null,"docs":[{"error":{"id":null,"rev":null,"error":"bad_request","reason":"document id missed"}}]}]}"#))
    }

    func testCredentials() {
        let h = "Basic " + Base64.encode(Array("admin:pa:ss".utf8))
        XCTAssertEqual(Credentials.basic(h)?.name, "admin")
        XCTAssertEqual(Credentials.basic(h)?.password, "pa:ss")
        XCTAssertNil(Credentials.basic("Basic !!!"))
        XCTAssertNil(Credentials.basic("Bearer abc"))
        XCTAssertNil(Credentials.basic("Basic " + Base64.encode(Array("nocolon".utf8))))
        XCTAssertEqual(Credentials.cookies("a=1; AuthSession=xyz; b=\"q\""), ["a": "1", "AuthSession": "xyz", "b": "q"])
        let form = Credentials.formFields(Array("name=admin&password=p%40ss+word".utf8))!
        XCTAssertEqual(form.map(\.value), ["admin", "p@ss word"])
        XCTAssertNil(Credentials.formFields(Array("name=%zz".utf8)))
    }

    func testBase64() {
        for s in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            let e = Base64.encode(Array(s.utf8))
            XCTAssertEqual(Base64.decode(e), Array(s.utf8))
        }
        XCTAssertEqual(Base64.encode(Array("foobar".utf8)), "Zm9vYmFy")
        XCTAssertNil(Base64.decode("ab$c"))
        XCTAssertNil(Base64.decode("a=bc"))
        XCTAssertNil(Base64.decode("ab$c"))
    }

    func testErrorMappingFollowsCouchDB() {
        XCTAssertEqual(CouchError(CBLError(.notFound, "document \"x\" is deleted")).reason, "deleted")
        XCTAssertEqual(CouchError(CBLError(.notFound, "document \"x\" does not exist")).reason, "missing")
        XCTAssertEqual(CouchError(CBLError(.conflict, "whatever")), .conflict)
        XCTAssertEqual(CouchError(CBLError(.busy, "locked")).status, 503)
        XCTAssertEqual(CouchError(CBLError(.badRequest, "bad")).error, "bad_request")
        XCTAssertEqual(String(decoding: CouchError.notFound().body, as: UTF8.self), "{\"error\":\"not_found\",\"reason\":\"missing\"}\n")
        XCTAssertEqual(CouchError.reasonPhrase(404), "Object Not Found")
        XCTAssertEqual(CouchError.from(MultipartError.malformed("x")).status, 400)
    }

    func testChangesRowsHaveCouchDBShape() throws {
        let row = ChangesWriter.row(ChangeEntry(sequence: 7, docID: "d", revs: ["2-b", "2-a"], deleted: true))
        XCTAssertEqual(String(decoding: row, as: UTF8.self), #"{"seq":7,"id":"d","changes":[{"rev":"2-b"},{"rev":"2-a"}],"deleted":true}"#)
        var feed = ChangesWriter.normalHeader + row + ChangesWriter.normalSeparator + row + ChangesWriter.normalFooter(lastSeq: 7)
        let o = try feed.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
        XCTAssertEqual(o["results"]?.arrayValue?.count, 2)
        XCTAssertEqual(o["last_seq"], .int(7))
        feed = ChangesWriter.event(ChangeEntry(sequence: 3, docID: "x", revs: ["1-a"], deleted: false))
        XCTAssertTrue(String(decoding: feed, as: UTF8.self).hasPrefix("data: {\"seq\":3"))
        XCTAssertTrue(String(decoding: feed, as: UTF8.self).hasSuffix("\nid: 3\n\n"))
    }

    /// The feed as one document (the C ABI's cbl_collection_changes): the same rows as
    /// the listener's, from the engine's row views; the current revision alone, or every leaf.
    func testChangesDocumentWritesRowViews() throws {
        var doc = ChangesWriter.Document()
        XCTAssertEqual(String(decoding: doc.finish(lastSeq: 4), as: UTF8.self), #"{"results":[],"last_seq":4}"#)
        doc = ChangesWriter.Document()
        let id = Array("d\"q".utf8), rev = Array("2-b".utf8)
        id.withUnsafeBufferPointer { i in
            rev.withUnsafeBufferPointer { r in
                doc.add(ChangeRowView(sequence: 7, docID: i, revID: r, leaves: ["2-b", "2-a"], deleted: true, doc: nil))
                doc.add(ChangeRowView(sequence: 8, docID: i, revID: r, leaves: nil, deleted: false, doc: Array(#"{"_id":"d\"q"}"#.utf8)))
            }
        }
        XCTAssertEqual(String(decoding: doc.finish(lastSeq: 9), as: UTF8.self),
                       #"{"results":[{"seq":7,"id":"d\"q","changes":[{"rev":"2-b"},{"rev":"2-a"}],"deleted":true},"#
                       + #"{"seq":8,"id":"d\"q","changes":[{"rev":"2-b"}],"doc":{"_id":"d\"q"}}],"last_seq":9}"#)
        XCTAssertEqual(String(decoding: ChangesWriter.row(ChangeEntry(sequence: 7, docID: "d\"q", revs: ["2-b", "2-a"], deleted: true)), as: UTF8.self),
                       #"{"seq":7,"id":"d\"q","changes":[{"rev":"2-b"},{"rev":"2-a"}],"deleted":true}"#)
    }
}
