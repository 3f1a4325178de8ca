import XCTest
@testable import CBLiteCore

final class CollectionTests: CBLTestCase {
    func testDefaultCollection() throws {
        let db = try open()
        let c = try db.defaultCollection()
        XCTAssertEqual(c.name, "_default")
        XCTAssertEqual(c.scope, "_default")
        XCTAssertEqual(try c.count, 0)
        XCTAssertEqual(try c.lastSequence, 0)
        XCTAssertEqual(try db.scopeNames(), ["_default"])
        XCTAssertEqual(try db.collectionNames(scope: nil), ["_default"])
        XCTAssertEqual(try db.collectionNames(scope: "_default"), ["_default"])
        let same = try XCTUnwrap(try db.collection(scope: nil, name: "_default"))
        XCTAssertEqual(same.id, c.id)
        let created = try db.createCollection(scope: nil, name: "_default")
        XCTAssertEqual(created.id, c.id)
        assertStatus(.forbidden, try db.deleteCollection(scope: nil, name: "_default"))
        assertStatus(.forbidden, try db.deleteCollection(scope: "_default", name: "_default"))
        XCTAssertNoThrow(try c.put(docID: "still-works", json: "{}", parent: nil))
    }

    func testCreateListDelete() throws {
        let db = try open()
        XCTAssertNil(try db.collection(scope: "inventory", name: "items"))
        let items = try db.createCollection(scope: "inventory", name: "items")
        XCTAssertEqual(items.scope, "inventory")
        XCTAssertEqual(items.name, "items")
        let again = try db.createCollection(scope: "inventory", name: "items")
        XCTAssertEqual(again.id, items.id, "creating an existing collection opens it")
        _ = try db.createCollection(scope: "inventory", name: "Alpha")
        _ = try db.createCollection(scope: nil, name: "extra")
        _ = try db.createCollection(scope: "Zed", name: "z")
        // Sorted (byte order): "Zed" < "_default" < "inventory".
        XCTAssertEqual(try db.scopeNames(), ["Zed", "_default", "inventory"])
        XCTAssertEqual(try db.collectionNames(scope: "inventory"), ["Alpha", "items"])
        XCTAssertEqual(try db.collectionNames(scope: nil), ["_default", "extra"])
        assertStatus(.notFound, try db.collectionNames(scope: "nosuchscope"))
        XCTAssertEqual(try XCTUnwrap(try db.collection(scope: "inventory", name: "items")).id, items.id)

        // Documents are per collection.
        let def = try db.defaultCollection()
        _ = try items.put(docID: "d", json: #"{"in":"items"}"#, parent: nil)
        assertStatus(.notFound, try def.get(docID: "d"))
        XCTAssertEqual(try items.count, 1)
        XCTAssertEqual(try items.lastSequence, 1)
        XCTAssertEqual(try def.count, 0)
        XCTAssertEqual(try def.lastSequence, 0)

        try db.deleteCollection(scope: "inventory", name: "items")
        XCTAssertNil(try db.collection(scope: "inventory", name: "items"))
        XCTAssertEqual(try db.collectionNames(scope: "inventory"), ["Alpha"])
        assertStatus(.notFound, try db.deleteCollection(scope: "inventory", name: "items"))
        try db.deleteCollection(scope: "Zed", name: "z")
        XCTAssertEqual(try db.scopeNames(), ["_default", "inventory"], "a scope without collections disappears")
        assertSound(db)
    }

    func testInvalidNames() throws {
        let db = try open()
        let bad = ["", "_x", "%x", "a b", "a.b", "a/b", "é", "a\u{0}", String(repeating: "c", count: 252), "_Default"]
        for n in bad {
            assertStatus(.badRequest, try db.createCollection(scope: nil, name: n), "collection \(n.debugDescription)")
            assertStatus(.badRequest, try db.createCollection(scope: n, name: "ok"), "scope \(n.debugDescription)")
            assertStatus(.badRequest, try db.collection(scope: nil, name: n))
        }
        for n in ["a", "A-b_c%d", "x%", "9lives", String(repeating: "c", count: 251)] {
            XCTAssertNoThrow(try db.createCollection(scope: n, name: n), n)
        }
    }

    func testDeletedCollectionHandleIs404() throws {
        let db = try open()
        let c = try db.createCollection(scope: "s", name: "gone")
        _ = try c.put(docID: "a", json: "{}", parent: nil)
        _ = try c.putLocal(id: "l", json: "{}", parent: nil)
        let otherHandle = try open()
        let viaOther = try XCTUnwrap(try otherHandle.collection(scope: "s", name: "gone"))
        try db.deleteCollection(scope: "s", name: "gone")

        for coll in [c, viaOther] {
            assertStatus(.notFound, try coll.get(docID: "a"))
            assertStatus(.notFound, try coll.put(docID: "b", json: "{}", parent: nil))
            assertStatus(.notFound, try coll.count)
            assertStatus(.notFound, try coll.lastSequence)
            assertStatus(.notFound, try coll.changes(since: 0))
            assertStatus(.notFound, try coll.getLocal(id: "l"))
            assertStatus(.notFound, try coll.addChangeObserver { _ in })
        }

        // Re-creating the name gives a new, empty collection; the old handle stays dead.
        let fresh = try db.createCollection(scope: "s", name: "gone")
        XCTAssertEqual(try fresh.count, 0)
        assertStatus(.notFound, try fresh.get(docID: "a"))
        assertStatus(.notFound, try fresh.getLocal(id: "l"), "local documents went with the collection")
        assertStatus(.notFound, try c.get(docID: "a"))
        assertSound(db)
    }

    /// A collection created after the most recently created one was deleted must work
    /// (its internal ID must not be confused with the deleted collection's).
    func testCollectionCreatedAfterDeletionWorks() throws {
        let db = try open()
        let first = try db.createCollection(scope: nil, name: "first")
        _ = try first.put(docID: "old", json: #"{"from":"first"}"#, parent: nil)
        try db.deleteCollection(scope: nil, name: "first")
        let second = try db.createCollection(scope: nil, name: "second")
        _ = try second.put(docID: "new", json: #"{"from":"second"}"#, parent: nil)
        XCTAssertEqual(try second.doc("new")["from"], .string("second"))
        XCTAssertEqual(try second.count, 1)
        assertStatus(.notFound, try second.get(docID: "old"))
        // The handle of the deleted collection must not reach the new one.
        assertStatus(.notFound, try first.get(docID: "new"))
        assertStatus(.notFound, try first.put(docID: "x", json: "{}", parent: nil))
        XCTAssertEqual(try second.count, 1)
    }

    func testCollectionsSurviveReopen() throws {
        var db = try open()
        let c = try db.createCollection(scope: "s1", name: "c1")
        _ = try c.put(docID: "p", json: #"{"k":1}"#, parent: nil)
        try db.close()
        db = try open()
        let c2 = try XCTUnwrap(try db.collection(scope: "s1", name: "c1"))
        XCTAssertEqual(try c2.doc("p")["k"], .int(1))
        XCTAssertEqual(try c2.count, 1)
        XCTAssertEqual(try db.scopeNames(), ["_default", "s1"])
    }
}
