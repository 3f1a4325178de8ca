import CBLiteCore
@testable import CBLiteListener
import Glibc
import XCTest

final class ChangesFeedTests: ListenerTestCase {
    func seed(_ c: TestHTTPClient, _ n: Int) throws {
        XCTAssertEqual(try c.request("PUT", "/db").status, 201)
        for i in 1...n { XCTAssertEqual(try c.json("PUT", "/db/d\(i)", #"{"i":\#(i)}"#).status, 201) }
    }

    func testNormalFeedWithParameters() throws {
        try start()
        let c = try client()
        try seed(c, 4)
        let feed = try c.request("GET", "/db/_changes?style=all_docs&since=0")
        XCTAssertEqual(feed.status, 200)
        XCTAssertEqual(feed.header("Transfer-Encoding"), "chunked")
        let results = feed.object["results"]!.arrayValue!
        XCTAssertEqual(results.count, 4)
        XCTAssertEqual(results[0].objectValue?["id"], .string("d1"))
        XCTAssertNotNil(results[0].objectValue?["changes"]?.arrayValue?.first?.objectValue?["rev"])
        XCTAssertEqual(feed.object["last_seq"], .int(4))
        XCTAssertEqual(try c.request("GET", "/db/_changes?since=2").object["results"]?.arrayValue?.count, 2)
        // A CouchDB-shaped sequence passed back verbatim: its number counts.
        XCTAssertEqual(try c.request("GET", "/db/_changes?since=3-g1AAAACbeJzL").object["results"]?.arrayValue?.count, 1)
        let limited = try c.request("GET", "/db/_changes?limit=1&descending=true&include_docs=true").object
        XCTAssertEqual(limited["results"]?.arrayValue?.count, 1)
        XCTAssertEqual(limited["results"]?.arrayValue?[0].objectValue?["doc"]?.objectValue?["i"], .int(4))
        let byIDs = try c.json("POST", "/db/_changes?filter=_doc_ids", #"{"doc_ids":["d3","d1"]}"#).object["results"]!.arrayValue!
        XCTAssertEqual(Set(byIDs.compactMap { $0.objectValue?["id"]?.stringValue }), ["d1", "d3"])
        let byQuery = try c.request("GET", "/db/_changes?filter=_doc_ids&doc_ids=%5B%22d2%22%5D").object["results"]!.arrayValue!
        XCTAssertEqual(byQuery.compactMap { $0.objectValue?["id"]?.stringValue }, ["d2"])
        XCTAssertEqual(try c.request("GET", "/db/_changes?feed=bogus").status, 400)
        XCTAssertEqual(try c.request("GET", "/db/_changes?since=xyz").status, 400)
    }

    func testLongpollWakesOnAWrite() throws {
        try start()
        let c = try client()
        try seed(c, 1)
        let writer = try client()
        let started = Clock.ms()
        DispatchLike.after(ms: 300) { _ = try? writer.json("PUT", "/db/late", "{}") }
        let r = try c.request("GET", "/db/_changes?feed=longpoll&since=now&timeout=5000")
        let elapsed = Clock.ms() - started
        XCTAssertEqual(r.object["results"]?.arrayValue?.first?.objectValue?["id"], .string("late"))
        XCTAssertLessThan(elapsed, 4000)
        // Nothing new: the timeout ends it with no rows.
        let empty = try c.request("GET", "/db/_changes?feed=longpoll&since=now&timeout=300")
        XCTAssertEqual(empty.object["results"]?.arrayValue?.count, 0)
    }

    func testContinuousFeedStreamsRowsAndHeartbeats() throws {
        try start()
        let c = try client()
        try seed(c, 2)
        c.send("GET /db/_changes?feed=continuous&since=0&heartbeat=200 HTTP/1.1\r\nHost: x\r\n\r\n")
        var text = c.readUntil("\"d2\"")
        XCTAssertTrue(text.contains("\"d1\""))
        let writer = try client()
        _ = try writer.json("PUT", "/db/live", "{}")
        text = c.readUntil("\"live\"")
        XCTAssertTrue(text.contains("\"live\""))
        // A heartbeat is a newline chunk ("1\r\n\n\r\n" in chunked framing).
        text = c.readUntil("1\r\n\n\r\n", timeoutMs: 2000)
        XCTAssertTrue(text.contains("1\r\n\n\r\n"))
        // Without a heartbeat, the timeout ends the feed with last_seq.
        let d = try client()
        let r = try d.request("GET", "/db/_changes?feed=continuous&since=0&timeout=300")
        XCTAssertTrue(r.text.contains("\"last_seq\":3"), r.text)
        XCTAssertEqual(r.text.split(separator: "\n").count, 4)
    }

    func testEventSourceFeed() throws {
        try start()
        let c = try client()
        try seed(c, 1)
        let r = try c.request("GET", "/db/_changes?feed=eventsource&since=0&timeout=200")
        XCTAssertEqual(r.header("Content-Type"), "text/event-stream; charset=utf-8")
        XCTAssertTrue(r.text.hasPrefix("data: {\"seq\":1,\"id\":\"d1\""), r.text)
        _ = try c.json("PUT", "/db/d2", "{}")
        let resumed = try c.request("GET", "/db/_changes?feed=eventsource&timeout=200", headers: [("Last-Event-ID", "1")])
        XCTAssertTrue(resumed.text.hasPrefix("data: {\"seq\":2,\"id\":\"d2\""), resumed.text)
    }

    func testStopEndsAContinuousFeed() throws {
        try start()
        let c = try client()
        try seed(c, 1)
        c.send("GET /db/_changes?feed=continuous&since=0&heartbeat=100 HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = c.readUntil("\"d1\"")
        let t = Clock.ms()
        listener.stop(timeoutMs: 2000)
        XCTAssertLessThan(Clock.ms() - t, 4000)
        XCTAssertTrue(c.isClosedByServer())
    }
}

/// Runs a closure on a new thread after a delay (no Dispatch/Foundation in these tests).
enum DispatchLike {
    final class Box { let f: () -> Void; let ms: Int; init(_ f: @escaping () -> Void, _ ms: Int) { self.f = f; self.ms = ms } }
    static func after(ms: Int, _ f: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Box(f, ms)).toOpaque()
        var t = pthread_t()
        pthread_create(&t, nil, { p in
            let b = Unmanaged<Box>.fromOpaque(p!).takeRetainedValue()
            usleep(useconds_t(b.ms * 1000))
            b.f()
            return nil
        }, box)
        pthread_detach(t)
    }
}

final class FeedStarvationTests: ListenerTestCase {
    /// As many waiting feeds as connections allowed, minus one, and the last connection
    /// is still served at once.
    func testWaitingFeedsDoNotStarveOtherConnections() throws {
        try start(#""limits":{"max_connections":80}"#)
        let writer = try client()
        XCTAssertEqual(try writer.request("PUT", "/db").status, 201)
        var feeds: [TestHTTPClient] = []
        for _ in 0..<70 {
            let f = try client()
            f.send("GET /db/_changes?feed=longpoll&since=now&timeout=20000 HTTP/1.1\r\nHost: x\r\n\r\n")
            feeds.append(f)
        }
        usleep(300_000)
        let t = Clock.ms()
        XCTAssertEqual(try writer.json("PUT", "/db/wake", "{}").status, 201)
        XCTAssertLessThan(Clock.ms() - t, 2000)
        for f in feeds { XCTAssertTrue(f.readUntil("\"wake\"").contains("\"wake\"")) }
    }
}
