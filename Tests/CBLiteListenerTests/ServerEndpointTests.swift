import CBLiteCore
@testable import CBLiteListener
import XCTest

final class ServerEndpointTests: ListenerTestCase {
    func testWelcomeCarriesCouchDBHeadersAndShape() throws {
        try start()
        let c = try client()
        let r = try c.request("GET", "/")
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.object["couchdb"], .string("Welcome"))
        XCTAssertNotNil(r.object["uuid"]?.stringValue)
        XCTAssertEqual(r.header("Content-Type"), "application/json")
        XCTAssertEqual(r.header("Cache-Control"), "must-revalidate")
        XCTAssertTrue(r.header("Server")?.hasPrefix("cblite/") == true)
        // Stable for the listener's life, on the same keep-alive connection.
        XCTAssertEqual(try c.request("GET", "/").object["uuid"], r.object["uuid"])
        XCTAssertEqual(try c.request("GET", "/_up").object["status"], .string("ok"))
        let uuids = try c.request("GET", "/_uuids?count=3").object["uuids"]?.arrayValue
        XCTAssertEqual(uuids?.count, 3)
        XCTAssertEqual(Set(uuids!.compactMap(\.stringValue)).count, 3)
        XCTAssertEqual(try c.request("GET", "/_cluster_setup").status, 501)
    }

    func testDatabaseLifecycle() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db1").status, 201)
        let again = try c.request("PUT", "/db1/")
        XCTAssertEqual(again.status, 412)
        XCTAssertEqual(again.object["error"], .string("file_exists"))
        let info = try c.request("GET", "/db1/")
        XCTAssertEqual(info.status, 200)
        XCTAssertEqual(info.object["db_name"], .string("db1"))
        XCTAssertEqual(info.object["doc_count"], .int(0))
        XCTAssertNotNil(info.object["update_seq"])
        XCTAssertNotNil(info.object["instance_start_time"]?.stringValue)
        let head = try c.request("HEAD", "/db1")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(try c.request("GET", "/_all_dbs").json, .array([.string("db1")]))
        XCTAssertEqual(try c.request("DELETE", "/db1").status, 200)
        let gone = try c.request("GET", "/db1")
        XCTAssertEqual(gone.status, 404)
        XCTAssertEqual(gone.object["reason"], .string("Database does not exist."))
        XCTAssertEqual(try c.request("DELETE", "/db1").status, 404)
    }

    func testNamesCannotEscapeTheDirectory() throws {
        try start()
        let c = try client()
        for path in ["/..%2F..%2Fetc", "/Upper", "/%2E%2E", "/a..b", "/..", "/x%00y"] {
            let r = try c.request("PUT", path)
            XCTAssertEqual(r.status, 400, path)
        }
        XCTAssertEqual(try c.request("GET", "/_all_dbs").json, .array([]))
    }

    func testCollectionsAreReachableAsDbScopeCollection() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/shop").status, 201)
        XCTAssertEqual(try c.request("PUT", "/shop.inventory.items").status, 201)
        XCTAssertEqual(try c.json("PUT", "/shop.inventory.items/apple", #"{"n":1}"#).status, 201)
        XCTAssertEqual(try c.request("GET", "/shop.inventory.items").object["doc_count"], .int(1))
        XCTAssertEqual(try c.request("GET", "/shop").object["doc_count"], .int(0))
        XCTAssertEqual(try c.request("GET", "/shop.inventory.nothing").status, 404)
    }

    func testGivenHandlesAreServedAndNotClosedByStop() throws {
        let db = try Database.open(name: "given", directory: directory + "/elsewhere")
        defer { try? db.close() }
        _ = try db.defaultCollection().put(docID: "a", json: "{}", parent: nil)
        listener = try Listener(configuration: #"{"port":0}"#)      // no directory: given handles only
        try listener.serve(name: "given", database: db)
        try listener.start()
        let c = try client()
        XCTAssertEqual(try c.request("GET", "/given/a").status, 200)
        XCTAssertEqual(try c.request("PUT", "/other").status, 403)
        XCTAssertEqual(try c.request("GET", "/_all_dbs").json, .array([.string("given")]))
        listener.stop()
        XCTAssertFalse(db.isClosed)
    }

    func testStopReleasesThePortAndDirectoryDatabasesClose() throws {
        try start()
        let port = listener.port
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        listener.stop()
        XCTAssertTrue(c.isClosedByServer())
        listener = try Listener(configuration: "{\"directory\":\"\(directory)\",\"port\":\(port)}")
        try listener.start()
        XCTAssertEqual(listener.port, port)
        XCTAssertEqual(try client().request("GET", "/db").status, 200)
    }

    func testConfigurationIsChecked() {
        for bad in [#"{"nope":1}"#, #"{"port":"x"}"#, #"{"port":70000}"#, #"{"limits":{"max_body_bytes":0}}"#,
                    #"{"limits":{"what":1}}"#, #"{"tls":{"cert_pem_file":"x"}}"#, #"{"users":{"a":1}}"#, "[1]", "{"] {
            XCTAssertThrowsError(try Listener(configuration: bad), bad) { e in
                XCTAssertEqual((e as? CBLError)?.status, .badRequest, bad)
            }
        }
    }
}

final class LifetimeTests: ListenerTestCase {
    /// A database given to the listener with one document, and a continuous feed on it
    /// (`query` added to its request) that has sent that document.
    private func servedDatabaseWithOpenFeed(_ query: String = "") throws -> (Database, TestHTTPClient) {
        let db = try Database.open(name: "given", directory: directory)
        _ = try db.defaultCollection().put(docID: "a", json: "{}", parent: nil)
        listener = try Listener(configuration: #"{"port":0}"#)
        try listener.serve(name: "given", database: db)
        try listener.start()
        let feed = try client()
        feed.send("GET /given/_changes?feed=continuous&since=0\(query) HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(feed.readUntil("\"a\"").contains("\"a\""))
        return (db, feed)
    }

    /// Closing a given database stops serving it: its feeds end and it is no longer found.
    func testClosingAGivenDatabaseStopsServingIt() throws {
        let (db, feed) = try servedDatabaseWithOpenFeed()
        let started = Clock.ms()
        try db.close()
        let rest = feed.readUntil("last_seq", timeoutMs: 5000)
        XCTAssertTrue(rest.contains("\"last_seq\":1"), rest)
        XCTAssertLessThan(Clock.ms() - started, 4000)
        XCTAssertEqual(try client().request("GET", "/given").status, 404)
    }

    /// The listener's hold is one of the database's services: its close cancels the feeds
    /// waiting on it and returns once they have sent their last line, with no heartbeat or
    /// timeout to wait for.
    func testClosingAServedDatabaseEndsItsContinuousFeedBeforeCloseReturns() throws {
        let (db, feed) = try servedDatabaseWithOpenFeed("&timeout=60000")
        let started = Clock.ms()
        try db.close()
        XCTAssertLessThan(Clock.ms() - started, ServedDatabase.feedEndTimeoutMs, "the feed ended, not the wait for it")
        let rest = feed.readUntil("last_seq", timeoutMs: 200)      // written before close returned
        XCTAssertTrue(rest.contains("\"last_seq\":1"), rest)
    }

    /// A hold cancels its feeds when its database closes, and one started after at once; a
    /// released hold is no longer the database's concern.
    func testAServedDatabaseCancelsItsFeedsAtClose() throws {
        let db = try Database.open(name: "held", directory: directory)
        let hold = ServedDatabase(db)
        let waiting = Cancellation(), ended = Cancellation()
        hold.feedStarted(waiting)
        hold.feedStarted(ended)
        hold.feedEnded(ended)
        let released = ServedDatabase(db)
        let other = Cancellation()
        released.feedStarted(other)
        released.release()
        DispatchLike.after(ms: 100) { hold.feedEnded(waiting) }    // the feed sends its last line
        let started = Clock.ms()
        try db.close()
        XCTAssertLessThan(Clock.ms() - started, ServedDatabase.feedEndTimeoutMs, "close waited for the feed, not the bound")
        XCTAssertTrue(waiting.isCancelled)
        XCTAssertFalse(ended.isCancelled, "a feed that ended is left alone")
        XCTAssertFalse(other.isCancelled, "a released hold is not stopped")
        let late = Cancellation()
        hold.feedStarted(late)
        XCTAssertTrue(late.isCancelled, "a feed on a closed database ends at once")
        let onClosed = Cancellation()
        ServedDatabase(db).feedStarted(onClosed)
        XCTAssertTrue(onClosed.isCancelled, "serving a closed database holds nothing")
    }
}

/// `/_uuids` by CouchDB's algorithms, `/_membership`, `/_node/_local/_config` (values set
/// over HTTP, kept beside the databases, the uuids ones applied at once), `_missing_revs`.
final class ServerConfigTests: ListenerTestCase {
    private func uuids(_ c: TestHTTPClient, _ n: Int) throws -> [String] {
        try c.json("GET", "/_uuids?count=\(n)").object["uuids"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    func testUUIDAlgorithmsAndTheirHeaders() throws {
        try start()
        let c = try client()
        let r = try c.json("GET", "/_uuids?count=3")
        XCTAssertEqual(r.header("Cache-Control"), "no-cache")
        XCTAssertEqual(r.header("Pragma"), "no-cache")
        XCTAssertEqual(r.header("Expires"), "Mon, 01 Jan 1990 00:00:00 GMT")
        XCTAssertNotNil(r.header("ETag"))
        // sequential (the default): one 26-digit prefix, increasing suffixes.
        let seq = try uuids(c, 3)
        XCTAssertEqual(Set(seq.map { $0.prefix(26) }).count, 1, "\(seq)")
        XCTAssertEqual(seq, seq.sorted())
        XCTAssertTrue(seq.allSatisfy { $0.count == 32 })
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/uuids/algorithm", #""utc_random""#).json, .string(""))
        let utc = try uuids(c, 2)
        let micros = UInt64(unixTimeMicrosNow())
        XCTAssertTrue(utc.allSatisfy { $0.count == 32 && UInt64($0.prefix(14), radix: 16).map { micros - $0 < 60_000_000 } == true }, "\(utc)")
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/uuids/utc_id_suffix", #""-sfx""#).status, 200)
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/uuids/algorithm", #""utc_id""#).json, .string("utc_random"))
        XCTAssertTrue(try uuids(c, 2).allSatisfy { $0.hasSuffix("-sfx") && $0.count == 18 })
        // POSTed documents are named by the algorithm too.
        XCTAssertEqual(try c.json("PUT", "/db").status, 201)
        XCTAssertTrue(try c.json("POST", "/db", #"{"a":1}"#).object["id"]?.stringValue?.hasSuffix("-sfx") == true)
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/uuids/algorithm", #""random""#).json, .string("utc_id"))
        XCTAssertEqual(Set(try uuids(c, 3).map { $0.prefix(26) }).count, 3)
        // Counts CouchDB refuses.
        XCTAssertEqual(try c.json("GET", "/_uuids?count=1001").object["reason"], .string("count parameter too large"))
        XCTAssertEqual(try c.json("GET", "/_uuids?count=abc").object["reason"], .string("count must be a positive integer"))
        XCTAssertEqual(try c.json("GET", "/_uuids?count=0").status, 400)
    }

    func testConfigIsKeptAndAnsweredAsCouchDBDoes() throws {
        try start()
        var c = try client()
        XCTAssertEqual(try c.json("GET", "/_node/_local/_config/uuids").json, .object(JSONObject()))
        XCTAssertEqual(try c.json("GET", "/_node/_local/_config/uuids/algorithm").object["reason"], .string("unknown_config_value"))
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/uuids/algorithm", #""random""#).json, .string(""))
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/custom/anything", #""kept""#).status, 200)
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/uuids/algorithm", "random").object["reason"], .string("invalid UTF-8 JSON"))
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/uuids/algorithm", "42").object["reason"], .string("a JSON string expected"))
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/uuids/algorithm", #""nonsense""#).status, 400)
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/query_servers/x", #""/bin/true""#).status, 403)
        XCTAssertEqual(try c.json("POST", "/_node/_local/_config/uuids/algorithm", #""random""#).status, 405)
        XCTAssertEqual(try c.json("GET", "/_node/nonode@nohost/_config").object["error"], .string("nodedown"))
        XCTAssertEqual(try c.json("GET", "/_node/_local").object["name"], .string("cblite@127.0.0.1"))
        XCTAssertEqual(try c.json("GET", "/_membership").object["all_nodes"], .array([.string("cblite@127.0.0.1")]))
        XCTAssertEqual(try c.json("PUT", "/_node/_local/_config/couchdb/max_document_size", #""100""#).status, 200)
        // Kept beside the databases: after a restart the values (and the limit) are there.
        listener.stop()
        try start()
        c = try client()
        let all = try c.json("GET", "/_node/_local/_config").object
        XCTAssertEqual(all["custom"], .object(JSONObject([("anything", .string("kept"))])))
        XCTAssertEqual(all["uuids"]?.objectValue?["algorithm"], .string("random"))
        XCTAssertEqual(try c.json("PUT", "/db").status, 201)
        XCTAssertEqual(try c.json("PUT", "/db/big", #"{"text":"\#(String(repeating: "x", count: 200))"}"#).status, 413)
        XCTAssertEqual(try c.json("DELETE", "/_node/_local/_config/couchdb/max_document_size").json, .string("100"))
        XCTAssertEqual(try c.json("DELETE", "/_node/_local/_config/couchdb/max_document_size").object["reason"],
                       .string("unknown_config_value"))
    }

    func testMissingRevsAnswersAsCouchDB() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.json("PUT", "/db").status, 201)
        let rev = try XCTUnwrap(c.json("PUT", "/db/doc-1", #"{"a":1}"#).object["rev"]?.stringValue)
        let r = try c.json("POST", "/db/_missing_revs", #"{"doc-1":["\#(rev)","3-aaaa"],"doc-missing":["1-ffff"]}"#)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.object["missing_revs"]?.objectValue,
                       JSONObject([("doc-1", .array([.string("3-aaaa")])), ("doc-missing", .array([.string("1-ffff")]))]))
    }
}
