import CBLiteCore
@testable import CBLiteListener
import XCTest

final class ServerStatisticsTests: XCTestCase {
    private func number(_ v: JSONValue?) -> Double? {
        switch v {
        case .int(let i)?: return Double(i)
        case .double(let d)?: return d
        default: return nil
        }
    }

    /// Counters count per method and status; the histogram summarises only the window's
    /// times, with nearest-rank percentiles and buckets that add up to n.
    func testCountersAndTheWindowedHistogram() throws {
        let stats = ServerStatistics(interval: 10, maxSamples: 100)
        stats.record(method: "GET", status: 200, milliseconds: 1000, now: 0)        // outside the window below
        for ms in 1...100 { stats.record(method: "GET", status: 200, milliseconds: Double(ms), now: 100) }
        stats.record(method: "PUT", status: 201, milliseconds: 3, now: 100)
        let tree = stats.json(openDatabases: 2, now: 105)
        let get = ServerStatistics.select(tree, ["couchdb", "httpd_request_methods", "GET", "value"])
        XCTAssertEqual(number(get), 101)
        XCTAssertEqual(number(ServerStatistics.select(tree, ["couchdb", "httpd_status_codes", "201", "value"])), 1)
        XCTAssertEqual(number(ServerStatistics.select(tree, ["couchdb", "httpd", "requests", "value"])), 102)
        XCTAssertEqual(number(ServerStatistics.select(tree, ["couchdb", "open_databases", "value"])), 2)
        XCTAssertEqual(ServerStatistics.select(tree, ["couchdb", "no_such_stat"]), .null)

        // 100 samples kept: the ring replaced the oldest two (1000 ms, then 1 ms) with the
        // last GET (100 ms) and the PUT (3 ms): 2, 3, 3, 4 … 100, whose 50th is 50.
        let h = ServerStatistics.select(tree, ["couchdb", "request_time", "value"])
        XCTAssertEqual(number(ServerStatistics.select(h, ["n"])), 100)
        XCTAssertEqual(number(ServerStatistics.select(h, ["max"])), 100)
        XCTAssertEqual(number(ServerStatistics.select(h, ["min"])), 2)
        XCTAssertEqual(number(ServerStatistics.select(h, ["median"])), 50)
        guard case .array(let buckets) = ServerStatistics.select(h, ["histogram"]) else { return XCTFail("no histogram") }
        let total = buckets.compactMap { b -> Double? in
            guard case .array(let pair) = b else { return nil }
            return number(pair.last)
        }.reduce(0, +)
        XCTAssertEqual(total, 100)

        // Later than the window: no sample, zeros, and CouchDB's empty histogram.
        let later = ServerStatistics.select(stats.json(openDatabases: 0, now: 1000), ["couchdb", "request_time", "value"])
        XCTAssertEqual(number(ServerStatistics.select(later, ["n"])), 0)
        XCTAssertEqual(number(ServerStatistics.select(later, ["arithmetic_mean"])), 0)
    }
}
