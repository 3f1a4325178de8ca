import XCTest
import Glibc
@testable import CBLiteCore

/// Attachments of documents: stubs, inheritance, revpos, existence checks, names,
/// removal, compaction.
final class AttachmentTests: CBLTestCase {
    func gen(_ rev: String) -> Int { RevID(rev)?.generation ?? -1 }

    func stub(_ c: Collection, _ id: String, _ name: String) throws -> JSONObject? {
        try c.doc(id)["_attachments"]?.objectValue?[name]?.objectValue
    }

    func blobFiles(_ db: Database) throws -> Set<String> {
        Set(((try? FileSystem.list(try db.blobStore.directory)) ?? []).filter { $0.hasSuffix(".blob") })
    }

    func fileName(_ bytes: [UInt8]) -> String { BlobDigest.of(bytes).hex + ".blob" }

    func testSetAttachmentWritesAStub() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let r1 = try c.put(docID: "d", json: #"{"title":"photo"}"#, parent: nil).revID
        let content = Array("jpeg bytes".utf8)
        let r2 = try c.setAttachment(docID: "d", parent: r1, name: "photo.jpg", contentType: "image/jpeg", bytes: content)
        XCTAssertEqual(gen(r2), 2)
        let doc = try c.doc("d")
        XCTAssertEqual(doc["title"], .string("photo"))
        let s = try XCTUnwrap(doc["_attachments"]?.objectValue?["photo.jpg"]?.objectValue)
        XCTAssertEqual(s["content_type"], .string("image/jpeg"))
        XCTAssertEqual(s["digest"], .string(BlobDigest.of(content).string))
        XCTAssertEqual(s["length"], .int(Int64(content.count)))
        XCTAssertEqual(s["revpos"], .int(2))
        XCTAssertEqual(s["stub"], .bool(true))
        XCTAssertNil(s["data"])
        // CouchDB's digest kept beside ours: the MD5 of the content.
        XCTAssertEqual(s["md5"], .string("md5-" + Base64.encode(MD5.hash(content))))
        XCTAssertEqual(s.members.count, 6)
        XCTAssertEqual(try c.attachmentNames(docID: "d"), ["photo.jpg"])
        XCTAssertEqual(try c.attachmentContent(docID: "d", name: "photo.jpg"), content)
        XCTAssertEqual(try c.attachment(docID: "d", name: "photo.jpg").revpos, 2)
        XCTAssertEqual(try blobFiles(db), [fileName(content)])
        // The row carries the has-attachments flag (compaction scans only those rows).
        let flags = try db.store.read { conn in try c.docStore.row(conn, docID: "d")!.flags }
        XCTAssertTrue(flags.contains(.hasAttachments))
        assertSound(db)
    }

