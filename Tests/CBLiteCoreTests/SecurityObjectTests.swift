import XCTest
@testable import CBLiteCore

/// A database's `_security` object: CouchDB's shape rules, who is an admin or a member,
/// and its keeping with the database.
final class SecurityObjectTests: CBLTestCase {
    private func security(_ json: String) throws -> SecurityObject { try SecurityObject(json: json) }

    func testShapesCouchDBRefuses() throws {
        for bad in [#"{"members":"x"}"#, #"{"members":{"names":"x"}}"#, #"{"admins":{"roles":[1]}}"#,
                    #"{"admins":[]}"#, #"{"readers":{"names":[null]}}"#] {
            assertStatus(.badRequest, try security(bad), bad)
        }
        XCTAssertNoThrow(try security("{}"))
        XCTAssertNoThrow(try security(#"{"admins":{},"members":{"names":[]},"other":42}"#))
    }

    func testAdminsAndMembers() throws {
        let s = try security(#"{"admins":{"names":["ann"],"roles":["boss"]},"members":{"names":["bob"],"roles":["staff"]}}"#)
        XCTAssertFalse(s.isPublic)
        XCTAssertTrue(s.isAdmin(name: "ann", roles: []))
        XCTAssertTrue(s.isAdmin(name: "x", roles: ["boss"]))
        XCTAssertTrue(s.isAdmin(name: nil, roles: ["_admin"]), "a server admin administers every database")
        XCTAssertFalse(s.isAdmin(name: "bob", roles: ["staff"]))
        XCTAssertTrue(s.isMember(name: "bob", roles: []))
        XCTAssertTrue(s.isMember(name: "x", roles: ["staff"]))
        XCTAssertTrue(s.isMember(name: "ann", roles: []), "admins are members")
        XCTAssertFalse(s.isMember(name: "eve", roles: ["other"]))
        XCTAssertFalse(s.isMember(name: nil, roles: []))
        // Nobody named as a member: every user is one (admins stay who they are).
        let open = try security(#"{"admins":{"names":["ann"]}}"#)
        XCTAssertTrue(open.isPublic && open.isMember(name: nil, roles: []))
        XCTAssertFalse(open.isAdmin(name: "bob", roles: []))
        // CouchDB 1.x's `readers` stands for `members`.
        XCTAssertTrue(try security(#"{"readers":{"names":["bob"]}}"#).isMember(name: "bob", roles: []))
        XCTAssertFalse(try security(#"{"readers":{"names":["bob"]}}"#).isMember(name: "eve", roles: []))
        // CouchDB 3's default for a new database: server admins only.
        XCTAssertFalse(SecurityObject.adminOnly.isMember(name: "bob", roles: ["staff"]))
        XCTAssertTrue(SecurityObject.adminOnly.isMember(name: "root", roles: ["_admin"]))
    }

    func testKeptWithTheDatabaseVerbatim() throws {
        var db = try open("secured")
        XCTAssertNil(try db.securityObject)
        let text = #"{"members":{"names":["bob"],"roles":[]},"admins":{"names":[],"roles":["boss"]},"note":"kept"}"#
        try db.setSecurityObject(try security(text))
        try db.close()
        db = try open("secured")
        XCTAssertEqual(try db.securityObject?.jsonText, text, "members, their order and unknown ones as given")
        XCTAssertEqual(try db.securityObject?.members.names, ["bob"])
        // One object for the database: every collection shares it.
        XCTAssertEqual(try db.securityObject, try security(text))
        try db.close()
        assertStatus(.badRequest, try db.securityObject)
    }
}
