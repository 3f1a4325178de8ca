import CBLiteCore
@testable import CBLiteListener
import CouchWire
import Foundation
import XCTest

/// Users, roles and per-database `_security` as CouchDB 3 enforces them, CouchDB's
/// password hashes and session cookies.
final class SecurityTests: ListenerTestCase {
    /// admin: a server admin (a password alone); bob: role "staff"; carol: no role.
    let users = #""users":{"admin":"s3cret","bob":{"password":"b0b","roles":["staff"]},"carol":{"password":"c4rol","roles":[]}}"#

    func basic(_ user: String, _ password: String) -> (String, String) {
        ("Authorization", "Basic " + Base64.encode(Array("\(user):\(password)".utf8)))
    }
    var admin: (String, String) { basic("admin", "s3cret") }
    var bob: (String, String) { basic("bob", "b0b") }
    var carol: (String, String) { basic("carol", "c4rol") }

    func status(_ method: String, _ path: String, _ auth: (String, String)?, _ body: String? = nil) throws -> Int {
        try client().json(method, path, body, headers: auth.map { [$0] } ?? []).status
    }

    func reason(_ r: TestHTTPClient.Response) -> String? { r.object["reason"]?.stringValue }
    /// The body as sent, without CouchDB's closing newline.
    func text(_ r: TestHTTPClient.Response) -> String {
        var s = String(decoding: r.body, as: UTF8.self)
        while s.last == "\n" { s.removeLast() }
        return s
    }