    func testZeroByteAttachment() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let r = try c.setAttachment(docID: "z", parent: nil, name: "empty", contentType: "application/octet-stream", bytes: [])
        XCTAssertEqual(gen(r), 1, "creates the document (an empty body) with the attachment")
        XCTAssertEqual(try stub(c, "z", "empty")?["revpos"], .int(1))
        XCTAssertEqual(try stub(c, "z", "empty")?["length"], .int(0))
        XCTAssertEqual(try c.attachmentContent(docID: "z", name: "empty"), [])
        let reader = try c.openAttachment(docID: "z", name: "empty")
        XCTAssertEqual(reader.length, 0)
        XCTAssertEqual(try reader.read(max: 10), [])
        try c.writeAttachment(docID: "z", name: "empty", toFile: dir + "/empty.out")
        XCTAssertTrue(FileSystem.exists(dir + "/empty.out"))
    }

    func testInlineDataIsStoredAndNeverReturned() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let r1 = try c.put(docID: "i", json: #"{"_attachments":{"a.txt":{"content_type":"text/plain","data":"aGk="}},"v":1}"#, parent: nil).revID
        XCTAssertEqual(gen(r1), 1)
        let s = try XCTUnwrap(try stub(c, "i", "a.txt"))
        XCTAssertNil(s["data"])
        XCTAssertEqual(s["length"], .int(2))
        XCTAssertEqual(s["revpos"], .int(1))
        XCTAssertEqual(s["digest"], .string(BlobDigest.of(Array("hi".utf8)).string))
        XCTAssertEqual(try c.attachmentContent(docID: "i", name: "a.txt"), Array("hi".utf8))
        XCTAssertFalse(String(decoding: try c.get(docID: "i"), as: UTF8.self).contains("aGk="))
        // Inline data with a digest that does not match it: 400, nothing saved.
        assertStatus(.badRequest, try c.put(docID: "j", json: #"{"_attachments":{"a":{"data":"aGk=","digest":"sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk="}}}"#, parent: nil))
        assertStatus(.badRequest, try c.put(docID: "j", json: #"{"_attachments":{"a":{"data":"aGk=","length":3}}}"#, parent: nil))
        assertStatus(.badRequest, try c.put(docID: "j", json: #"{"_attachments":{"a":{"data":"not base64!"}}}"#, parent: nil))
        assertStatus(.badRequest, try c.put(docID: "j", json: #"{"_attachments":{"a":{"data":"aGk=","stub":true}}}"#, parent: nil))
        assertStatus(.notFound, try c.get(docID: "j"))
    }

    func testStubForMissingContentIsRefused() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let missing = BlobDigest.of(Array("never stored".utf8)).string
        let e = assertStatus(.preconditionFailed,
                             try c.put(docID: "m", json: #"{"_attachments":{"x.bin":{"digest":"\#(missing)","stub":true}}}"#, parent: nil))
        XCTAssertTrue(e?.message.contains("attachment content missing for \"x.bin\"") ?? false, e?.message ?? "")
        assertStatus(.notFound, try c.get(docID: "m"))
        XCTAssertEqual(try c.lastSequence, 0)
        assertStatus(.preconditionFailed, try c.setAttachment(docID: "m", parent: nil, name: "x", contentType: nil, digest: missing))
        // Also on an update, and through putExisting (the replicator's path).
        let r1 = try c.put(docID: "m", json: "{}", parent: nil).revID
        assertStatus(.preconditionFailed, try c.put(docID: "m", json: #"{"_attachments":{"x":{"digest":"\#(missing)"}}}"#, parent: r1))
        assertStatus(.preconditionFailed, try c.putExisting(docID: "p", json: #"{"_attachments":{"x":{"digest":"\#(missing)","revpos":1,"stub":true}}}"#, history: ["1-abc"]))
        XCTAssertEqual(try c.history(docID: "m", revID: nil), [r1])
        // A wrong length for stored content: 400.
        let info = try db.blobStore.put(Array("four".utf8))
        assertStatus(.badRequest, try c.put(docID: "m", json: #"{"_attachments":{"x":{"digest":"\#(info.digest.string)","length":5}}}"#, parent: r1))
        let r2 = try c.put(docID: "m", json: #"{"_attachments":{"x":{"digest":"\#(info.digest.string)","length":4}}}"#, parent: r1).revID
        XCTAssertEqual(try stub(c, "m", "x")?["content_type"], .string("application/octet-stream"))
        XCTAssertEqual(gen(r2), 2)
    }

    /// A body-only update of a document with attachments is refused by the one-statement
    /// update (the row says it has attachments to inherit); the document is then
    /// remembered, so its next updates go straight to the general path, with the same result.
    func testDocumentsWithAttachmentsAreRememberedForTheGeneralPath() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let plain = try c.put(docID: "plain", json: #"{"v":1}"#, parent: nil).revID
        _ = try c.put(docID: "plain", json: #"{"v":2}"#, parent: plain)
        var rev = try c.put(docID: "att", json: #"{"v":1}"#, parent: nil).revID
        rev = try c.setAttachment(docID: "att", parent: rev, name: "a", contentType: "text/plain", bytes: Array("AAA".utf8))
        let stubs = try c.doc("att")["_attachments"]
        XCTAssertFalse(c.generalPathDocuments.contains("att"), "setAttachment names its attachments")
        for v in 2...4 {
            rev = try c.put(docID: "att", json: #"{"v":\#(v)}"#, parent: rev).revID
            XCTAssertTrue(c.generalPathDocuments.contains("att"))
            XCTAssertEqual(try c.doc("att")["_attachments"], stubs)
            XCTAssertEqual(try c.doc("att")["v"], .int(Int64(v)))
        }
        XCTAssertFalse(c.generalPathDocuments.contains("plain"))
        assertStatus(.conflict, try c.put(docID: "plain", json: #"{"v":3}"#, parent: plain))
        XCTAssertFalse(c.generalPathDocuments.contains("plain"), "a conflict is not remembered")
        assertSound(db)
    }

    func testBodyOnlyUpdateKeepsAttachments() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let r1 = try c.put(docID: "d", json: #"{"v":1}"#, parent: nil).revID
        let r2 = try c.setAttachment(docID: "d", parent: r1, name: "a", contentType: "text/plain", bytes: Array("AAA".utf8))
        let r3 = try c.setAttachment(docID: "d", parent: r2, name: "b", contentType: "text/plain", bytes: Array("BBB".utf8))
        let before = try c.doc("d")["_attachments"]
        let files = try blobFiles(db)
        // No "_attachments" key: inherited unchanged (revpos 2 and 3 stay).
        let r4 = try c.put(docID: "d", json: #"{"v":2}"#, parent: r3).revID
        let after = try c.doc("d")
        XCTAssertEqual(after["v"], .int(2))
        XCTAssertEqual(after["_attachments"], before)
        XCTAssertEqual(after["_attachments"]?.objectValue?["a"]?.objectValue?["revpos"], .int(2))
        XCTAssertEqual(after["_attachments"]?.objectValue?["b"]?.objectValue?["revpos"], .int(3))
        XCTAssertEqual(try blobFiles(db), files, "no data copied")
        // The same through update(): the callback may hand the stubs back or drop them.
        let r5 = try c.update(docID: "d") { current in
            var o = obj(current!)
            o["v"] = .int(3)
            return JSONValue.object(o).jsonString
        }
        XCTAssertEqual(try c.doc("d")["_attachments"], before)
        let r6 = try c.update(docID: "d") { _ in #"{"v":4}"# }
        XCTAssertEqual(try c.doc("d")["_attachments"], before)
        XCTAssertEqual([r4, r5, r6].map(gen), [4, 5, 6])
        // Old revisions keep their own attachments.
        XCTAssertEqual(try c.attachments(docID: "d", revID: r2).map(\.name), ["a"])
        XCTAssertEqual(try c.attachments(docID: "d", revID: r1).map(\.name), [])
        // Replacing content changes revpos; same content keeps it.
        let r7 = try c.setAttachment(docID: "d", parent: r6, name: "a", contentType: nil, bytes: Array("A2".utf8))
        XCTAssertEqual(try stub(c, "d", "a")?["revpos"], .int(7))
        XCTAssertEqual(try stub(c, "d", "a")?["content_type"], .string("text/plain"), "the type of that name is kept")
        XCTAssertEqual(try stub(c, "d", "b")?["revpos"], .int(3))
        let r8 = try c.setAttachment(docID: "d", parent: r7, name: "b", contentType: "text/x-b", bytes: Array("BBB".utf8))
        XCTAssertEqual(try stub(c, "d", "b")?["revpos"], .int(3), "same content under the same name: revpos kept")
        XCTAssertEqual(try stub(c, "d", "b")?["content_type"], .string("text/x-b"))
        // "_attachments": {} removes them all.
        _ = try c.put(docID: "d", json: #"{"_attachments":{},"v":9}"#, parent: r8)
        XCTAssertNil(try c.doc("d")["_attachments"])
        XCTAssertEqual(try c.attachmentNames(docID: "d"), [])
        assertSound(db)
    }

    func testTombstoneKeepsNoAttachments() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let r = try c.setAttachment(docID: "t", parent: nil, name: "a", contentType: nil, bytes: [1, 2, 3])
        let del = try c.delete(docID: "t", parent: r)
        let tomb = obj(try c.get(docID: "t", revID: del))
        XCTAssertNil(tomb["_attachments"])
        assertStatus(.notFound, try c.attachmentNames(docID: "t"))
        // Re-creation does not bring them back either.
        _ = try c.put(docID: "t", json: #"{"back":true}"#, parent: nil)
        XCTAssertEqual(try c.attachmentNames(docID: "t"), [])
    }

    func testRemoveAttachment() throws {
        let db = try open()
        let c = try db.defaultCollection()
        var rev = try c.setAttachment(docID: "d", parent: nil, name: "one", contentType: nil, bytes: [1])
        rev = try c.setAttachment(docID: "d", parent: rev, name: "two", contentType: nil, bytes: [2])
        XCTAssertEqual(try c.attachmentNames(docID: "d"), ["one", "two"])
        assertStatus(.notFound, try c.removeAttachment(docID: "d", parent: rev, name: "three"))
        assertStatus(.conflict, try c.removeAttachment(docID: "d", parent: "1-abc", name: "one"))
        rev = try c.removeAttachment(docID: "d", parent: rev, name: "one")
        XCTAssertEqual(try c.attachmentNames(docID: "d"), ["two"])
        assertStatus(.notFound, try c.attachmentContent(docID: "d", name: "one"))
        rev = try c.removeAttachment(docID: "d", parent: nil, name: "two")    // nil: the current revision
        XCTAssertEqual(try c.attachmentNames(docID: "d"), [])
        XCTAssertEqual(gen(rev), 4)
        assertStatus(.notFound, try c.removeAttachment(docID: "absent", parent: nil, name: "x"))
    }

    func testSetAttachmentParents() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let info = try db.blobStore.put(Array("x".utf8))
        let r1 = try c.setAttachment(docID: "p", parent: nil, name: "x", contentType: nil, digest: info.digest.string)
        assertStatus(.conflict, try c.setAttachment(docID: "p", parent: nil, name: "y", contentType: nil, digest: info.digest.string))
        let r2 = try c.setAttachment(docID: "p", parent: r1, name: "y", contentType: nil, digest: info.digest.string)
        assertStatus(.conflict, try c.setAttachment(docID: "p", parent: r1, name: "z", contentType: nil, digest: info.digest.string))
        assertStatus(.notFound, try c.setAttachment(docID: "nope", parent: r1, name: "z", contentType: nil, digest: info.digest.string))
        assertStatus(.badRequest, try c.setAttachment(docID: "p", parent: r2, name: "z", contentType: nil, digest: "sha1-bad"))
        assertStatus(.badRequest, try c.setAttachment(docID: "p", parent: "bad", name: "z", contentType: nil, digest: info.digest.string))
        assertStatus(.badRequest, try c.setAttachment(docID: "_p", parent: nil, name: "z", contentType: nil, digest: info.digest.string))
        XCTAssertEqual(try c.attachmentNames(docID: "p"), ["x", "y"])
    }

    func testDedupAcrossDocuments() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let other = try db.createCollection(scope: "s", name: "c")
        let content = AttachmentStoreTests.pattern(100_000)
        for i in 0..<5 { _ = try c.setAttachment(docID: "d\(i)", parent: nil, name: "n\(i)", contentType: nil, bytes: content) }
        _ = try other.setAttachment(docID: "o", parent: nil, name: "same", contentType: nil, bytes: content)
        XCTAssertEqual(try blobFiles(db), [fileName(content)])
        XCTAssertEqual(Set(try (0..<5).map { try c.attachment(docID: "d\($0)", name: "n\($0)").digest }).count, 1)
    }

    func testCompactionDeletesOrphansAndKeepsReferenced() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let other = try db.createCollection(scope: "s", name: "c")
        let (a, b, p, e, t, kept, shared, loose, conflictLeaf) = (
            Array("replaced".utf8), Array("replacement".utf8), Array("purged".utf8), Array("expired".utf8),
            Array("deleted".utf8), Array("kept in other collection".utf8), Array("shared".utf8),
            Array("never attached".utf8), Array("on a losing branch".utf8))
        var r = try c.setAttachment(docID: "upd", parent: nil, name: "f", contentType: nil, bytes: a)
        r = try c.setAttachment(docID: "upd", parent: r, name: "f", contentType: nil, bytes: b)
        _ = try c.setAttachment(docID: "purge", parent: nil, name: "f", contentType: nil, bytes: p)
        _ = try c.setAttachment(docID: "purge2", parent: nil, name: "f", contentType: nil, bytes: shared)
        _ = try c.setAttachment(docID: "keeps-shared", parent: nil, name: "f", contentType: nil, bytes: shared)
        _ = try c.setAttachment(docID: "exp", parent: nil, name: "f", contentType: nil, bytes: e)
        let rt = try c.setAttachment(docID: "del", parent: nil, name: "f", contentType: nil, bytes: t)
        _ = try other.setAttachment(docID: "o", parent: nil, name: "f", contentType: nil, bytes: kept)
        try db.blobStore.put(loose)
        // A conflict: the losing leaf's attachment is still referenced.
        let base = try c.put(docID: "conf", json: "{}", parent: nil).revID
        _ = try c.put(docID: "conf", json: #"{"winner":true,"z":1}"#, parent: base)
        let info = try db.blobStore.put(conflictLeaf)
        _ = try c.put(docID: "conf", json: #"{"_attachments":{"l":{"digest":"\#(info.digest.string)"}}}"#, parent: base, allowConflict: true)
        XCTAssertEqual(try c.conflicts(docID: "conf").count, 2)

        try c.purge(docID: "purge")
        try c.purge(docID: "purge2")
        try c.setExpiration(docID: "exp", unixTime: 1)          // long past: purged by compact()
        _ = try c.delete(docID: "del", parent: rt)
        let all = Set([a, b, p, e, t, kept, shared, loose, conflictLeaf].map(fileName))
        XCTAssertEqual(try blobFiles(db), all, "nothing is deleted before compaction")
        XCTAssertEqual(try c.attachmentContent(docID: "upd", name: "f"), b)

        try db.compact()
        XCTAssertEqual(try blobFiles(db), Set([b, kept, shared, conflictLeaf].map(fileName)))
        XCTAssertEqual(try c.attachmentContent(docID: "upd", name: "f"), b)
        XCTAssertEqual(try other.attachmentContent(docID: "o", name: "f"), kept)
        XCTAssertEqual(try c.attachmentContent(docID: "keeps-shared", name: "f"), shared)
        // A second compaction changes nothing.
        try db.compact()
        XCTAssertEqual(try blobFiles(db), Set([b, kept, shared, conflictLeaf].map(fileName)))
        // Content compaction deleted cannot be referenced again: 412.
        assertStatus(.preconditionFailed, try c.put(docID: "late", json: #"{"_attachments":{"x":{"digest":"\#(BlobDigest.of(loose).string)"}}}"#, parent: nil))
        assertSound(db)
    }

    func testCompactionKeepsAncestorAttachmentsUntilBodiesDropped() throws {
        // An old revision's body still kept (e.g. pruning not reached) refers to its
        // content until compaction drops that body — which it does in the same pass.
        let db = try open()
        let c = try db.defaultCollection()
        let a = Array("v1".utf8), b = Array("v2".utf8)
        let r1 = try c.setAttachment(docID: "d", parent: nil, name: "f", contentType: nil, bytes: a)
        _ = try c.setAttachment(docID: "d", parent: r1, name: "f", contentType: nil, bytes: b)
        XCTAssertEqual(try c.attachmentContent(docID: "d", name: "f", revID: r1), a, "the old body is still kept")
        try db.compact()
        assertStatus(.notFound, try c.attachments(docID: "d", revID: r1))
        XCTAssertEqual(try blobFiles(db), [fileName(b)])
    }

    func testHostileNames() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let parentDir = dir
        for name in ["../x", "/etc/passwd", "../../../../tmp/evil", ".", "..", "a/b/c", "名前 with spaces.txt", String(repeating: "n", count: 255)] {
            let current = (try? c.get(docID: "h")).flatMap { obj($0)["_rev"]?.stringValue }
            let rev = try c.setAttachment(docID: "h", parent: current, name: name,
                                          contentType: "text/plain", bytes: Array("content of \(name)".utf8))
            XCTAssertNotNil(RevID(rev))
            XCTAssertEqual(try c.attachmentContent(docID: "h", name: name), Array("content of \(name)".utf8), name)
        }
        XCTAssertFalse(FileSystem.exists(parentDir + "/x"))
        XCTAssertFalse(FileSystem.exists(db.path + "/x"))
        XCTAssertFalse(FileSystem.exists("/tmp/evil"))
        // Only digest-named files in the attachment folder (and its tmp folder).
        for f in try FileSystem.list(try db.blobStore.directory) {
            XCTAssertTrue(BlobStore.isBlobFileName(f) || f == "tmp", f)
        }
        XCTAssertEqual(try FileSystem.list(dir).sorted(), ["db.cblite2"])
        let rev = try c.doc("h")["_rev"]!.stringValue!
        for bad in ["", "nul\u{0}inside", "\u{0}", "tab\there", "line\nbreak", "del\u{7F}", String(repeating: "n", count: 256),
                    String(repeating: "é", count: 128)] {
            assertStatus(.badRequest, try c.setAttachment(docID: "h", parent: rev, name: bad, contentType: nil, bytes: [1]), bad.debugDescription)
            assertStatus(.badRequest, try c.attachmentContent(docID: "h", name: bad))
        }
        // Bad names inside a body are refused too (NUL through a JSON escape).
        assertStatus(.badRequest, try c.put(docID: "h2", json: #"{"_attachments":{"a\u0000b":{"data":"aGk="}}}"#, parent: nil))
        assertStatus(.badRequest, try c.put(docID: "h2", json: #"{"_attachments":{"":{"data":"aGk="}}}"#, parent: nil))
        XCTAssertEqual(try c.doc("h")["_rev"]?.stringValue, rev, "nothing saved")
    }

    func testContentTypes() throws {
        for ok in ["text/plain", "image/svg+xml", "application/vnd.ms-excel", "text/plain; charset=utf-8",
                   "multipart/form-data; boundary=\"a b\"", "x-foo/y.bar", "a/b ;c=d"] {
            XCTAssertNoThrow(try Attachments.validateContentType(ok), ok)
        }
        for bad in ["", "text", "text/", "/plain", "text/pl ain", "text/plain;", "text/plain; c", "text/plain; c=",
                    "te(xt/plain", "text/plain\n", "text/plain; c=\"unterminated", "text/" + String(repeating: "p", count: 251)] {
            XCTAssertThrowsError(try Attachments.validateContentType(bad), bad)
        }
        let db = try open()
        let c = try db.defaultCollection()
        assertStatus(.badRequest, try c.setAttachment(docID: "d", parent: nil, name: "x", contentType: "nonsense", bytes: [1]))
        assertStatus(.badRequest, try c.put(docID: "d", json: #"{"_attachments":{"x":{"data":"aGk=","content_type":"bad type"}}}"#, parent: nil))
        assertStatus(.notFound, try c.get(docID: "d"))
    }

    func testMalformedAttachmentEntries() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let d = try db.blobStore.put(Array("x".utf8)).digest.string
        for bad in [#"{"_attachments":[]}"#, #"{"_attachments":null}"#, #"{"_attachments":{"a":1}}"#,
                    #"{"_attachments":{"a":{}}}"#,
                    #"{"_attachments":{"a":{"digest":"md5-abc"}}}"#, #"{"_attachments":{"a":{"digest":1}}}"#,
                    #"{"_attachments":{"a":{"digest":"\#(d)","length":-1}}}"#,
                    #"{"_attachments":{"a":{"digest":"\#(d)","revpos":"1"}}}"#,
                    #"{"_attachments":{"a":{"digest":"\#(d)","follows":true}}}"#] {
            assertStatus(.badRequest, try c.put(docID: "d", json: bad, parent: nil), bad)
        }
        // CouchDB's stub forms on a new document name nothing: 412 missing_stub, its reason.
        for stub in [#"{"_attachments":{"a":{"stub":true}}}"#, #"{"_attachments":{"a":{"stub":true,"digest":"md5-AAAAAAAAAAAAAAAAAAAAAA=="}}}"#] {
            assertStatus(.preconditionFailed, try c.put(docID: "d", json: stub, parent: nil), stub)
        }
        XCTAssertEqual(try c.lastSequence, 0)
        // A given revpos is ignored by a local save (the engine sets it).
        _ = try c.put(docID: "d", json: #"{"_attachments":{"a":{"digest":"\#(d)","revpos":77,"stub":true}}}"#, parent: nil)
        XCTAssertEqual(try stub(c, "d", "a")?["revpos"], .int(1))
    }

    func testPutExistingKeepsGivenRevposAndChecksContent() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let d = try db.blobStore.put(Array("replicated".utf8)).digest.string
        try c.putExisting(docID: "r", json: #"{"_attachments":{"a":{"digest":"\#(d)","revpos":2,"length":10,"stub":true}}}"#,
                          history: ["3-ccc", "2-bbb", "1-aaa"])
        XCTAssertEqual(try stub(c, "r", "a")?["revpos"], .int(2))
        try c.putExisting(docID: "r", json: #"{"_attachments":{"a":{"digest":"\#(d)","revpos":0}}}"#, history: ["4-ddd", "3-ccc"])
        XCTAssertEqual(try stub(c, "r", "a")?["revpos"], .int(4), "revpos 0 (PouchDB) becomes the generation")
        // putExisting never inherits: no "_attachments" means none.
        try c.putExisting(docID: "r", json: #"{"plain":true}"#, history: ["5-eee", "4-ddd"])
        XCTAssertEqual(try c.attachmentNames(docID: "r"), [])
        try db.compact()
        XCTAssertEqual(try blobFiles(db), [], "the content is no longer referenced by a kept body")
    }

    func testValidatorsSeeStubs() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let seen = Locked<[String]>([])
        try c.setValidator(name: "v") { new, _ in seen.with { $0.append(new) }; return nil }
        _ = try c.setAttachment(docID: "v", parent: nil, name: "a", contentType: nil, bytes: Array("hi".utf8))
        let last = try XCTUnwrap(seen.get().last)
        XCTAssertTrue(last.contains("\"stub\":true") && last.contains("\"revpos\":1") && !last.contains("aGk="), last)
        try c.setValidator(name: "v") { new, _ in new.contains("\"forbidden\"") ? "no" : nil }
        assertStatus(.forbidden, try c.setAttachment(docID: "v", parent: try c.doc("v")["_rev"]!.stringValue!, name: "forbidden",
                                                    contentType: nil, bytes: [1]))
        XCTAssertEqual(try c.attachmentNames(docID: "v"), ["a"])
    }

    func testConflictBranchInheritsFromItsParent() throws {
        let db = try open()
        let c = try db.defaultCollection()
        let r1 = try c.setAttachment(docID: "b", parent: nil, name: "a", contentType: nil, bytes: Array("one".utf8))   // gen 2
        let r2 = try c.setAttachment(docID: "b", parent: r1, name: "a", contentType: nil, bytes: Array("two".utf8))    // gen 3
        let branch = try c.put(docID: "b", json: #"{"branch":true}"#, parent: r1, allowConflict: true).revID
        XCTAssertEqual(try c.attachments(docID: "b", revID: branch).map { $0.revpos }, [1])
        XCTAssertEqual(try c.attachmentContent(docID: "b", name: "a", revID: branch), Array("one".utf8))
        XCTAssertEqual(try c.attachmentContent(docID: "b", name: "a", revID: r2), Array("two".utf8))
    }

    func testAttachmentsInsideTransactionRollBack() throws {
        let db = try open()
        let c = try db.defaultCollection()
        try db.begin()
        _ = try c.setAttachment(docID: "tx", parent: nil, name: "a", contentType: nil, bytes: Array("tx content".utf8))
        XCTAssertEqual(try c.attachmentNames(docID: "tx"), ["a"])
        try db.abort()
        assertStatus(.notFound, try c.attachmentNames(docID: "tx"))
        // Content stored inside the transaction was never installed: the abort discards it
        // (group commit, PendingBlobs), and nothing is left for compaction either.
        XCTAssertEqual(try blobFiles(db).count, 0, "content stored in the aborted transaction is discarded")
        XCTAssertEqual(try FileSystem.list(db.path + "/attachments/tmp"), [])
        try db.compact()
        XCTAssertEqual(try blobFiles(db).count, 0)
    }
}
