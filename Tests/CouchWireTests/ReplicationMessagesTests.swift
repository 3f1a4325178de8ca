import CBLiteBase
@testable import CouchWire
import XCTest

/// The replicator's side of the wire format against what CouchDB 3.5.0 really sent and
/// answered (Tests/Fixtures/couchdb-3.5): every recorded `_changes`, `_revs_diff`, `_bulk_get`
/// and `_bulk_docs` answer parses; sequences stay opaque strings; multipart `open_revs`
/// documents come out whole with their gzip-encoded attachments decoded; and the requests
/// the replicator writes have the shapes CouchDB's own replicator sent.
final class ReplicationMessagesTests: XCTestCase {
    let files = ["client-shapes.jsonl", "push-by-couchdb.jsonl", "pull-by-couchdb.jsonl", "continuous-by-couchdb.jsonl"]

    func path(_ x: RecordedExchange) -> String { x.request["path"]?.stringValue ?? "" }

    func testEveryRecordedChangesFeedParsesWithOpaqueSequences() throws {
        var feeds = 0, rows = 0
        for file in files {
            for x in try RecordedExchange.load(file) where path(x).contains("/_changes") && x.response["status"]?.intValue == 200 {
                let body = RecordedExchange.body(x.response)
                if path(x).contains("feed=continuous") {
                    // One JSON object per line; blank lines are heartbeats.
                    for line in body.split(separator: 10) where !line.allSatisfy({ $0 == 32 || $0 == 13 }) {
                        let v = try ReplicationMessages.parse(Array(line), "continuous line")
                        if v.objectValue?["last_seq"] != nil { continue }
                        let row = try ReplicationMessages.changeRow(v)
                        XCTAssertNotNil(row.seq.stringValue, "\(file) #\(x.seq): CouchDB 3 sequences are strings")
                        rows += 1
                    }
                } else {
                    let (r, last, _) = try ReplicationMessages.changes(body)
                    XCTAssertNotNil(last?.stringValue, "\(file) #\(x.seq)")
                    for row in r {
                        XCTAssertFalse(row.revs.isEmpty)
                        // Passed back verbatim: the text is the recorded one, not a number.
                        XCTAssertTrue(row.seq.sequenceTextForTest.contains("-g1AAAA"), "\(row.seq)")
                    }
                    rows += r.count
                }
                feeds += 1
            }
        }
        XCTAssertGreaterThanOrEqual(feeds, 6)
        XCTAssertGreaterThanOrEqual(rows, 30)
    }

