import CBLiteCore
@testable import CBLiteListener
import CouchWire
import XCTest

/// CouchDB's `_users` database: signup, passwords hashed on write, logins (Basic and
/// `_session`) with the document's roles, CouchDB's rules for who changes what, and
/// changes that take effect at once.
final class UsersDatabaseTests: ListenerTestCase {
    let users = #""users":{"admin":"s3cret"}"#

    func basic(_ user: String, _ password: String) -> (String, String) {
        ("Authorization", "Basic " + Base64.encode(Array("\(user):\(password)".utf8)))
    }
    var admin: (String, String) { basic("admin", "s3cret") }

    func userDoc(_ name: String, _ password: String?, roles: [String] = [], rev: String? = nil) -> String {
        var o = JSONObject([("_id", .string("org.couchdb.user:" + name)), ("name", .string(name)), ("type", .string("user")),
                            ("roles", .array(roles.map { .string($0) }))])
        if let password { o["password"] = .string(password) }
        if let rev { o["_rev"] = .string(rev) }
        return JSONWriter.canonicalString(.object(o))
    }

    func put(_ name: String, _ password: String?, roles: [String] = [], rev: String? = nil,
             as auth: (String, String)? = nil) throws -> TestHTTPClient.Response {
        try client().json("PUT", "/_users/org.couchdb.user:" + name, userDoc(name, password, roles: roles, rev: rev),
                          headers: auth.map { [$0] } ?? [])
    }

    func status(_ method: String, _ path: String, _ auth: (String, String)?) throws -> Int {
        try client().json(method, path, nil, headers: auth.map { [$0] } ?? []).status
    }

    func testSignupIsHashedOnWriteAndLogsIn() throws {
        try start(users)
        let signup = try put("dan", "d4n")
        XCTAssertEqual(signup.status, 201, signup.text)
        let stored = try client().json("GET", "/_users/org.couchdb.user:dan", headers: [admin]).object
        XCTAssertNil(stored["password"], "never stored in clear")
        XCTAssertEqual(stored["password_scheme"]?.stringValue, "pbkdf2")
        XCTAssertEqual(stored["pbkdf2_prf"]?.stringValue, "sha256")
        XCTAssertEqual(stored["iterations"]?.intValue, Int64(PasswordHash.defaultIterations))
        XCTAssertEqual(stored["derived_key"]?.stringValue?.count, 64)
        // Basic, then a cookie session.
        let me = try client().json("GET", "/_session", headers: [basic("dan", "d4n")])
        XCTAssertEqual(me.object["userCtx"]?.objectValue?["name"]?.stringValue, "dan")
        XCTAssertEqual(try status("GET", "/_session", basic("dan", "nope")), 401)
        let login = try client().json("POST", "/_session", #"{"name":"dan","password":"d4n"}"#)
        XCTAssertEqual(login.status, 200)
        let cookie = ("Cookie", String((login.header("Set-Cookie") ?? "").split(separator: ";")[0]))
        let session = try client().json("GET", "/_session", headers: [cookie])
        XCTAssertEqual(session.object["info"]?.objectValue?["authenticated"]?.stringValue, "cookie")
        XCTAssertEqual(session.object["userCtx"]?.objectValue?["name"]?.stringValue, "dan")
        // A clear password that comes another way (no hashing) is refused.
        let raw = try client().json("POST", "/_users/_bulk_docs",
                                    #"{"new_edits":false,"docs":[{"_id":"org.couchdb.user:x","_rev":"1-abc","name":"x","type":"user","roles":[],"password":"p"}]}"#,
                                    headers: [admin])
        XCTAssertEqual(raw.json?.arrayValue?.first?.objectValue?["error"]?.stringValue, "forbidden", raw.text)
    }

    func testRolesComeFromTheDocumentAndOnlyAdminsGiveThem() throws {
        try start(users)
        XCTAssertEqual(try status("PUT", "/db", admin), 201)
        XCTAssertEqual(try client().json("PUT", "/db/_security", #"{"members":{"roles":["staff"]}}"#, headers: [admin]).status, 200)
        let rejected = try put("eve", "e", roles: ["staff"])
        XCTAssertEqual(rejected.status, 403)
        XCTAssertEqual(rejected.object["reason"]?.stringValue, "Only _admin may set roles")
        let rev = try put("dan", "d4n").object["rev"]?.stringValue
        let dan = basic("dan", "d4n")
        XCTAssertEqual(try status("GET", "/db", dan), 403)
        let selfPromotion = try put("dan", "d4n", roles: ["staff"], rev: rev, as: dan)
        XCTAssertEqual(selfPromotion.object["reason"]?.stringValue, "Only _admin may edit roles")
        let system = try put("dan", "d4n", roles: ["_admin"], rev: rev, as: admin)
        XCTAssertEqual(system.object["reason"]?.stringValue, "No system roles (starting with underscore) in users db.")
        // An admin gives the role, the rest of the stored document (its password) kept.
        var doc = try client().json("GET", "/_users/org.couchdb.user:dan", headers: [admin]).object
        doc["roles"] = .array([.string("staff")])
        let update = try client().json("PUT", "/_users/org.couchdb.user:dan", JSONWriter.canonicalString(.object(doc)), headers: [admin])
        XCTAssertEqual(update.status, 201, update.text)
        XCTAssertEqual(try status("GET", "/db", dan), 200, "the new role counts at once")
    }

    func testUsersChangeOnlyTheirOwnDocumentAndDeletionEndsAccess() throws {
        try start(users)
        let fayRev = try put("fay", "f4y").object["rev"]?.stringValue
        let danRev = try put("dan", "d4n").object["rev"]?.stringValue
        let dan = basic("dan", "d4n"), fay = basic("fay", "f4y")
        XCTAssertEqual(try put("fay", "mine", rev: fayRev, as: dan).status, 404, "another's document is not there for them")
        XCTAssertEqual(try status("GET", "/_users/org.couchdb.user:fay", dan), 404)
        XCTAssertEqual(try status("GET", "/_users/org.couchdb.user:dan", dan), 200)
        let anonymous = try put("fay", "mine", rev: fayRev)
        XCTAssertEqual(anonymous.object["reason"]?.stringValue, "You may only update your own user document.")
        XCTAssertEqual(try status("GET", "/_users/_all_docs", dan), 401)
        XCTAssertEqual(try status("DELETE", "/_users/org.couchdb.user:dan?rev=\(danRev ?? "")", fay), 404)
        XCTAssertEqual(try status("GET", "/_session", fay), 200)
        XCTAssertEqual(try status("DELETE", "/_users/org.couchdb.user:fay?rev=\(fayRev ?? "")", fay), 200)
        XCTAssertEqual(try status("GET", "/_session", fay), 401, "a deleted user logs in no more")
        XCTAssertEqual(try status("GET", "/_session", dan), 200)
    }
}
