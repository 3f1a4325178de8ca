import XCTest
import Foundation
@testable import CBLiteCore

final class DocumentTests: CBLCollectionTestCase {

    private func gen(_ rev: String) -> Int { RevID(rev)!.generation }
    private func digest(_ rev: String) -> String { RevID(rev)!.digest }

    // MARK: CRUD

    func testCreateReadUpdateDelete() throws {
        let r1 = try coll.put(docID: "doc", json: #"{"name":"a","n":1}"#, parent: nil)
        XCTAssertEqual(r1.docID, "doc")
        XCTAssertEqual(gen(r1.revID), 1)
        var d = try coll.doc("doc")
        XCTAssertEqual(d["_id"], .string("doc"))
        XCTAssertEqual(d["_rev"], .string(r1.revID))
        XCTAssertEqual(d["name"], .string("a"))
        XCTAssertEqual(d["n"], .int(1))
        XCTAssertNil(d["_deleted"])
        XCTAssertEqual(d.members.count, 4)

        let r2 = try coll.put(docID: "doc", json: #"{"name":"b"}"#, parent: r1.revID)
        XCTAssertEqual(gen(r2.revID), 2)
        d = try coll.doc("doc")
        XCTAssertEqual(d["_rev"], .string(r2.revID))
        XCTAssertEqual(d["name"], .string("b"))
        XCTAssertNil(d["n"], "a new revision replaces the whole body")
        XCTAssertEqual(try coll.count, 1)

        let r3 = try coll.delete(docID: "doc", parent: r2.revID)
        XCTAssertEqual(gen(r3), 3)
        assertStatus(.notFound, try coll.get(docID: "doc"))
        let tomb = try coll.doc("doc", .deleted)
        XCTAssertEqual(tomb["_deleted"], .bool(true))
        XCTAssertEqual(tomb["_rev"], .string(r3))
        XCTAssertEqual(tomb["_id"], .string("doc"))
        XCTAssertEqual(try coll.count, 0)
        assertStatus(.notFound, try coll.delete(docID: "doc", parent: nil), "already deleted")
        assertStatus(.notFound, try coll.delete(docID: "nope", parent: nil), "absent")
        assertStatus(.notFound, try coll.get(docID: "nope"))
        assertStatus(.notFound, try coll.get(docID: "nope", options: .deleted))
        assertSound(db)
    }

    func testDeleteWithoutParentUsesCurrent() throws {
        let r1 = try coll.put(docID: "d", json: "{}", parent: nil)
        let t = try coll.delete(docID: "d", parent: nil)
        XCTAssertEqual(try coll.history(docID: "d", revID: nil), [t, r1.revID])
    }

    func testDeletingATombstoneByItsRevisionIs404() throws {
        let r1 = try coll.put(docID: "d", json: "{}", parent: nil)
        let t = try coll.delete(docID: "d", parent: r1.revID)
        // Header: cbl_doc_delete fails with 404 when the document is already deleted.
        assertStatus(.notFound, try coll.delete(docID: "d", parent: t))
        XCTAssertEqual(try coll.history(docID: "d", revID: nil), [t, r1.revID])
    }

    func testGeneratedAndBodyIDs() throws {
        let r = try coll.put(docID: nil, json: #"{"a":1}"#, parent: nil)
        XCTAssertEqual(r.docID.utf8.count, 36, "a UUID")
        let r2 = try coll.put(docID: nil, json: #"{"a":1}"#, parent: nil)
        XCTAssertNotEqual(r.docID, r2.docID)
        XCTAssertEqual(try coll.doc(r.docID)["a"], .int(1))

        let fromBody = try coll.put(docID: nil, json: #"{"_id":"given","x":true}"#, parent: nil)
        XCTAssertEqual(fromBody.docID, "given")
        let d = try coll.doc("given")
        XCTAssertEqual(d["x"], .bool(true))
        XCTAssertEqual(d.members.count, 3, "_id is metadata, not stored in the body")

        // Matching _id in body and argument is fine; a different one is 400.
        XCTAssertNoThrow(try coll.put(docID: "same", json: #"{"_id":"same"}"#, parent: nil))
        assertStatus(.badRequest, try coll.put(docID: "one", json: #"{"_id":"other"}"#, parent: nil))
        assertStatus(.notFound, try coll.get(docID: "one"))

        // _rev in the body names the parent.
        let next = try coll.put(docID: "given", json: #"{"_rev":"\#(fromBody.revID)","x":false}"#, parent: nil)
        XCTAssertEqual(gen(next.revID), 2)
        XCTAssertEqual(try coll.history(docID: "given", revID: nil), [next.revID, fromBody.revID])
        // Both given and equal: fine; different: 400.
        let n3 = try coll.put(docID: "given", json: #"{"_rev":"\#(next.revID)","x":1}"#, parent: next.revID)
        assertStatus(.badRequest, try coll.put(docID: "given", json: #"{"_rev":"\#(next.revID)"}"#, parent: n3.revID))
    }

    func testDocumentIDRules() throws {
        for id in ["", "_design", "_design/", "_designx", "_Design/x", "_local/x", "_", "a\u{0}b", "tab\there", "del\u{7F}", String(repeating: "x", count: 1025)] {
            assertStatus(.badRequest, try coll.put(docID: id, json: "{}", parent: nil), id.debugDescription)
            assertStatus(.badRequest, try coll.get(docID: id), id.debugDescription)
        }
        for id in ["a", "with space", "ünïcødé/😀", "a_b", "-x", String(repeating: "y", count: 1024), "1-abc"] {
            XCTAssertNoThrow(try coll.put(docID: id, json: "{}", parent: nil), id)
            XCTAssertEqual(try coll.doc(id)["_id"], .string(id))
        }
    }

    /// "_design/NAME" documents (CouchDB's design documents) are ordinary documents:
    /// revisions, attachments, deletion, the all-documents query (in ID
    /// order: '_' sorts between upper and lower case), the changes feed, revs_diff;
    /// only that exact prefix with a name (testDocumentIDRules).
    func testDesignDocumentsAreOrdinaryDocuments() throws {
        let id = "_design/app"
        let body = #"{"language":"javascript","views":{"v":{"map":"function(doc){ emit(doc._id, 1); }"}}}"#
        let r1 = try coll.put(docID: id, json: body, parent: nil)
        XCTAssertEqual(try coll.doc(id)["views"]?.objectValue?["v"]?.objectValue?["map"],
                       .string("function(doc){ emit(doc._id, 1); }"))
        assertStatus(.conflict, try coll.put(docID: id, json: body, parent: nil))
        let r2 = try coll.setAttachment(docID: id, parent: r1.revID, name: "index.html", contentType: "text/html",
                                        bytes: Array("<p>".utf8))
        XCTAssertEqual(try coll.attachmentContent(docID: id, name: "index.html"), Array("<p>".utf8))
        XCTAssertEqual(try coll.history(docID: id, revID: nil), [r2, r1.revID])
        _ = try coll.put(docID: "A", json: "{}", parent: nil)
        _ = try coll.put(docID: "a", json: "{}", parent: nil)
        XCTAssertEqual(try coll.allDocsQuery().allRows().compactMap(\.docID), ["A", id, "a"])
        XCTAssertEqual(try coll.changes(since: 0).map(\.docID), [id, "A", "a"])
        XCTAssertEqual(try coll.revsDiff([(id, [r2, "3-x"])]).map(\.missing), [["3-x"]])
        // Views never see design documents (CouchDB's rule).
        let v = try coll.view(named: "ids")
        v.setMapReduce(map: { doc, e in e.emit(try doc.object["_id"]!, nil) }, reduce: nil, version: "1")
        XCTAssertEqual(try v.query(QueryOptions()).allRows().compactMap(\.docID), ["a", "A"])   // view collation
        let tomb = try coll.delete(docID: id, parent: r2)
        assertStatus(.notFound, try coll.get(docID: id))
        XCTAssertEqual(try coll.doc(id, [.deleted])["_rev"], .string(tomb))
        XCTAssertEqual(try coll.allDocsQuery().allRows().compactMap(\.docID), ["A", "a"])
    }

    /// A document nested `JSONParser.maxDepth` levels is stored and read back whole; one
    /// level more is a 400 naming the limit, and nothing is stored.
    func testDocumentsNestedToTheLimit() throws {
        let n = JSONParser.maxDepth
        let members = { (d: Int) in #""a":"# + String(repeating: "[", count: d - 1) + String(repeating: "]", count: d - 1) }
        let r = try coll.put(docID: "deep", json: "{" + members(n) + "}", parent: nil)
        XCTAssertEqual(String(decoding: try coll.get(docID: "deep"), as: UTF8.self),
                       #"{"_id":"deep","_rev":"\#(r.revID)","# + members(n) + "}")
        XCTAssertThrowsError(try coll.put(docID: "deeper", json: "{" + members(n + 1) + "}", parent: nil)) {
            XCTAssertEqual(($0 as? CBLError)?.status, .badRequest)
            XCTAssertTrue("\($0)".contains("nesting deeper than \(n)"), "\($0)")
        }
        assertStatus(.notFound, try coll.get(docID: "deeper", options: [.deleted]))
    }

    func testConflictOnStaleParentAndExistingID() throws {
        let r1 = try coll.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        assertStatus(.conflict, try coll.put(docID: "d", json: #"{"v":9}"#, parent: nil), "creating an existing document")
        let r2 = try coll.put(docID: "d", json: #"{"v":2}"#, parent: r1.revID)
        assertStatus(.conflict, try coll.put(docID: "d", json: #"{"v":3}"#, parent: r1.revID), "stale parent")
        assertStatus(.conflict, try coll.delete(docID: "d", parent: r1.revID), "stale parent on delete")
        assertStatus(.notFound, try coll.put(docID: "absent", json: "{}", parent: r1.revID), "parent of an absent document")
        assertStatus(.badRequest, try coll.put(docID: "d", json: "{}", parent: "garbage"))
        XCTAssertEqual(try coll.doc("d")["_rev"], .string(r2.revID))
        XCTAssertEqual(try coll.lastSequence, 2, "failed saves use no sequence")
    }

    func testRecreateOnTombstone() throws {
        let r1 = try coll.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        let t = try coll.delete(docID: "d", parent: r1.revID)
        XCTAssertEqual(try coll.count, 0)
        let again = try coll.put(docID: "d", json: #"{"v":"again"}"#, parent: nil)
        XCTAssertEqual(gen(again.revID), 3, "re-creation extends the tombstone")
        XCTAssertEqual(try coll.history(docID: "d", revID: nil), [again.revID, t, r1.revID])
        XCTAssertEqual(try coll.doc("d")["v"], .string("again"))
        XCTAssertEqual(try coll.count, 1)
        assertSound(db)
    }

    func testBadBodiesAndReservedProperties() throws {
        let bad = [
            #"{"_x":1}"#, #"{"a":1,"_private":true}"#, #"{"_revisions":{}}"#, #"{"_conflicts":[]}"#, #"{"_local_seq":1}"#,
            #"{"_id":5}"#, #"{"_rev":"nope"}"#, #"{"_rev":3}"#, #"{"_deleted":"yes"}"#, #"{"_attachments":[]}"#,
            "not json", "[1,2]", "\"str\"", "{", #"{"a":1,"a":2}"#,
        ]
        for b in bad { assertStatus(.badRequest, try coll.put(docID: "d", json: b, parent: nil), b) }
        XCTAssertEqual(try coll.lastSequence, 0)
        // A replication's state members (CouchDB's `_replicator` documents) are kept as content.
        let state = #"{"_replication_state":"completed","_replication_state_time":"2026-11-28T15:37:12Z","#
            + #""_replication_stats":{"docs_written":8},"_replication_id":"x","_replication_state_reason":"r","source":"a"}"#
        XCTAssertNoThrow(try coll.put(docID: "job", json: state, parent: nil))
        XCTAssertEqual(try coll.doc("job")["_replication_state"], .string("completed"))
        XCTAssertEqual(try coll.doc("job")["_replication_stats"]?.objectValue?["docs_written"], .int(8))
        // Nested '_' properties are ordinary data.
        XCTAssertNoThrow(try coll.put(docID: "nested", json: #"{"a":{"_x":1}}"#, parent: nil))
        XCTAssertEqual(try coll.doc("nested")["a"]?.objectValue?["_x"], .int(1))
        // _attachments entries are validated (AttachmentTests): an entry without content is a 400,
        // inline data becomes a stub.
        assertStatus(.badRequest, try coll.put(docID: "att", json: #"{"_attachments":{"f":{"length":3}},"k":1}"#, parent: nil))
        XCTAssertNoThrow(try coll.put(docID: "att", json: #"{"_attachments":{"f":{"data":"YWJj"}},"k":1}"#, parent: nil))
        XCTAssertEqual(try coll.doc("att")["_attachments"]?.objectValue?["f"]?.objectValue?["length"], .int(3))
        // Hostile nesting is a 400, not a crash.
        let deep = "{\"a\":" + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "}"
        assertStatus(.badRequest, try coll.put(docID: "deep", json: deep, parent: nil))
        let invalidUTF8: [UInt8] = Array(#"{"k":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8)
        _ = try invalidUTF8.withUnsafeBufferPointer { p in
            assertStatus(.badRequest, try coll.put(docID: "utf", body: p, parent: nil))
        }
    }

    func testIdenticalChangeGivesIdenticalRevIDOnTwoDatabases() throws {
        let other = try open("other")
        let oc = try other.defaultCollection()
        // Same content, different key order and number spelling: same canonical body.
        let a1 = try coll.put(docID: "d", json: #"{"b":2,"a":1.0,"c":{"y":1,"x":[1e0]}}"#, parent: nil)
        let b1 = try oc.put(docID: "d", json: #"{"a":1,"c":{"x":[1],"y":1},"b":2}"#, parent: nil)
        XCTAssertEqual(a1.revID, b1.revID)
        let a2 = try coll.put(docID: "d", json: #"{"z":true}"#, parent: a1.revID)
        let b2 = try oc.put(docID: "d", json: #"{"z":true}"#, parent: b1.revID)
        XCTAssertEqual(a2.revID, b2.revID)
        XCTAssertEqual(try coll.delete(docID: "d", parent: nil), try oc.delete(docID: "d", parent: nil))
        // The document ID is not part of the digest input; the parent is.
        let e1 = try coll.put(docID: "e", json: #"{"z":true}"#, parent: nil)
        XCTAssertNotEqual(e1.revID, a2.revID)
        // A different body gives a different ID.
        let f1 = try coll.put(docID: "f", json: #"{"z":false}"#, parent: nil)
        XCTAssertNotEqual(f1.revID, e1.revID)
        // And it is the documented digest: RevID.make over the canonical body.
        XCTAssertEqual(a1.revID, RevID.make(parent: nil, deleted: false,
                                            canonicalBody: Array(#"{"a":1,"b":2,"c":{"x":[1],"y":1}}"#.utf8)).string)
    }

    func testTombstoneWithProperties() throws {
        let r1 = try coll.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        let t = try coll.put(docID: "d", json: #"{"_deleted":true,"reason":"gone"}"#, parent: r1.revID)
        assertStatus(.notFound, try coll.get(docID: "d"))
        let tomb = try coll.doc("d", .deleted)
        XCTAssertEqual(tomb["_deleted"], .bool(true))
        XCTAssertEqual(tomb["reason"], .string("gone"))
        XCTAssertEqual(tomb["_rev"], .string(t.revID))
        XCTAssertNil(tomb["v"])
        XCTAssertEqual(try coll.count, 0)
        // Deleted flag is part of the digest: same body without _deleted differs.
        let live = RevID.make(parent: RevID(r1.revID), deleted: false, canonicalBody: Array(#"{"reason":"gone"}"#.utf8))
        XCTAssertNotEqual(live.string, t.revID)
        XCTAssertEqual(RevID.make(parent: RevID(r1.revID), deleted: true, canonicalBody: Array(#"{"reason":"gone"}"#.utf8)).string, t.revID)
        // A document can be created directly as a tombstone.
        let born = try coll.put(docID: "born-dead", json: #"{"_deleted":true}"#, parent: nil)
        XCTAssertEqual(gen(born.revID), 1)
        assertStatus(.notFound, try coll.get(docID: "born-dead"))
        XCTAssertEqual(try coll.doc("born-dead", .deleted)["_deleted"], .bool(true))
        XCTAssertEqual(try coll.count, 0)
        assertSound(db)
    }

    // MARK: get options and specific revisions

    func testGetOptions() throws {
        let r1 = try coll.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        let r2 = try coll.put(docID: "d", json: #"{"v":2}"#, parent: r1.revID)
        let r3 = try coll.put(docID: "d", json: #"{"v":3}"#, parent: r2.revID)
        _ = try coll.put(docID: "other", json: "{}", parent: nil)

        let plain = try coll.doc("d")
        XCTAssertNil(plain["_conflicts"])
        XCTAssertNil(plain["_revisions"])
        XCTAssertNil(plain["_local_seq"])

        let revs = try coll.doc("d", .revisions)
        let rv = try XCTUnwrap(revs["_revisions"]?.objectValue)
        XCTAssertEqual(rv["start"], .int(3))
        XCTAssertEqual(rv["ids"], .array([r3.revID, r2.revID, r1.revID].map { .string(digest($0)) }))
        XCTAssertEqual(revs["v"], .int(3))

        let seq = try coll.doc("d", .localSeq)
        XCTAssertEqual(seq["_local_seq"], .int(3))
        XCTAssertEqual(try coll.doc("other", .localSeq)["_local_seq"], .int(4))

        XCTAssertNil(try coll.doc("d", .conflicts)["_conflicts"], "no conflicts: no _conflicts")

        let branch = try coll.put(docID: "d", json: #"{"v":"b"}"#, parent: r1.revID, allowConflict: true)
        let all = try coll.doc("d", [.conflicts, .revisions, .localSeq])
        XCTAssertEqual(all["_rev"], .string(r3.revID), "3-x beats 2-y")
        XCTAssertEqual(all["_conflicts"], .array([.string(branch.revID)]))
        XCTAssertEqual(all["_local_seq"], .int(5))
        XCTAssertEqual(all["_revisions"]?.objectValue?["start"], .int(3))

        // A deleted document with options.
        _ = try coll.delete(docID: "other", parent: nil)
        let tomb = try coll.doc("other", [.deleted, .revisions, .localSeq])
        XCTAssertEqual(tomb["_deleted"], .bool(true))
        XCTAssertEqual(tomb["_local_seq"], .int(6))
        XCTAssertEqual(tomb["_revisions"]?.objectValue?["start"], .int(2))
        assertStatus(.notFound, try coll.get(docID: "other", options: [.revisions]))
    }

    /// A plain read renders straight into storage of its computed size; it must give the
    /// bytes the general writer gives, for IDs that need escaping too, and both outputs
    /// (array and malloc'ed C string) must agree.
    func testRenderedDocumentMatchesTheGeneralWriter() throws {
        let ids = ["d", "doc-000042", "quote\"d", "back\\slash", "tab\tid", "caf\u{e9}", "emoji\u{1F600}", String(repeating: "x", count: 300)]
        let bodies: [[UInt8]?] = [nil, Array("{}".utf8), Array(#"{"a":1}"#.utf8), Array(#"{"a":"\u0000","b":[1,{"c":null}]}"#.utf8)]
        let extrasCases: [[(String, JSONValue)]] = [[], [("_local_seq", .int(7))]]
        for id in ids {
            for rev in ["1-abc", "12-0123456789abcdef0123456789abcdef01234567"] {
                for deleted in [false, true] {
                    for body in bodies {
                        for extras in extrasCases {
                            var w = JSONWriter()
                            var idCopy = id, revCopy = rev
                            idCopy.withUTF8 { i in revCopy.withUTF8 { r in
                                body.withUnsafeBufferPointerIfAny { b in
                                    DocumentJSON.write(into: &w, docID: i, rev: r, deleted: deleted, body: b, extras: extras)
                                }
                            } }
                            let rendered = revCopy.withUTF8 { r in
                                body.withUnsafeBufferPointerIfAny { b in
                                    (DocumentJSON.render(as: [UInt8].self, docID: id, rev: r, deleted: deleted, body: b, extras: extras),
                                     DocumentJSON.render(as: MallocedText.self, docID: id, rev: r, deleted: deleted, body: b, extras: extras))
                                }
                            }
                            let what = "id \(id.debugDescription) rev \(rev) deleted \(deleted) body \(body.map { String(decoding: $0, as: UTF8.self) } ?? "nil") extras \(extras.count)"
                            XCTAssertEqual(rendered.0, w.bytes, what)
                            let c = rendered.1
                            defer { free(c.pointer) }
                            XCTAssertEqual(c.count, w.bytes.count, what)
                            XCTAssertEqual(Array(UnsafeRawBufferPointer(start: c.pointer, count: c.count)), w.bytes, what)
                            XCTAssertEqual(c.pointer[c.count], 0, "NUL-terminated: \(what)")
                            XCTAssertNoThrow(try JSONParser.parse(String(decoding: w.bytes, as: UTF8.self)), what)
                        }
                    }
                }
            }
        }
        // And through the collection: the stored document read back by both entry points.
        for id in ids where !id.contains("\t") {     // control characters are not allowed in stored IDs
            let r = try coll.put(docID: id, json: #"{"k":"v","n":[1,2]}"#, parent: nil)
            let bytes = try coll.get(docID: id)
            let text = try coll.getText(docID: id)
            defer { free(text.pointer) }
            XCTAssertEqual(Array(UnsafeRawBufferPointer(start: text.pointer, count: text.count)), bytes)
            let parsed = try JSONParser.parseObject(String(decoding: bytes, as: UTF8.self), what: "doc")
            XCTAssertEqual(parsed["_id"], .string(id))
            XCTAssertEqual(parsed["_rev"], .string(r.revID))
            XCTAssertEqual(parsed["n"], .array([.int(1), .int(2)]))
        }
    }

    /// Tombstones kept (CouchDB's doc_del_count): counted after a delete, inside a
    /// transaction with its own changes, and no longer once purged.
    func testDeletedCount() throws {
        XCTAssertEqual(try coll.deletedCount, 0)
        let a = try coll.put(docID: "a", json: "{}", parent: nil)
        _ = try coll.put(docID: "b", json: "{}", parent: nil)
        let tomb = try coll.delete(docID: "a", parent: a.revID)
        XCTAssertEqual(try coll.deletedCount, 1)
        XCTAssertEqual(try coll.count, 1)
        try db.begin()
        _ = try coll.delete(docID: "b", parent: nil)
        XCTAssertEqual(try coll.deletedCount, 2, "the transaction's own delete")
        try db.abort()
        XCTAssertEqual(try coll.deletedCount, 1)
        _ = try coll.purge(docID: "a", revs: [tomb])
        XCTAssertEqual(try coll.deletedCount, 0)
        _ = try coll.put(docID: "a", json: "{}", parent: nil)    // re-created after the purge: live
        XCTAssertEqual(try coll.deletedCount, 0)
        XCTAssertEqual(try coll.count, 2)
    }

    func testGetSpecificRevision() throws {
        let r1 = try coll.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        let r2 = try coll.put(docID: "d", json: #"{"v":2}"#, parent: r1.revID)
        let old = obj(try coll.get(docID: "d", revID: r1.revID))
        XCTAssertEqual(old["v"], .int(1))
        XCTAssertEqual(old["_rev"], .string(r1.revID))
        XCTAssertEqual(old["_id"], .string("d"))
        let cur = obj(try coll.get(docID: "d", revID: r2.revID, options: .revisions))
        XCTAssertEqual(cur["v"], .int(2))
        XCTAssertEqual(cur["_revisions"]?.objectValue?["ids"], .array([.string(digest(r2.revID)), .string(digest(r1.revID))]))
        let oldRevs = obj(try coll.get(docID: "d", revID: r1.revID, options: .revisions))
        XCTAssertEqual(oldRevs["_revisions"]?.objectValue?["start"], .int(1))
        assertStatus(.notFound, try coll.get(docID: "d", revID: "1-0000"))
        assertStatus(.notFound, try coll.get(docID: "d", revID: "9-" + digest(r2.revID)))
        assertStatus(.badRequest, try coll.get(docID: "d", revID: "not-a-rev"))
        assertStatus(.notFound, try coll.get(docID: "absent", revID: r1.revID))
        // A tombstone revision is readable and marked deleted.
        let t = try coll.delete(docID: "d", parent: nil)
        let tomb = obj(try coll.get(docID: "d", revID: t))
        XCTAssertEqual(tomb["_deleted"], .bool(true))
        XCTAssertEqual(obj(try coll.get(docID: "d", revID: r2.revID))["v"], .int(2), "ancestors of a tombstone stay readable")
    }

    // MARK: conflicts

    func testAllowConflictCreatesBranches() throws {
        let r1 = try coll.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        let r2 = try coll.put(docID: "d", json: #"{"v":2}"#, parent: r1.revID)
        assertStatus(.conflict, try coll.put(docID: "d", json: #"{"v":"b"}"#, parent: r1.revID))
        let b2 = try coll.put(docID: "d", json: #"{"v":"b"}"#, parent: r1.revID, allowConflict: true)
        XCTAssertEqual(gen(b2.revID), 2)
        let winner = max(RevID(r2.revID)!, RevID(b2.revID)!).string
        let loser = winner == r2.revID ? b2.revID : r2.revID
        XCTAssertEqual(try coll.doc("d")["_rev"], .string(winner))
        XCTAssertEqual(try coll.conflicts(docID: "d"), [winner, loser])
        XCTAssertEqual(try coll.count, 1, "a conflicted document is still one document")
        // Saving on the losing branch (allowConflict) makes it win by generation.
        let b3 = try coll.put(docID: "d", json: #"{"v":"b3"}"#, parent: loser, allowConflict: true)
        XCTAssertEqual(try coll.doc("d")["_rev"], .string(b3.revID))
        XCTAssertEqual(try coll.conflicts(docID: "d"), [b3.revID, winner])
        // Unknown parent with allowConflict: 404.
        assertStatus(.notFound, try coll.put(docID: "d", json: "{}", parent: "1-ffff", allowConflict: true))
        // The same change on the same parent twice: the revision exists already.
        assertStatus(.conflict, try coll.put(docID: "d", json: #"{"v":"b"}"#, parent: r1.revID, allowConflict: true))
        // Every branch's body is readable.
        XCTAssertEqual(obj(try coll.get(docID: "d", revID: winner))["_rev"], .string(winner))
        XCTAssertEqual(obj(try coll.get(docID: "d", revID: loser))["_rev"], .string(loser))
        assertSound(db)
    }

    func testWinnerSelectionThroughTheAPI() throws {
        // Ties: the higher revision ID in ASCII wins, whatever the insertion order.
        try coll.putExisting(docID: "tie", json: #"{"b":"B"}"#, history: ["2-BBB", "1-root"])
        try coll.putExisting(docID: "tie", json: #"{"b":"b"}"#, history: ["2-bbb", "1-root"])
        try coll.putExisting(docID: "tie", json: #"{"b":"a"}"#, history: ["2-aaa", "1-root"])
        XCTAssertEqual(try coll.doc("tie")["_rev"], .string("2-bbb"))
        XCTAssertEqual(try coll.conflicts(docID: "tie"), ["2-bbb", "2-aaa", "2-BBB"])

        // Generation is numeric: 10 beats 9.
        try coll.putExisting(docID: "gen", json: #"{"g":9}"#, history: ["9-zzz", "8-zzz"])
        try coll.putExisting(docID: "gen", json: #"{"g":10}"#, history: ["10-aaa", "9-aaa"])
        XCTAssertEqual(try coll.doc("gen")["g"], .int(10))

        // An undeleted leaf beats a deleted leaf of higher generation.
        try coll.putExisting(docID: "del", json: #"{"live":true}"#, history: ["2-live", "1-r"])
        try coll.putExisting(docID: "del", json: #"{"_deleted":true}"#, history: ["4-dead", "3-x", "2-x", "1-r"])
        XCTAssertEqual(try coll.doc("del")["_rev"], .string("2-live"))
        XCTAssertEqual(try coll.conflicts(docID: "del"), ["2-live"])

        // Deleting the last live branch: the highest deleted leaf becomes current.
        let t = try coll.delete(docID: "del", parent: "2-live")
        XCTAssertEqual(gen(t), 3)
        assertStatus(.notFound, try coll.get(docID: "del"))
        XCTAssertEqual(try coll.doc("del", .deleted)["_rev"], .string("4-dead"))
        XCTAssertEqual(try coll.conflicts(docID: "del"), [], "a deleted document has no conflicts list")
        XCTAssertEqual(try coll.count, 2)

        // Deleting the winner of a conflict uncovers the other branch.
        let r1 = try coll.put(docID: "c", json: #"{"v":1}"#, parent: nil)
        let a = try coll.put(docID: "c", json: #"{"v":"a"}"#, parent: r1.revID)
        let b = try coll.put(docID: "c", json: #"{"v":"b"}"#, parent: r1.revID, allowConflict: true)
        let w = max(RevID(a.revID)!, RevID(b.revID)!).string
        let l = w == a.revID ? b.revID : a.revID
        _ = try coll.delete(docID: "c", parent: w)
        XCTAssertEqual(try coll.doc("c")["_rev"], .string(l))
        XCTAssertEqual(try coll.count, 3)
        assertSound(db)
    }

    func testHistoryAndRevisionTree() throws {
        let r1 = try coll.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        let r2 = try coll.put(docID: "d", json: #"{"v":2}"#, parent: r1.revID)
        let r3 = try coll.put(docID: "d", json: #"{"v":3}"#, parent: r2.revID)
        let b2 = try coll.put(docID: "d", json: #"{"v":"b"}"#, parent: r1.revID, allowConflict: true)
        XCTAssertEqual(try coll.history(docID: "d", revID: nil), [r3.revID, r2.revID, r1.revID])
        XCTAssertEqual(try coll.history(docID: "d", revID: b2.revID), [b2.revID, r1.revID])
        XCTAssertEqual(try coll.history(docID: "d", revID: r1.revID), [r1.revID])
        assertStatus(.notFound, try coll.history(docID: "d", revID: "7-abc"))
        assertStatus(.badRequest, try coll.history(docID: "d", revID: "x"))
        assertStatus(.notFound, try coll.history(docID: "absent", revID: nil))
        assertStatus(.notFound, try coll.conflicts(docID: "absent"))
        assertStatus(.notFound, try coll.revisionTree(docID: "absent"))

        let tree = obj(try coll.revisionTree(docID: "d"))
        XCTAssertEqual(tree["id"], .string("d"))
        XCTAssertEqual(tree["current"], .string(r3.revID))
        XCTAssertEqual(tree["sequence"], .int(4))
        let list = try XCTUnwrap(tree["revisions"]?.arrayValue).compactMap(\.objectValue)
        XCTAssertEqual(list.count, 4)
        let order = list.compactMap { $0["rev"]?.stringValue }
        XCTAssertEqual(order, [r3.revID] + [r2.revID, b2.revID].sorted { RevID($1)! < RevID($0)! } + [r1.revID], "newest first")
        func entry(_ rev: String) -> JSONObject { list.first { $0["rev"]?.stringValue == rev }! }
        XCTAssertEqual(entry(r1.revID)["parent"], .null)
        XCTAssertEqual(entry(r2.revID)["parent"], .string(r1.revID))
        XCTAssertEqual(entry(b2.revID)["parent"], .string(r1.revID))
        XCTAssertEqual(entry(r3.revID)["current"], .bool(true))
        XCTAssertEqual(entry(b2.revID)["current"], .bool(false))
        XCTAssertEqual(entry(r3.revID)["leaf"], .bool(true))
        XCTAssertEqual(entry(b2.revID)["leaf"], .bool(true))
        XCTAssertEqual(entry(r2.revID)["leaf"], .bool(false))
        XCTAssertEqual(entry(r1.revID)["has_body"], .bool(true))
        XCTAssertEqual(entry(r3.revID)["has_body"], .bool(true))
        for e in list { XCTAssertEqual(e["deleted"], .bool(false)) }

        // Single-revision document.
        let s = try coll.put(docID: "single", json: "{}", parent: nil)
        let st = obj(try coll.revisionTree(docID: "single"))
        XCTAssertEqual(st["revisions"]?.arrayValue?.count, 1)
        XCTAssertEqual(st["current"], .string(s.revID))
        XCTAssertEqual(try coll.history(docID: "single", revID: nil), [s.revID])
        XCTAssertEqual(try coll.conflicts(docID: "single"), [s.revID])
    }

    // MARK: putExisting

    func testPutExistingWithHistory() throws {
        XCTAssertTrue(try coll.putExisting(docID: "r", json: #"{"v":3}"#, history: ["3-ccc", "2-bbb", "1-aaa"]))
        let d = try coll.doc("r")
        XCTAssertEqual(d["_rev"], .string("3-ccc"))
        XCTAssertEqual(d["v"], .int(3))
        XCTAssertEqual(try coll.history(docID: "r", revID: nil), ["3-ccc", "2-bbb", "1-aaa"])
        // Missing ancestors are added without bodies.
        assertStatus(.notFound, try coll.get(docID: "r", revID: "2-bbb"))
        let tree = obj(try coll.revisionTree(docID: "r")).members.first { $0.key == "revisions" }!.value.arrayValue!
        let bodies = tree.compactMap(\.objectValue).map { ($0["rev"]!.stringValue!, $0["has_body"]!.boolValue!) }
        XCTAssertEqual(bodies.map(\.0), ["3-ccc", "2-bbb", "1-aaa"])
        XCTAssertEqual(bodies.map(\.1), [true, false, false])
        XCTAssertEqual(try coll.doc("r", .revisions)["_revisions"]?.objectValue?["ids"],
                       .array([.string("ccc"), .string("bbb"), .string("aaa")]))

        // Already known: no-op, returns false, nothing changes.
        let seqBefore = try coll.lastSequence
        XCTAssertFalse(try coll.putExisting(docID: "r", json: #"{"v":3}"#, history: ["3-ccc", "2-bbb", "1-aaa"]))
        XCTAssertFalse(try coll.putExisting(docID: "r", json: #"{"v":"other"}"#, history: ["2-bbb", "1-aaa"]))
        XCTAssertEqual(try coll.lastSequence, seqBefore)
        XCTAssertEqual(try coll.doc("r")["v"], .int(3))

        // Extending the known branch with a partial history.
        XCTAssertTrue(try coll.putExisting(docID: "r", json: #"{"v":5}"#, history: ["5-eee", "4-ddd", "3-ccc"]))
        XCTAssertEqual(try coll.history(docID: "r", revID: nil), ["5-eee", "4-ddd", "3-ccc", "2-bbb", "1-aaa"])
        // A branch off an older ancestor: a conflict.
        XCTAssertTrue(try coll.putExisting(docID: "r", json: #"{"v":"x"}"#, history: ["3-xxx", "2-bbb"]))
        XCTAssertEqual(try coll.conflicts(docID: "r"), ["5-eee", "3-xxx"])
        XCTAssertEqual(try coll.doc("r", .conflicts)["_conflicts"], .array([.string("3-xxx")]))
        XCTAssertEqual(try coll.history(docID: "r", revID: "3-xxx"), ["3-xxx", "2-bbb", "1-aaa"])
        // A tombstone from elsewhere.
        XCTAssertTrue(try coll.putExisting(docID: "r", json: #"{"_deleted":true}"#, history: ["4-yyy", "3-xxx"]))
        XCTAssertEqual(try coll.conflicts(docID: "r"), ["5-eee"])
        XCTAssertEqual(try coll.count, 1)
        // _rev in the body must match history[0]; _id must match.
        XCTAssertTrue(try coll.putExisting(docID: "s", json: #"{"_id":"s","_rev":"1-abc"}"#, history: ["1-abc"]))
        assertStatus(.badRequest, try coll.putExisting(docID: "s2", json: #"{"_rev":"1-zzz"}"#, history: ["1-abc"]))
        assertStatus(.badRequest, try coll.putExisting(docID: "s3", json: #"{"_id":"other"}"#, history: ["1-abc"]))
        assertSound(db)
    }

    func testPutExistingBadHistory() throws {
        let bad: [[String]] = [[], ["nope"], ["3-a", "1-b"], ["1-a", "2-b"], ["2-a", "2-b"], ["2-a", "x"], ["0-a"], ["3-a", "2-"]]
        for h in bad {
            assertStatus(.badRequest, try coll.putExisting(docID: "h", json: "{}", history: h), "\(h)")
        }
        assertStatus(.badRequest, try coll.putExisting(docID: "_bad", json: "{}", history: ["1-a"]))
        assertStatus(.badRequest, try coll.putExisting(docID: "h", json: "[]", history: ["1-a"]))
        assertStatus(.badRequest, try coll.putExisting(docID: "h", json: #"{"_q":1}"#, history: ["1-a"]))
        assertStatus(.notFound, try coll.get(docID: "h"))
        XCTAssertEqual(try coll.lastSequence, 0)
    }

    // MARK: pruning, compaction, purge

    func testPruningOnSave() throws {
        try db.setMaxRevTreeDepth(5)
        var revs: [String] = []
        var parent: String? = nil
        for i in 1...12 {
            let r = try coll.put(docID: "p", json: #"{"i":\#(i)}"#, parent: parent)
            revs.append(r.revID)
            parent = r.revID
        }
        let history = try coll.history(docID: "p", revID: nil)
        XCTAssertEqual(history, Array(revs.reversed().prefix(5)))
        XCTAssertEqual(obj(try coll.revisionTree(docID: "p"))["revisions"]?.arrayValue?.count, 5)
        assertStatus(.notFound, try coll.get(docID: "p", revID: revs[0]), "pruned")
        XCTAssertEqual(obj(try coll.get(docID: "p", revID: revs[7]))["i"], .int(8), "kept ancestor still has its body")
        XCTAssertEqual(try coll.doc("p", .revisions)["_revisions"]?.objectValue?["ids"]?.arrayValue?.count, 5)

        // A branch keeps its own depth.
        let b = try coll.put(docID: "p", json: #"{"branch":1}"#, parent: revs[9], allowConflict: true)
        let bh = try coll.history(docID: "p", revID: b.revID)
        XCTAssertEqual(bh, [b.revID, revs[9], revs[8], revs[7]])
        XCTAssertLessThanOrEqual(bh.count, 5)

        // Default depth 20 on a fresh database.
        let d2 = try open("depth")
        let c2 = try d2.defaultCollection()
        parent = nil
        for i in 1...25 { parent = try c2.put(docID: "q", json: #"{"i":\#(i)}"#, parent: parent).revID }
        XCTAssertEqual(try c2.history(docID: "q", revID: nil).count, 20)
        assertSound(db)
        assertSound(d2)
    }

    /// An update on the current revision is one statement that extends the stored tree
    /// (DocumentStore.appendOnCurrent); with a validator registered every save takes the
    /// general path. The same saves on both give the same trees, revisions and sequences.
    func testUpdatesOnTheCurrentRevisionStoreWhatTheGeneralPathStores() throws {
        let general = try open("general")
        let generalColl = try general.defaultCollection()
        try generalColl.setValidator(name: "accept-all") { _, _ in nil }
        var log: [String] = []
        for (d, c) in [(db!, coll!), (general, generalColl)] {
            try d.setMaxRevTreeDepth(4)
            var out: [String] = []
            func save(_ id: String, _ json: String, _ parent: String?, allowConflict: Bool = false) -> String? {
                do {
                    return try c.put(docID: id, json: json, parent: parent, allowConflict: allowConflict).revID
                } catch let e as CBLError {
                    out.append("\(id): \(e.status)")
                    return nil
                } catch { XCTFail("\(error)"); return nil }
            }
            // A chain past the depth limit.
            var p = save("chain", #"{"v":0}"#, nil)
            for i in 1...7 { p = save("chain", #"{"v":\#(i),"x":12.50}"#, p) }
            // A conflicted document whose winner is updated (pruned with a branch kept), then its loser.
            let r1 = save("conflict", #"{"v":1}"#, nil)
            var w = save("conflict", #"{"v":2}"#, r1)
            let loser = save("conflict", #"{"v":"b"}"#, r1, allowConflict: true)
            XCTAssertTrue(try c.conflicts(docID: "conflict").count == 2)
            w = try c.conflicts(docID: "conflict").first
            for i in 3...8 { w = save("conflict", #"{"v":\#(i)}"#, w) }
            _ = save("conflict", #"{"v":"b2"}"#, loser, allowConflict: true)
            // Stale parent, deleted body on the current revision, re-creation, update after it.
            let t1 = save("tomb", "{}", nil)
            let t2 = save("tomb", #"{"a":1}"#, t1)
            _ = save("tomb", #"{"a":2}"#, t1)
            let t3 = save("tomb", #"{"_deleted":true}"#, t2)
            _ = save("tomb", #"{"a":3}"#, t3)
            let t5 = try c.doc("tomb")["_rev"]?.stringValue
            _ = save("tomb", #"{"a":4}"#, t5)
            _ = save("missing", "{}", "1-abc")
            for id in ["chain", "conflict", "tomb"] {
                out.append(try c.revisionTree(docID: id))
                out.append(String(decoding: try c.get(docID: id, options: .deleted), as: UTF8.self))
                out.append(try c.conflicts(docID: id).joined(separator: ","))
                out.append(try c.history(docID: id, revID: nil).joined(separator: ","))
            }
            out.append("seq \(try c.lastSequence) count \(try c.count)")
            if log.isEmpty { log = out } else { XCTAssertEqual(out, log) }
        }
        XCTAssertEqual(try coll.history(docID: "chain", revID: nil).count, 4)
        XCTAssertEqual(try coll.conflicts(docID: "conflict").count, 2, "updating the winner keeps the conflict")
        XCTAssertEqual(obj(try coll.get(docID: "chain"))["x"], .double(12.5))
        assertSound(db)
        assertSound(general)
    }

    func testPruningAtDepthOne() throws {
        try db.setMaxRevTreeDepth(1)
        let r1 = try coll.put(docID: "p", json: "{}", parent: nil)
        let r2 = try coll.put(docID: "p", json: #"{"a":1}"#, parent: r1.revID)
        XCTAssertEqual(try coll.history(docID: "p", revID: nil), [r2.revID])
        let r3 = try coll.put(docID: "p", json: #"{"a":2}"#, parent: r2.revID)
        XCTAssertEqual(try coll.history(docID: "p", revID: nil), [r3.revID])
        XCTAssertEqual(gen(r3.revID), 3)
        assertSound(db)
    }

    func testCompactDropsAncestorBodiesKeepsLeaves() throws {
        let r1 = try coll.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        let r2 = try coll.put(docID: "d", json: #"{"v":2}"#, parent: r1.revID)
        let r3 = try coll.put(docID: "d", json: #"{"v":3}"#, parent: r2.revID)
        let b2 = try coll.put(docID: "d", json: #"{"v":"b"}"#, parent: r1.revID, allowConflict: true)
        let t1 = try coll.put(docID: "t", json: #"{"x":1}"#, parent: nil)
        let t2 = try coll.delete(docID: "t", parent: nil)
        XCTAssertNoThrow(try coll.get(docID: "d", revID: r2.revID))
        try db.compact()
        assertStatus(.notFound, try coll.get(docID: "d", revID: r1.revID))
        assertStatus(.notFound, try coll.get(docID: "d", revID: r2.revID))
        assertStatus(.notFound, try coll.get(docID: "t", revID: t1.revID))
        XCTAssertEqual(obj(try coll.get(docID: "d", revID: r3.revID))["v"], .int(3))
        XCTAssertEqual(obj(try coll.get(docID: "d", revID: b2.revID))["v"], .string("b"), "losing leaf keeps its body")
        XCTAssertEqual(try coll.doc("d")["v"], .int(3))
        XCTAssertEqual(obj(try coll.get(docID: "t", revID: t2))["_deleted"], .bool(true))
        XCTAssertEqual(try coll.history(docID: "d", revID: nil), [r3.revID, r2.revID, r1.revID], "revisions stay, bodies go")
        let entries = obj(try coll.revisionTree(docID: "d"))["revisions"]!.arrayValue!.compactMap(\.objectValue)
        for e in entries {
            XCTAssertEqual(e["has_body"], e["leaf"], "\(e["rev"]!)")
        }
        // Saving after compaction works.
        XCTAssertNoThrow(try coll.put(docID: "d", json: #"{"v":4}"#, parent: r3.revID))
        assertSound(db)
    }

    func testPurge() throws {
        let r1 = try coll.put(docID: "p", json: #"{"v":1}"#, parent: nil)
        _ = try coll.put(docID: "p", json: #"{"v":2}"#, parent: r1.revID)
        _ = try coll.put(docID: "keep", json: "{}", parent: nil)
        try coll.setExpiration(docID: "p", unixTime: unixTimeNow() + 3600)
        XCTAssertEqual(try coll.count, 2)
        try coll.purge(docID: "p")
        assertStatus(.notFound, try coll.get(docID: "p"))
        assertStatus(.notFound, try coll.get(docID: "p", options: .deleted))
        assertStatus(.notFound, try coll.history(docID: "p", revID: nil))
        assertStatus(.notFound, try coll.expiration(docID: "p"))
        XCTAssertEqual(try coll.count, 1)
        XCTAssertEqual(try coll.changes(since: 0).map(\.docID), ["keep"])
        assertStatus(.notFound, try coll.purge(docID: "p"))
        assertStatus(.notFound, try coll.purge(docID: "never"))
        assertStatus(.badRequest, try coll.purge(docID: ""))
        // After a purge the ID is free: a new document starts at generation 1.
        let again = try coll.put(docID: "p", json: #"{"v":1}"#, parent: nil)
        XCTAssertEqual(again.revID, r1.revID, "same content, no parent: same revision ID")
        // Purging a tombstone does not change the count.
        _ = try coll.delete(docID: "p", parent: nil)
        XCTAssertEqual(try coll.count, 1)
        try coll.purge(docID: "p")
        XCTAssertEqual(try coll.count, 1)
        assertSound(db)
    }

    // MARK: update()

    func testUpdateCreatesModifiesAndCancels() throws {
        let seen = Locked<[String?]>([])
        let r1 = try coll.update(docID: "u") { cur in
            seen.with { $0.append(cur) }
            return #"{"n":1}"#
        }
        XCTAssertEqual(seen.get(), [nil], "absent document: nil")
        XCTAssertEqual(gen(r1), 1)
        let r2 = try coll.update(docID: "u") { cur in
            let o = obj(cur ?? "{}")
            XCTAssertEqual(o["_id"], .string("u"))
            XCTAssertEqual(o["_rev"], .string(r1))
            return #"{"n":\#((o["n"]?.intValue ?? 0) + 1)}"#
        }
        XCTAssertEqual(gen(r2), 2)
        XCTAssertEqual(try coll.doc("u")["n"], .int(2))
        let e = assertStatus(.conflict, try coll.update(docID: "u") { _ in nil })
        XCTAssertEqual(e?.message, "update cancelled")
        XCTAssertEqual(try coll.doc("u")["_rev"], .string(r2))
        // A body carrying _id/_rev of its own is saved on the revision the callback saw.
        let r3 = try coll.update(docID: "u") { cur in
            var o = obj(cur!)
            o["n"] = .int(3)
            return JSONValue.object(o).jsonString
        }
        XCTAssertEqual(try coll.history(docID: "u", revID: nil), [r3, r2, r1])
        // A deleted document: nil, and the save re-creates it.
        _ = try coll.delete(docID: "u", parent: nil)
        seen.set([])
        _ = try coll.update(docID: "u") { cur in seen.with { $0.append(cur) }; return #"{"back":true}"# }
        XCTAssertEqual(seen.get(), [nil])
        XCTAssertEqual(try coll.doc("u")["back"], .bool(true))
        // Errors from the body are not retried.
        assertStatus(.badRequest, try coll.update(docID: "u") { _ in #"{"_bad":1}"# })
        assertStatus(.badRequest, try coll.update(docID: "_u") { _ in "{}" })
    }

    func testUpdateRetriesWhenAConcurrentWriterWins() throws {
        _ = try coll.put(docID: "c", json: #"{"n":0,"by":[]}"#, parent: nil)
        let calls = Locked(0)
        let c = coll!
        let newRev = try coll.update(docID: "c") { cur in
            let call = calls.with { n -> Int in n += 1; return n }
            let o = obj(cur!)
            if call == 1 {
                // Another thread saves a revision between our read and our save.
                runOnThreads(1) { _ in
                    _ = try? c.update(docID: "c") { cur in
                        var o = obj(cur!)
                        o["n"] = .int((o["n"]?.intValue ?? 0) + 1)
                        o["by"] = .array((o["by"]?.arrayValue ?? []) + [.string("other")])
                        return JSONValue.object(o).jsonString
                    }
                }
            }
            var m = o
            m["n"] = .int((o["n"]?.intValue ?? 0) + 1)
            m["by"] = .array((o["by"]?.arrayValue ?? []) + [.string("me")])
            return JSONValue.object(m).jsonString
        }
        XCTAssertEqual(calls.get(), 2, "called again after the conflict")
        let d = try coll.doc("c")
        XCTAssertEqual(d["_rev"], .string(newRev))
        XCTAssertEqual(d["n"], .int(2))
        XCTAssertEqual(d["by"], .array([.string("other"), .string("me")]))
        XCTAssertEqual(gen(newRev), 3)
        XCTAssertEqual(try coll.conflicts(docID: "c"), [newRev], "no branch was created")
    }

    // MARK: counts and sequences

    func testCountsAndLastSequenceThroughTransactions() throws {
        XCTAssertEqual(try coll.count, 0)
        XCTAssertEqual(try coll.lastSequence, 0)
        try db.begin()
        _ = try coll.put(docID: "a", json: "{}", parent: nil)
        _ = try coll.put(docID: "b", json: "{}", parent: nil)
        XCTAssertEqual(try coll.count, 2, "own uncommitted changes are visible")
        XCTAssertEqual(try coll.lastSequence, 2)
        // A failed operation inside the transaction leaves no trace in it.
        assertStatus(.conflict, try coll.put(docID: "a", json: "{}", parent: nil))
        XCTAssertEqual(try coll.lastSequence, 2)
        // Another thread sees only committed state.
        let seen = Locked<(Int64, Int64)>((-1, -1))
        let c = coll!
        runOnThreads(1) { _ in seen.set(((try? c.count) ?? -2, (try? c.lastSequence) ?? -2)) }
        XCTAssertEqual(seen.get().0, 0)
        XCTAssertEqual(seen.get().1, 0)
        try db.abort()
        XCTAssertEqual(try coll.count, 0)
        XCTAssertEqual(try coll.lastSequence, 0)
        assertStatus(.notFound, try coll.get(docID: "a"))

        try db.begin()
        let a = try coll.put(docID: "a", json: "{}", parent: nil)
        _ = try coll.put(docID: "b", json: "{}", parent: nil)
        _ = try coll.put(docID: "c", json: "{}", parent: nil)
        try db.commit()
        XCTAssertEqual(try coll.count, 3)
        XCTAssertEqual(try coll.lastSequence, 3)
        _ = try coll.delete(docID: "a", parent: a.revID)
        XCTAssertEqual(try coll.count, 2)
        XCTAssertEqual(try coll.lastSequence, 4)
        _ = try coll.put(docID: "a", json: "{}", parent: nil)
        XCTAssertEqual(try coll.count, 3)
        XCTAssertEqual(try coll.lastSequence, 5)
        try coll.putExisting(docID: "x", json: "{}", history: ["2-b", "1-a"])
        XCTAssertEqual(try coll.count, 4)
        XCTAssertEqual(try coll.lastSequence, 6)
        try coll.purge(docID: "b")
        XCTAssertEqual(try coll.count, 3)
        // Survives reopening.
        try db.close()
        let again = try open()
        let c2 = try again.defaultCollection()
        XCTAssertEqual(try c2.count, 3)
        XCTAssertEqual(try c2.lastSequence, 6)
        XCTAssertEqual(obj(try c2.get(docID: "a", options: .localSeq))["_local_seq"], .int(5))
        assertSound(again)
    }

    func testPurgeInsideAbortedTransaction() throws {
        let r = try coll.put(docID: "p", json: #"{"v":1}"#, parent: nil)
        try db.begin()
        try coll.purge(docID: "p")
        assertStatus(.notFound, try coll.get(docID: "p"))
        XCTAssertEqual(try coll.count, 0)
        try db.abort()
        XCTAssertEqual(try coll.doc("p")["_rev"], .string(r.revID))
        XCTAssertEqual(try coll.count, 1)
        assertSound(db)
    }

    func testPutExistingLongHistoryIsPrunedToMaxDepth() throws {
        let history = (1...30).reversed().map { "\($0)-h\($0)" }
        XCTAssertTrue(try coll.putExisting(docID: "long", json: #"{"v":30}"#, history: history))
        let kept = try coll.history(docID: "long", revID: nil)
        XCTAssertEqual(kept, Array(history.prefix(20)))
        XCTAssertEqual(try coll.doc("long")["_rev"], .string("30-h30"))
        assertSound(db)
    }

    func testDeletingALosingLeafResolvesTheConflict() throws {
        let r1 = try coll.put(docID: "d", json: #"{"v":1}"#, parent: nil)
        let a = try coll.put(docID: "d", json: #"{"v":"a"}"#, parent: r1.revID)
        let b = try coll.put(docID: "d", json: #"{"v":"b"}"#, parent: r1.revID, allowConflict: true)
        let winner = max(RevID(a.revID)!, RevID(b.revID)!).string
        let loser = winner == a.revID ? b.revID : a.revID
        let rec = ChangeRecorder()
        let token = try coll.addChangeObserver(rec.callback)
        defer { token.remove() }
        // Header: any undeleted leaf may be named; 409 for an unknown or inner revision.
        assertStatus(.conflict, try coll.delete(docID: "d", parent: r1.revID), "not a leaf")
        assertStatus(.conflict, try coll.delete(docID: "d", parent: "2-ffff"), "unknown revision")
        let t = try coll.delete(docID: "d", parent: loser)
        XCTAssertEqual(gen(t), 3)
        XCTAssertEqual(try coll.conflicts(docID: "d"), [winner], "conflict resolved")
        XCTAssertEqual(try coll.doc("d")["_rev"], .string(winner), "the winner stays current")
        XCTAssertNil(try coll.doc("d", .conflicts)["_conflicts"])
        XCTAssertEqual(try coll.count, 1)
        // The tombstone leaf cannot be deleted again: 404.
        assertStatus(.notFound, try coll.delete(docID: "d", parent: t))
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.events.map(\.revID), [winner], "the change reports the current revision")
        XCTAssertEqual(rec.events.map(\.deleted), [false])
        assertSound(db)
    }
}

private extension Optional where Wrapped == [UInt8] {
    func withUnsafeBufferPointerIfAny<T>(_ body: (UnsafeBufferPointer<UInt8>?) -> T) -> T {
        switch self {
        case .none: return body(nil)
        case .some(let a): return a.withUnsafeBufferPointer { body($0) }
        }
    }
}