    func testRecordedRevsDiffBulkGetAndBulkDocsAnswersParse() throws {
        var revsDiff = 0, bulkGet = 0, bulkDocs = 0
        for file in files {
            for x in try RecordedExchange.load(file) where x.response["status"]?.intValue.map({ $0 < 300 }) == true {
                let body = RecordedExchange.body(x.response)
                let ct = RecordedExchange.header(x.response, "Content-Type") ?? ""
                if path(x).contains("/_revs_diff") {
                    let answer = try RevsDiffShape.parseAnswer(body)
                    let asked = try Self.object(RecordedExchange.body(x.request))
                    for (id, _) in answer { XCTAssertNotNil(asked[id], "answered about a document not asked for") }
                    revsDiff += 1
                } else if path(x).contains("/_bulk_get") && ct.hasPrefix("application/json") {
                    let docs = try BulkGetShape.parseAnswer(body)
                    XCTAssertFalse(docs.isEmpty)
                    for d in docs {
                        if case .document(let doc) = d { XCTAssertNotNil(doc["_revisions"]?.objectValue?["start"], "\(file) #\(x.seq)") }
                    }
                    bulkGet += 1
                } else if path(x).contains("/_bulk_docs") {
                    _ = try BulkDocsShape.parseFailures(body)
                    bulkDocs += 1
                }
            }
        }
        XCTAssertGreaterThanOrEqual(revsDiff, 3)
        XCTAssertGreaterThanOrEqual(bulkGet, 6)
        XCTAssertGreaterThanOrEqual(bulkDocs, 3)
        // A per-document conflict answer of _bulk_docs (client-shapes #36) is one failure.
        let conflictAnswer = Array(#"[{"id":"x","error":"conflict","reason":"Document update conflict."},{"ok":true,"id":"y","rev":"1-a"}]"#.utf8)
        let failures = try BulkDocsShape.parseFailures(conflictAnswer)
        XCTAssertEqual(failures.count, 1)
        XCTAssertEqual(failures.first?.error, "conflict")
        // open_revs / _bulk_get errors and missing revisions become per-document errors.
        let items = try OpenRevsShape.parseAnswer(Array(#"[{"missing":"9-zz"},{"ok":{"_id":"a","_rev":"1-b"}}]"#.utf8), id: "a")
        guard case .error(_, let rev, let status, _) = items[0], case .document = items[1] else { return XCTFail("\(items)") }
        XCTAssertEqual(rev, "9-zz")
        XCTAssertEqual(status, 404)
    }

    /// open_revs answers as multipart/mixed: each revision's JSON, and its attachments
    /// streamed into a store, gzip-encoded ones decoded to the recorder's gunzipped MD5.
    func testRecordedOpenRevsMultipartGivesWholeDocumentsAndDecodedAttachments() throws {
        let store = MemoryAttachmentStore()
        var documents = 0, gzipped = 0
        for file in ["pull-by-couchdb.jsonl", "client-shapes.jsonl"] {
            for x in try RecordedExchange.load(file) where path(x).contains("open_revs=") {
                guard let ct = RecordedExchange.header(x.response, "Content-Type"), let type = MediaType(ct), type.type == "multipart/mixed",
                      let boundary = type.parameter("boundary") else { continue }
                var outer = try MultipartParser(boundary: boundary)
                var inner: MultipartParser? = nil
                var reader: MultipartDocumentReader? = nil
                var json: [UInt8] = []
                for e in try outer.feed(RecordedExchange.body(x.response)) {
                    switch e {
                    case .partBegin(let h):
                        json = []
                        if let t = h.contentType, t.type == "multipart/related", let b = t.parameter("boundary") {
                            inner = try MultipartParser(boundary: b)
                            reader = MultipartDocumentReader(maxDocumentBytes: 1 << 20, maxAttachmentBytes: 1 << 24, makeWriter: store.makeWriter)
                        }
                    case .body(let bytes):
                        if var i = inner { for ie in try i.feed(bytes) { try reader!.handle(ie) }; inner = i } else { json += bytes }
                    case .partEnd:
                        if let r = reader {
                            try inner!.finish()
                            let (doc, atts) = try r.finish()
                            XCTAssertNotNil(doc["_revisions"])
                            let declared = doc["_attachments"]!.objectValue!
                            for (name, info) in atts {
                                let entry = declared[name]!.objectValue!
                                if entry["encoding"]?.stringValue == "gzip" {
                                    gzipped += 1
                                    XCTAssertNotEqual(UInt64(entry["encoded_length"]!.intValue!), info.length, "stored decoded")
                                }
                                let content = try XCTUnwrap(store.blobs[info.digest])
                                XCTAssertEqual(UInt64(content.count), info.length)
                                // The recorder's view of the gunzipped content, where it has one.
                                if let expected = Self.gunzippedMD5(x.response, name) { XCTAssertEqual(Base64.encode(MD5.hash(content)), expected) }
                            }
                            documents += 1
                        } else {
                            if case .document = OpenRevsShape.parsePart(json, id: "") { documents += 1 }
                        }
                        inner = nil
                        reader = nil
                    case .end: break
                    }
                }
                try outer.finish()
            }
        }
        XCTAssertGreaterThanOrEqual(documents, 5)
        XCTAssertGreaterThanOrEqual(gzipped, 2, "the recorded text attachments travel gzip-encoded")
    }

    static func object(_ bytes: [UInt8]) throws -> JSONObject {
        try bytes.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
    }

    static func gunzippedMD5(_ response: JSONObject, _ filename: String) -> String? {
        func search(_ parts: [JSONValue]) -> String? {
            for p in parts {
                guard let o = p.objectValue else { continue }
                let disposition = o["headers"]?.arrayValue?.first { $0.arrayValue?.first?.stringValue?.lowercased() == "content-disposition" }?
                    .arrayValue?[1].stringValue ?? ""
                if disposition.contains("\"\(filename)\""), let md5 = o["gunzipped_md5_base64"]?.stringValue { return md5 }
                if let nested = o["parts"]?.arrayValue, let found = search(nested) { return found }
            }
            return nil
        }
        return search(response["multipart"]?.arrayValue ?? [])
    }

    /// The replicator's request bodies have the members CouchDB's own replicator sent.
    func testRequestShapesMatchCouchDBsReplicator() throws {
        let pull = try RecordedExchange.load("pull-by-couchdb.jsonl")
        let recordedBulkGet = try XCTUnwrap(pull.first { path($0).contains("/_bulk_get") })
        let recorded = try Self.object(RecordedExchange.body(recordedBulkGet.request))
        let recordedDoc = recorded["docs"]!.arrayValue![0].objectValue!
        let ours = try Self.object(BulkGetShape.requestBody([("plain-06", "1-80b9", ["1-aa"])]))
        let ourDoc = ours["docs"]!.arrayValue![0].objectValue!
        XCTAssertEqual(Set(ourDoc.members.map(\.key)), Set(recordedDoc.members.map(\.key)))

        let push = try RecordedExchange.load("push-by-couchdb.jsonl")
        let recordedBulkDocs = try XCTUnwrap(push.first { path($0).contains("/_bulk_docs") })
        let rb = try Self.object(RecordedExchange.body(recordedBulkDocs.request))
        let doc = rb["docs"]!.arrayValue![0]
        let ob = try Self.object(BulkDocsShape.requestBody([JSONWriter.ordered(doc)]))
        XCTAssertEqual(ob["new_edits"], rb["new_edits"])
        XCTAssertEqual(ob["docs"], rb["docs"]!.arrayValue.map { .array(Array($0.prefix(1))) })

        let recordedDiff = try XCTUnwrap(push.first { path($0).contains("/_revs_diff") })
        let rd = try Self.object(RecordedExchange.body(recordedDiff.request))
        let pairs = rd.members.map { (id: $0.key, revs: $0.value.arrayValue!.map { $0.stringValue! }) }
        let od = try Self.object(RevsDiffShape.requestBody(pairs))
        XCTAssertEqual(od, rd)
    }
}

extension JSONValue {
    var sequenceTextForTest: String { stringValue ?? JSONWriter.canonicalString(self) }
}