    func testNewDatabasesAreAdminOnlyAndMissingOnesAre404() throws {
        try start(users)
        XCTAssertEqual(try status("PUT", "/db", admin), 201)
        XCTAssertEqual(text(try client().request("GET", "/db/_security", headers: [admin])),
                       #"{"members":{"roles":["_admin"]},"admins":{"roles":["_admin"]}}"#)
        let anon = try client().request("GET", "/db")
        XCTAssertEqual(anon.status, 401)
        XCTAssertEqual(reason(anon), "You are not authorized to access this db.")
        let named = try client().request("GET", "/db", headers: [bob])
        XCTAssertEqual(named.status, 403)
        XCTAssertEqual(reason(named), "You are not allowed to access this db.")
        // A missing database is a 404 whoever asks (CouchDB's get_security runs first).
        XCTAssertEqual(try status("GET", "/nothing", nil), 404)
        XCTAssertEqual(try status("GET", "/nothing/doc", bob), 404)
        // Server endpoints: server admins only, with CouchDB's reason.
        for path in ["/_all_dbs", "/_node/_local/_config", "/_config", "/_active_tasks", "/_scheduler/jobs", "/_membership"] {
            let r = try client().request("GET", path, headers: [bob])
            XCTAssertEqual(r.status, 401, path)
            XCTAssertEqual(reason(r), "You are not a server admin.", path)
        }
        for path in ["/", "/_up", "/_uuids", "/_session"] { XCTAssertEqual(try status("GET", path, nil), 200, path) }
        XCTAssertEqual(try status("PUT", "/other", bob), 401)
        XCTAssertEqual(try status("DELETE", "/db", carol), 401)
    }

    func testMembersReadAndWriteDocumentsAdminsAlsoDesignDocuments() throws {
        try start(users)
        XCTAssertEqual(try status("PUT", "/db", admin), 201)
        XCTAssertEqual(try status("PUT", "/db/_security", admin, #"{"admins":{"names":["carol"],"roles":[]},"members":{"names":[],"roles":["staff"]}}"#), 200)
        // bob is a member by role: documents yes, design documents and _security no.
        XCTAssertEqual(try status("PUT", "/db/doc", bob, #"{"a":1}"#), 201)
        XCTAssertEqual(try status("GET", "/db/doc", bob), 200)
        XCTAssertEqual(try status("GET", "/db/_all_docs", bob), 200)
        XCTAssertEqual(try status("GET", "/db/_security", bob), 200)
        let ddoc = try client().json("PUT", "/db/_design/app", "{}", headers: [bob])
        XCTAssertEqual(ddoc.status, 403)
        XCTAssertEqual(reason(ddoc), "You are not a db or server admin.")
        XCTAssertEqual(try status("POST", "/db", bob, #"{"_id":"_design/posted"}"#), 403)
        XCTAssertEqual(try status("PUT", "/db/_security", bob, "{}"), 403)
        XCTAssertEqual(try status("POST", "/db/_compact", bob, "{}"), 403)
        XCTAssertEqual(try status("POST", "/db/_purge", bob, "{}"), 401, "purging is a server admin's")
        // In _bulk_docs the design document alone is refused.
        let bulk = try client().json("POST", "/db/_bulk_docs", #"{"docs":[{"_id":"b1"},{"_id":"_design/x"},{"_id":"b2"}]}"#, headers: [bob])
        XCTAssertEqual(bulk.status, 201)
        let rows = try JSONParser.parse(String(decoding: bulk.body, as: UTF8.self)).arrayValue ?? []
        XCTAssertEqual(rows.map { $0.objectValue?["id"]?.stringValue }, ["b1", "_design/x", "b2"])
        XCTAssertEqual(rows.map { $0.objectValue?["error"]?.stringValue }, [nil, "forbidden", nil])
        XCTAssertEqual(try status("GET", "/db/_design/x", admin), 404, "nothing written for it")
        // carol is a database admin by name: design documents and _security are hers too.
        XCTAssertEqual(try status("PUT", "/db/_design/app", carol, "{}"), 201)
        XCTAssertEqual(try status("GET", "/db/_design/app", bob), 200, "members read design documents")
        // Anonymous: 401; a member-less database (members empty) is open to every user.
        XCTAssertEqual(try status("GET", "/db/doc", nil), 401)
        XCTAssertEqual(try status("PUT", "/db/_security", carol, #"{"admins":{"names":["carol"]}}"#), 200)
        XCTAssertEqual(try status("GET", "/db/doc", nil), 200)
        XCTAssertEqual(try status("PUT", "/db/_design/other", nil, "{}"), 401)
        // The server admin may do everything, whatever the object says.
        XCTAssertEqual(try status("PUT", "/db/_security", admin, #"{"members":{"names":["nobody"]}}"#), 200)
        XCTAssertEqual(try status("GET", "/db/doc", admin), 200)
        XCTAssertEqual(try status("GET", "/db/doc", bob), 403)
    }

    func testSecurityEndpointShapes() throws {
        try start(users)
        XCTAssertEqual(try status("PUT", "/db", admin), 201)
        let given = #"{"admins":{"names":[],"roles":[]},"members":{"names":["m"],"roles":["r"]}}"#
        XCTAssertEqual(try status("PUT", "/db/_security", admin, given), 200)
        XCTAssertEqual(text(try client().request("GET", "/db/_security", headers: [admin])), given)
        for bad in [#"{"members":"m"}"#, #"{"members":{"names":"m"}}"#, "[]"] {
            let r = try client().json("PUT", "/db/_security", bad, headers: [admin])
            XCTAssertEqual(r.status, 500, bad)
            XCTAssertEqual(reason(r), "no_majority", "CouchDB 3.5's answer")
        }
        XCTAssertEqual(try status("DELETE", "/db/_security", admin), 405)
        XCTAssertEqual(try status("GET", "/nothing/_security", admin), 404)
    }

    func testSessionsCarryRolesAndUseCouchDBsCookie() throws {
        try start(users)
        let c = try client()
        let login = try c.json("POST", "/_session", #"{"name":"bob","password":"b0b"}"#)
        XCTAssertEqual(login.status, 200)
        XCTAssertEqual(login.object["roles"], .array([.string("staff")]))
        let setCookie = login.header("Set-Cookie") ?? ""
        XCTAssertTrue(setCookie.contains("; Version=1; Expires=") && setCookie.hasSuffix("; Max-Age=600; Path=/; HttpOnly"), setCookie)
        let value = String(setCookie.split(separator: ";")[0].dropFirst("AuthSession=".count))
        // base64url of "bob:<hex time>:<32-byte MAC>".
        let parsed = try XCTUnwrap(SessionCookie.parse(value))
        XCTAssertEqual(parsed.user, "bob")
        XCTAssertEqual(parsed.mac.count, 32)
        XCTAssertLessThan(abs((parsed.time ?? 0) - unixTimeMicrosNow() / 1_000_000), 60)
        let me = try c.request("GET", "/_session", headers: [("Cookie", "AuthSession=" + value)]).object
        XCTAssertEqual(me["userCtx"], .object(JSONObject([("name", .string("bob")), ("roles", .array([.string("staff")]))])))
        let malformed = try client().request("GET", "/_session", headers: [("Cookie", "AuthSession=<not base64>")])
        XCTAssertEqual(malformed.status, 400)
        XCTAssertEqual(reason(malformed), "Malformed AuthSession cookie. Please clear your cookies.")
        // Login errors, as CouchDB words them.
        XCTAssertEqual(try client().request("POST", "/_session", headers: [("Content-Type", "text/plain")], body: Array("x".utf8)).status, 415)
        XCTAssertEqual(reason(try client().json("POST", "/_session", #"{"password":"x"}"#)), "request body must contain a username")
        XCTAssertEqual(reason(try client().json("POST", "/_session", #"{"name":"a","username":"b","password":"x"}"#)),
                       "request body contains different usernames")
        XCTAssertEqual(try status("PUT", "/_session", nil, "{}"), 405)
        // ?next= answers 302 to this server.
        let next = try client().request("POST", "/_session?next=/db", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                        body: Array("name=admin&password=s3cret".utf8))
        XCTAssertEqual(next.status, 302)
        XCTAssertEqual(next.header("Location"), "http://127.0.0.1/db", "on the Host the client named")
        let out = try client().request("DELETE", "/_session")
        XCTAssertEqual(out.status, 200)
        XCTAssertTrue(out.header("Set-Cookie")?.hasPrefix("AuthSession=; Version=1; Expires=") == true)
    }

    func testAnExpiredOrForeignSessionIsNoCredential() throws {
        try start(users)
        let auth = try XCTUnwrap(listener.server).authenticator
        let old = try XCTUnwrap(auth.makeSession(user: "admin", now: unixTimeMicrosNow() / 1_000_000 - 601))
        XCTAssertEqual(try status("GET", "/_all_dbs", ("Cookie", "AuthSession=" + old)), 401)
        let fresh = try XCTUnwrap(auth.makeSession(user: "admin"))
        XCTAssertEqual(try status("GET", "/_all_dbs", ("Cookie", "AuthSession=" + fresh)), 200)
        // Another user's name on admin's MAC.
        let parsed = try XCTUnwrap(SessionCookie.parse(fresh))
        let forged = SessionCookie.make(user: "bob", time: parsed.time!, key: Array("guess".utf8))
        XCTAssertEqual(try status("GET", "/_session", ("Cookie", "AuthSession=" + forged)), 200)
        XCTAssertEqual(try client().request("GET", "/_session", headers: [("Cookie", "AuthSession=" + forged)]).object["userCtx"]?
            .objectValue?["name"], .null)
        // The timeout is configurable (`[chttpd_auth] timeout`).
        XCTAssertEqual(try status("PUT", "/_node/_local/_config/chttpd_auth/timeout", admin, #""700""#), 200)
        XCTAssertEqual(try status("GET", "/_all_dbs", ("Cookie", "AuthSession=" + old)), 200)
    }

    func testAdminsConfigKeepsHashesAndPlainPasswordsGetHashed() throws {
        // A password written in clear into the saved configuration is hashed at the start.
        try #"{"admins":{"root":"r00t"}}"#.write(toFile: directory + "/" + ServerConfig.fileName, atomically: true, encoding: .utf8)
        try start()
        let saved = try String(contentsOfFile: directory + "/" + ServerConfig.fileName, encoding: .utf8)
        XCTAssertFalse(saved.contains("r00t"), saved)
        XCTAssertTrue(saved.contains("-pbkdf2:sha256-"), saved)
        XCTAssertEqual(try status("GET", "/_all_dbs", nil), 401, "an admin in [admins] ends the admin party")
        XCTAssertEqual(try status("GET", "/_all_dbs", basic("root", "r00t")), 200)
        // PUT a plain password: stored hashed; the answer is the previous value, as CouchDB's.
        let put = try client().json("PUT", "/_node/_local/_config/admins/second", #""pw2""#, headers: [basic("root", "r00t")])
        XCTAssertEqual(put.status, 200)
        XCTAssertEqual(text(put), #""""#)
        let stored = try client().request("GET", "/_node/_local/_config/admins/second", headers: [basic("root", "r00t")])
        let hash = try XCTUnwrap(JSONParser.parse(String(decoding: stored.body, as: UTF8.self)).stringValue)
        XCTAssertTrue(hash.hasPrefix("-pbkdf2:sha256-") && hash.hasSuffix(",\(PasswordHash.defaultIterations)"), hash)
        XCTAssertEqual(try status("GET", "/_all_dbs", basic("second", "pw2")), 200)
        XCTAssertEqual(try status("GET", "/_all_dbs", basic("second", "wrong")), 401)
        XCTAssertEqual(try status("DELETE", "/_node/_local/_config/admins/second", basic("root", "r00t")), 200)
        XCTAssertEqual(try status("GET", "/_all_dbs", basic("second", "pw2")), 401)
    }

    func testPasswordHashesInCouchDBsForms() throws {
        // Derived with Python's hashlib.pbkdf2_hmac, as CouchDB writes them.
        let sha1 = try XCTUnwrap(PasswordHash("-pbkdf2-16d51d2b6f231c926e6d5b5e8417a9cd6b95c73d,0123456789abcdef0123456789abcdef,10"))
        XCTAssertTrue(sha1.verify("secret"))
        XCTAssertFalse(sha1.verify("Secret"))
        let sha256 = "-pbkdf2:sha256-ba3cfe6a89688633d4d8bc8ed833b6dacb1a0d2ba25e4e890ddeb8fb1a75e9b7,0123456789abcdef0123456789abcdef,1000"
        XCTAssertTrue(try XCTUnwrap(PasswordHash(sha256)).verify("secret"))
        XCTAssertEqual(PasswordHash(sha256)?.text, sha256)
        XCTAssertTrue(try XCTUnwrap(PasswordHash("-hashed-a63a09fe03cf75144b8a4fb7f98aca2517de4370,somesalt")).verify("secret"))
        for bad in ["secret", "-pbkdf2-zz,salt,10", "-pbkdf2-00,salt", "-pbkdf2-00,salt,0", "-pbkdf2:md5-00,s,1"] {
            XCTAssertNil(PasswordHash(bad), bad)
        }
        let made = PasswordHash.make("pw", iterations: 10)
        XCTAssertTrue(made.verify("pw") && !made.verify("pw "))
        XCTAssertNotEqual(PasswordHash.make("pw", iterations: 10).salt, made.salt, "a new salt each time")
        XCTAssertTrue(PasswordHash(made.text)?.verify("pw") == true)
        // A hash given as a user's password in the configuration is used as the hash.
        try start(#""users":{"h":"\#(sha256)"}"#)
        XCTAssertEqual(try status("GET", "/_all_dbs", basic("h", "secret")), 200)
        XCTAssertEqual(try status("GET", "/_all_dbs", basic("h", sha256)), 401)
    }

    func testPasswordsAreVerifiedOffTheEventLoopOnce() throws {
        var c = ListenerConfiguration()
        c.users = ["h": PasswordHash.make("pw", iterations: 1000).text]
        let auth = Authenticator(configuration: c, config: ServerConfig(start: c, uuids: UUIDGenerator()))
        func outcome(_ password: String) -> Authenticator.Outcome? {
            var head = HTTPRequestHeadLike.make("/_all_dbs")
            head.headers.add(name: "Authorization", value: basic("h", password).1)
            return try? auth.authenticate(head: head, path: .init(target: "/_all_dbs"), remoteIsLoopback: true).get()
        }
        // Not verified yet: left to the worker (a PBKDF2 on the event loop would stall its connections).
        XCTAssertEqual(outcome("pw")?.unverified?.name, "h")
        XCTAssertEqual(outcome("pw")?.userCtx, .anonymous)
        XCTAssertEqual(outcome("pw")?.unverified?.password, "pw", "for the worker to verify")
        XCTAssertNil(auth.check(name: "h", password: "wrong"))
        XCTAssertEqual(auth.check(name: "h", password: "pw"), UserContext(name: "h", roles: ["_admin"]))
        // Verified once: known at once on the event loop, the wrong one still unverified.
        XCTAssertNil(outcome("pw")?.unverified)
        XCTAssertEqual(outcome("pw")?.userCtx.name, "h")
        XCTAssertNotNil(outcome("other")?.unverified)
        // An unknown user needs no hashing: refused at once.
        var head = HTTPRequestHeadLike.make("/")
        head.headers.add(name: "Authorization", value: basic("nobody", "pw").1)
        guard case .failure(let e) = auth.authenticate(head: head, path: try .init(target: "/"), remoteIsLoopback: true) else {
            return XCTFail("an unknown user was let through")
        }
        XCTAssertEqual(e.status, 401)
    }

    func testServeConfigurationFilesKeepPasswordsHashed() throws {
        let path = directory + "/serve.json"
        let kept = PasswordHash.make("k", iterations: 10).text
        try #"{"port":1,"users":{"a":"pa","b":{"roles":["r"],"password":"pb"},"c":"\#(kept)"}}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(try ListenerConfiguration.hashPasswords(inFile: path), 2)
        let o = try JSONParser.parseObject(try String(contentsOfFile: path, encoding: .utf8))
        let users = try XCTUnwrap(o["users"]?.objectValue)
        XCTAssertEqual(o["port"], .int(1))
        XCTAssertEqual(users.members.map(\.key), ["a", "b", "c"], "the file otherwise as it was")
        XCTAssertTrue(PasswordHash(users["a"]?.stringValue ?? "")?.verify("pa") == true)
        XCTAssertTrue(PasswordHash(users["b"]?.objectValue?["password"]?.stringValue ?? "")?.verify("pb") == true)
        XCTAssertEqual(users["b"]?.objectValue?["roles"], .array([.string("r")]))
        XCTAssertEqual(users["c"]?.stringValue, kept)
        let before = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertEqual(try ListenerConfiguration.hashPasswords(inFile: path), 0)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), before, "nothing to hash: not rewritten")
    }

    func testWWWAuthenticateOnlyWhenAsked() throws {
        try start(users)
        XCTAssertEqual(try status("PUT", "/db", admin), 201)
        XCTAssertNil(try client().request("GET", "/db").header("WWW-Authenticate"))
        XCTAssertEqual(try client().request("GET", "/db", headers: [("X-CouchDB-WWW-Authenticate", #"Basic realm="x""#)])
            .header("WWW-Authenticate"), #"Basic realm="x""#)
        XCTAssertEqual(try status("PUT", "/_node/_local/_config/chttpd/WWW-Authenticate", admin, #""Basic realm=\"cblite\"""#), 200)
        XCTAssertEqual(try client().request("GET", "/db").header("WWW-Authenticate"), #"Basic realm="cblite""#)
        XCTAssertEqual(try client().request("GET", "/db", headers: [basic("admin", "no")]).header("WWW-Authenticate"), #"Basic realm="cblite""#)
    }

    func testUserContextForValidation() {
        XCTAssertEqual(UserContext(name: "bob", roles: ["staff"]).json(db: "db").jsonString,
                       #"{"db":"db","name":"bob","roles":["staff"]}"#)
        XCTAssertEqual(UserContext.anonymous.json().jsonString, #"{"name":null,"roles":[]}"#)
        XCTAssertTrue(UserContext.adminParty.isServerAdmin)
    }
}
