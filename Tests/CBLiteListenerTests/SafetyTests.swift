import CBLiteCore
@testable import CBLiteListener
import CouchWire
import NIOCore
import XCTest

final class SafetyTests: ListenerTestCase {
    let users = #""users":{"admin":"s3cret"}"#
    var basic: (String, String) { ("Authorization", "Basic " + Base64.encode(Array("admin:s3cret".utf8))) }

    func testCredentialsAreCheckedBeforeTheBody() throws {
        try start(users)
        let c = try client()
        // Promise a body and never send it: the 401 must come anyway.
        c.send("PUT /db HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 401)
        XCTAssertEqual(r.object["error"], .string("unauthorized"))
        XCTAssertEqual(r.object["reason"], .string("You are not a server admin."))
        let wrong = try client().request("GET", "/_all_dbs", headers: [("Authorization", "Basic " + Base64.encode(Array("admin:nope".utf8)))])
        XCTAssertEqual(wrong.status, 401)
        XCTAssertEqual(wrong.object["reason"], .string("Name or password is incorrect."))
        let ok = try client()
        XCTAssertEqual(try ok.request("PUT", "/db", headers: [basic]).status, 201)
        XCTAssertEqual(try ok.request("GET", "/", headers: []).status, 200)     // the welcome is public
    }

    func testSessionCookies() throws {
        try start(users)
        let c = try client()
        let anon = try c.request("GET", "/_session").object
        XCTAssertEqual(anon["userCtx"]?.objectValue?["name"], .null)
        let bad = try c.request("POST", "/_session", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array("name=admin&password=no".utf8))
        XCTAssertEqual(bad.status, 401)
        XCTAssertEqual(bad.header("Set-Cookie")?.hasPrefix("AuthSession=;"), true)
        let login = try c.request("POST", "/_session", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array("name=admin&password=s3cret".utf8))
        XCTAssertEqual(login.status, 200)
        XCTAssertEqual(login.object["name"], .string("admin"))
        let setCookie = login.header("Set-Cookie")!
        let cookie = String(setCookie.split(separator: ";")[0])
        XCTAssertTrue(cookie.hasPrefix("AuthSession=") && cookie.count > 20)
        let json = try c.json("POST", "/_session", #"{"name":"admin","password":"s3cret"}"#)
        XCTAssertEqual(json.status, 200)
        let me = try c.request("GET", "/_session", headers: [("Cookie", cookie)]).object
        XCTAssertEqual(me["userCtx"]?.objectValue?["name"], .string("admin"))
        XCTAssertEqual(me["info"]?.objectValue?["authenticated"], .string("cookie"))
        XCTAssertEqual(try c.request("PUT", "/db", headers: [("Cookie", cookie)]).status, 201)
        // A forged or tampered cookie is worth nothing.
        var tampered = Array(cookie.utf8)
        let i = tampered.count - 8       // inside the MAC (a last character may not be valid base64 at all)
        tampered[i] = tampered[i] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        XCTAssertEqual(try c.request("GET", "/db", headers: [("Cookie", String(decoding: tampered, as: UTF8.self))]).status, 401)
    }

    func testReadOnlyRefusesEveryWrite() throws {
        try start()
        XCTAssertEqual(try client().request("PUT", "/db").status, 201)
        listener.stop()
        try start(#""read_only":true"#)
        let c = try client()
        XCTAssertEqual(try c.request("GET", "/db").status, 200)
        XCTAssertEqual(try c.json("PUT", "/db/x", "{}").status, 403)
        XCTAssertEqual(try client().json("POST", "/db/_bulk_docs", #"{"docs":[]}"#).status, 403)
        XCTAssertEqual(try client().request("DELETE", "/db").status, 403)
        XCTAssertEqual(try client().json("POST", "/db/_all_docs", #"{"keys":[]}"#).status, 200)
        XCTAssertEqual(try client().json("POST", "/db/_revs_diff", "{}").status, 200)
    }

    func testBodyLimitsAndExpectContinue() throws {
        try start(#""limits":{"max_body_bytes":1000,"max_document_bytes":500}"#)
        let c = try client()
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        let tooBig = try c.request("PUT", "/db/x", headers: [("Content-Type", "application/json")], body: Array(("{\"a\":\"" + String(repeating: "x", count: 2000) + "\"}").utf8))
        XCTAssertEqual(tooBig.status, 413)
        let doc = try client().json("PUT", "/db/x", "{\"a\":\"" + String(repeating: "x", count: 700) + "\"}")
        XCTAssertEqual(doc.status, 413)
        // Chunked bodies are counted as they arrive.
        let chunked = try client()
        chunked.send("PUT /db/y HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in 0..<5 { chunked.send("190\r\n" + String(repeating: " ", count: 400) + "\r\n") }
        chunked.send("0\r\n\r\n")
        XCTAssertEqual(try chunked.readResponse().status, 413)
        // Expect: 100-continue gets its interim answer before the body is sent.
        let e = try client()
        e.send("PUT /db/z HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertEqual(try e.readResponse(informational: true).status, 100)
        e.send("{}")
        XCTAssertEqual(try e.readResponse().status, 201)
    }

    /// A pipelined request whose head arrives while the previous response ends must keep
    /// its body (the previous request's end once reset the next one's state).
    func testPipelinedRequestWithALateBody() throws {
        try start()
        XCTAssertEqual(try client().request("PUT", "/db").status, 201)
        let c = try client()
        for i in 0..<20 {
            c.send("GET /db HTTP/1.1\r\nHost: x\r\n\r\nPUT /db/d\(i) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n")
            usleep(20_000)
            c.send("{}")
            XCTAssertEqual(try c.readResponse().status, 200)
            XCTAssertEqual(try c.readResponse().status, 201)
        }
        listener.stop(timeoutMs: 1000)      // and nothing is left waiting
    }

    /// Reads answered on the event loop (GET/HEAD of an open database's document) finish
    /// before their request's end is decoded: pipelined behind each other and behind
    /// requests the pool answers, every response comes back whole and in order, and a
    /// `Connection: close` one is answered, then the connection closes.
    func testPipelinedQuickReadsAnswerInOrder() throws {
        try start()
        XCTAssertEqual(try client().request("PUT", "/db").status, 201)
        XCTAssertEqual(try client().json("PUT", "/db/a", #"{"n":1}"#).status, 201)
        let c = try client()
        var batch = ""
        for i in 0..<10 {
            batch += "GET /db/a HTTP/1.1\r\nHost: x\r\n\r\n"
            batch += "HEAD /db/a HTTP/1.1\r\nHost: x\r\n\r\n"
            batch += "GET /db/missing\(i) HTTP/1.1\r\nHost: x\r\n\r\n"
            batch += "GET /db/a HTTP/1.1\r\nHost: x\r\nAccept: MULTIPART/mixed\r\n\r\n"   // the pool's
            batch += "GET /db/a?revs=true HTTP/1.1\r\nHost: x\r\n\r\n"                     // the pool's
        }
        batch += "GET /db/a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        c.send(batch)
        for _ in 0..<10 {
            let get = try c.readResponse()
            XCTAssertEqual(get.status, 200)
            XCTAssertTrue(get.text.contains(#""n":1"#), get.text)
            XCTAssertEqual(try c.readResponse(head: true).status, 200)
            XCTAssertEqual(try c.readResponse().status, 404)
            let viaPool = try c.readResponse()
            XCTAssertEqual(viaPool.status, 200)
            XCTAssertTrue(viaPool.text.contains(#""n":1"#), viaPool.text)
            XCTAssertTrue(try c.readResponse().text.contains("_revisions"))
        }
        XCTAssertEqual(try c.readResponse().status, 200)
        XCTAssertTrue(c.isClosedByServer(timeoutMs: 1000))
    }

    func testMultipartIsSeenInAcceptHeadersInAnyCase() {
        XCTAssertTrue(ConnectionHandler.mentionsMultipart("multipart/mixed"))
        XCTAssertTrue(ConnectionHandler.mentionsMultipart("application/json, MultiPart/related;q=0.5"))
        XCTAssertFalse(ConnectionHandler.mentionsMultipart("application/json"))
        XCTAssertFalse(ConnectionHandler.mentionsMultipart("multipar"))
        XCTAssertFalse(ConnectionHandler.mentionsMultipart("mul\u{0}tipart"))
        XCTAssertFalse(ConnectionHandler.mentionsMultipart(""))
    }

    /// A body cut short (the client half-closes) makes NIO's decoder answer 400 itself:
    /// the worker's own answer must then be dropped, not sent as a second response.
    func testTruncatedBodyWhileAWorkerWaits() throws {
        try start()
        XCTAssertEqual(try client().request("PUT", "/db").status, 201)
        for _ in 0..<10 {
            let c = try client()
            c.send("PUT /db/t HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":")
            usleep(20_000)
            c.shutdownWrite()
            let r = try? c.readResponse()
            XCTAssertTrue(r == nil || r!.status == 400, "\(String(describing: r?.status))")
        }
        XCTAssertEqual(try client().request("GET", "/_up").status, 200)
    }

    /// A client that half-closes after its request gets the answer, then the server
    /// closes its side too (no connection left in CLOSE-WAIT until the idle timeout).
    func testHalfClosingClientsAreAnsweredThenClosed() throws {
        try start(#""limits":{"max_connections":3}"#)
        for _ in 0..<10 {
            let c = try client()
            c.send("GET /_up HTTP/1.1\r\nHost: x\r\n\r\n")
            c.shutdownWrite()
            XCTAssertEqual(try c.readResponse().status, 200)
            XCTAssertTrue(c.isClosedByServer(timeoutMs: 1000))
        }
        let idle = try client()
        idle.shutdownWrite()
        XCTAssertTrue(idle.isClosedByServer(timeoutMs: 1000))
        XCTAssertEqual(try client().request("GET", "/_up").status, 200)
    }

    func testMalformedHTTPIs400AndTheServerSurvives() throws {
        try start()
        for garbage in ["GARBAGE\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n",
                        "GET / HTTP/1.1\r\n" + String(repeating: "X-Big: " + String(repeating: "a", count: 1000) + "\r\n", count: 200) + "\r\n"] {
            let c = try client()
            c.send(garbage)
            let r = try? c.readResponse()
            XCTAssertTrue(r == nil || r!.status == 400 || r!.status == 431, "\(garbage.prefix(30)) -> \(String(describing: r?.status))")
        }
        XCTAssertEqual(try client().request("GET", "/").status, 200)
    }

    func testSlowHeadersAreCutOff() throws {
        try start(#""limits":{"header_timeout_ms":300,"idle_timeout_ms":600}"#)
        let slow = try client()
        slow.send("GET / HTTP/1.1\r\nHost: x\r\n")        // and never the blank line
        XCTAssertTrue(slow.isClosedByServer(timeoutMs: 3000))
        let idle = try client()
        XCTAssertTrue(idle.isClosedByServer(timeoutMs: 3000))
        XCTAssertEqual(try client().request("GET", "/").status, 200)
    }

    /// A body trickling in slower than the limits' rate is cut off (slow-body attack); one
    /// that keeps to the rate, however long it takes in all, is served.
    func testSlowBodiesAreCutOffAndSteadyOnesServed() throws {
        try start(#""limits":{"body_timeout_ms":400,"body_min_bytes_per_second":1000}"#)
        XCTAssertEqual(try client().request("PUT", "/db").status, 201)
        let slow = try client()
        slow.send("PUT /db/slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        for _ in 0..<3 { usleep(150_000); slow.send(" ") }      // 1 byte earns 1 ms: far too slow
        XCTAssertTrue(slow.isClosedByServer(timeoutMs: 3000))
        XCTAssertEqual(try client().request("GET", "/db/slow").status, 404)

        let steady = try client()
        let value = String(repeating: "v", count: 2390)
        let body = Array(#"{"v":"\#(value)"}"#.utf8)             // 2,400 bytes in 12 pieces, 100 ms apart: 1.2 s in all
        steady.send("PUT /db/steady HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n")
        for i in stride(from: 0, to: body.count, by: 200) {
            steady.send(Array(body[i..<min(i + 200, body.count)]))
            usleep(100_000)
        }
        XCTAssertEqual(try steady.readResponse().status, 201)
    }

    /// At the limit, a new connection is refused only when every open one has a request
    /// in flight (here: bodies that have not arrived).
    func testMaxConnectionsRefusesWhenAllAreBusy() throws {
        try start(#""limits":{"max_connections":2}"#)
        XCTAssertEqual(try client().request("PUT", "/db").status, 201)
        usleep(100_000)
        let a = try client(), b = try client()
        for c in [a, b] { c.send("PUT /db/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{") }
        usleep(200_000)
        let c = try client()
        let r = try? c.readResponse()
        XCTAssertEqual(r?.status, 503)
        XCTAssertTrue(c.isClosedByServer())
    }

    /// At the limit, the connection that has waited longest — idle, or still sending its
    /// head — makes room for a new one; busy ones are kept.
    func testMaxConnectionsShedsTheLongestWaiting() throws {
        try start(#""limits":{"max_connections":3}"#)
        XCTAssertEqual(try client().request("PUT", "/db").status, 201)
        usleep(100_000)                                 // that connection's close is seen
        let busy = try client()
        busy.send("PUT /db/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{")
        let idle = try client()
        XCTAssertEqual(try idle.request("GET", "/_up").status, 200)
        usleep(50_000)
        let slow = try client()
        slow.send("GET / HTTP/1.1\r\nHo")
        usleep(50_000)
        let honest = try client()
        XCTAssertEqual(try honest.request("GET", "/_up").status, 200)
        XCTAssertTrue(idle.isClosedByServer(timeoutMs: 1000), "the idle keep-alive connection waited longest")
        XCTAssertEqual(try client().request("GET", "/_up").status, 200)
        XCTAssertTrue(slow.isClosedByServer(timeoutMs: 1000), "then the slow head")
        busy.send("\"a\":1234}")
        XCTAssertEqual(try busy.readResponse().status, 201, "the busy one was never shed")
    }

    /// Many slow heads at the limit: every honest request is still served, at once.
    func testSlowlorisDoesNotLockOutHonestClients() throws {
        try start(#""limits":{"max_connections":20}"#)
        var slow: [TestHTTPClient] = []
        for _ in 0..<30 {
            let c = try client()
            c.send("GET / HTTP/1.1\r\n")
            slow.append(c)
        }
        for i in 0..<20 {
            for c in slow { c.send("X-\(i): y\r\n") }
            let t = Clock.ms()
            XCTAssertEqual(try client().request("GET", "/_up").status, 200)
            XCTAssertLessThan(Clock.ms() - t, 1000)
        }
        XCTAssertTrue(slow[0].isClosedByServer(timeoutMs: 1000))
    }

    /// An HTTP/0.9 request line (no version), or another version, is answered at once.
    func testNonHTTP1RequestLineIs400AtOnce() throws {
        try start()
        for line in ["GET /\r\n", "GET / HTTP/2.0\r\n", "\r\nGET /_up HTTP/0.9\r\n", "HELLO\n"] {
            let c = try client(timeoutSeconds: 2)
            c.send(line)
            let t = Clock.ms()
            XCTAssertEqual(try? c.readResponse().status, 400, line)
            XCTAssertLessThan(Clock.ms() - t, 1000, line)
            XCTAssertTrue(c.isClosedByServer(timeoutMs: 1000), line)
        }
        let ok = try client()
        ok.send("\r\nGET /_up HTTP/1.0\r\n\r\n")          // a blank line before the request is allowed
        XCTAssertEqual(try ok.readResponse().status, 200)
    }

    func testTooManyHeadersIs431() throws {
        try start(#""limits":{"max_header_count":10}"#)
        let many = try client()
        many.send("GET /_up HTTP/1.1\r\n" + (0..<11).map { "X-\($0): y\r\n" }.joined() + "\r\n")
        XCTAssertEqual(try many.readResponse().status, 431)
        XCTAssertTrue(many.isClosedByServer())
        let ten = try client()
        ten.send("GET /_up HTTP/1.1\r\n" + (0..<10).map { "X-\($0): y\r\n" }.joined() + "\r\n")
        XCTAssertEqual(try ten.readResponse().status, 200)
    }

    func testDefaultConnectionLimitFollowsTheDescriptorLimit() {
        XCTAssertEqual(ConnectionLimit.forDescriptorLimit(1024), 768)
        XCTAssertEqual(ConnectionLimit.forDescriptorLimit(256), 128)
        XCTAssertEqual(ConnectionLimit.forDescriptorLimit(64), ConnectionLimit.floor)
        XCTAssertEqual(ConnectionLimit.forDescriptorLimit(1 << 20), ConnectionLimit.ceiling)
        XCTAssertGreaterThanOrEqual(ListenerConfiguration.Limits().maxConnections, ConnectionLimit.floor)
    }

    func testAnonymousTLSIdentityIsKeptAndFingerprinted() throws {
        try start(#""tls":{"anonymous":true}"#)
        let first = listener.tlsCertificateSHA256
        XCTAssertEqual(first?.count, 64)
        XCTAssertTrue(listener.url.hasPrefix("https://127.0.0.1:"))
        listener.stop()
        try start(#""tls":{"anonymous":true}"#)
        XCTAssertEqual(listener.tlsCertificateSHA256, first)     // generated once, kept beside the databases
        // A plain-HTTP client gets no HTTP answer from a TLS port.
        let c = try client()
        c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertNil(try? c.readResponse())
    }

    func testRemoteClientsNeedUsersUnlessOptedIn() {
        XCTAssertTrue(Listener.isLoopback(try? .init(ipAddress: "127.0.0.1", port: 1)))
        XCTAssertTrue(Listener.isLoopback(try? .init(ipAddress: "::1", port: 1)))
        XCTAssertFalse(Listener.isLoopback(try? .init(ipAddress: "10.1.2.3", port: 1)))
        func authenticator(_ allowRemote: Bool) -> Authenticator {
            var c = ListenerConfiguration()
            c.allowRemoteWithoutAuth = allowRemote
            return Authenticator(configuration: c, config: ServerConfig(start: c, uuids: UUIDGenerator()))
        }
        let head = HTTPRequestHeadLike.make("/db")
        guard case .failure(let e) = authenticator(false).authenticate(head: head, path: try! .init(target: "/db"), remoteIsLoopback: false) else {
            return XCTFail("a remote client was served without users")
        }
        XCTAssertEqual(e.status, 403)
        guard case .success = authenticator(true)
            .authenticate(head: head, path: try! .init(target: "/db"), remoteIsLoopback: false) else { return XCTFail() }
    }
}
