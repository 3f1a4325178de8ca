import CBLiteCore
@testable import CBLiteListener
import CouchWire
import Foundation
import XCTest

/// A design document's validate_doc_update over HTTP: 403 and 401 with the function's
/// message, the request's user (name, roles, database) and the database's _security as
/// the function sees them, per document in _bulk_docs.
final class JavaScriptValidationEndpointTests: ListenerTestCase {
    let users = #""users":{"admin":"s3cret","bob":{"password":"b0b","roles":["staff"]}}"#
    var admin: (String, String) { ("Authorization", "Basic " + Base64.encode(Array("admin:s3cret".utf8))) }
    var bob: (String, String) { ("Authorization", "Basic " + Base64.encode(Array("bob:b0b".utf8))) }

    func testRefusalsOverHTTPSeeTheRequestsUser() throws {
        try start(users)
        XCTAssertEqual(try client().json("PUT", "/db", headers: [admin]).status, 201)
        let security = #"{"admins":{"names":["admin"]},"members":{"roles":["staff"]}}"#
        XCTAssertEqual(try client().json("PUT", "/db/_security", security, headers: [admin]).status, 200)
        let ddoc = #"{"validate_doc_update":"function (newDoc, oldDoc, userCtx, secObj) { if (newDoc.forbid) throw({forbidden: 'no'}); if (newDoc.login) throw({unauthorized: 'log in'}); if (newDoc.who) throw({forbidden: JSON.stringify([userCtx, secObj])}); if (newDoc._deleted && userCtx.roles.indexOf('_admin') < 0) throw({forbidden: 'admins delete'}); if (newDoc._attachments && userCtx.roles.indexOf('_admin') < 0) throw({forbidden: 'admins attach'}); }"}"#
        XCTAssertEqual(try client().json("PUT", "/db/_design/v", ddoc, headers: [admin]).status, 201)
        let forbidden = try client().json("PUT", "/db/d", #"{"forbid":true}"#, headers: [bob])
        XCTAssertEqual(forbidden.status, 403)
        XCTAssertEqual(forbidden.object["error"], .string("forbidden"))
        XCTAssertEqual(forbidden.object["reason"], .string("no"))
        let login = try client().json("PUT", "/db/d", #"{"login":true}"#, headers: [bob])
        XCTAssertEqual(login.status, 401)
        XCTAssertEqual(login.object["error"], .string("unauthorized"))
        XCTAssertEqual(login.object["reason"], .string("log in"))
        let who = try client().json("POST", "/db", #"{"who":true}"#, headers: [bob])
        XCTAssertEqual(who.status, 403)
        XCTAssertEqual(try JSONParser.parse(who.object["reason"]?.stringValue ?? ""),
                       try JSONParser.parse(#"[{"db":"db","name":"bob","roles":["staff"]},\#(security)]"#))
        // Per document in _bulk_docs, and deletions by a non-admin refused.
        let bulk = try client().json("POST", "/db/_bulk_docs", #"{"docs":[{"_id":"a","forbid":1},{"_id":"b"},{"_id":"c","login":1}]}"#, headers: [bob])
        XCTAssertEqual(bulk.status, 201)
        let rows = bulk.json?.arrayValue ?? []
        XCTAssertEqual(rows.map { $0.objectValue?["error"]?.stringValue }, [ "forbidden", nil, "unauthorized"])
        XCTAssertEqual(rows.map { $0.objectValue?["reason"]?.stringValue }, ["no", nil, "log in"])
        let rev = rows[1].objectValue?["rev"]?.stringValue ?? ""
        let delete = try client().json("DELETE", "/db/b?rev=\(rev)", headers: [bob])
        XCTAssertEqual(delete.status, 403)
        XCTAssertEqual(delete.object["reason"], .string("admins delete"))
        XCTAssertEqual(try client().json("DELETE", "/db/b?rev=\(rev)", headers: [admin]).status, 200)
        // An attachment's write is a new revision, validated too.
        let doc = try client().json("PUT", "/db/e", "{}", headers: [bob])
        let erev = doc.object["rev"]?.stringValue ?? ""
        let attach = try client().request("PUT", "/db/e/a.txt?rev=\(erev)", headers: [bob, ("Content-Type", "text/plain")],
                                          body: Array("hi".utf8))
        XCTAssertEqual(attach.status, 403)
        XCTAssertEqual(attach.object["reason"], .string("admins attach"))
    }
}
