import XCTest
@testable import CBLiteCore

/// _approx_count_distinct: CouchDB's HyperLogLog (precision 11) over the keys.
final class ApproxCountDistinctTests: CBLTestCase {
    private func sketch(_ keys: some Sequence<String>) -> HyperLogLog {
        var h = HyperLogLog()
        for k in keys { var k = k; k.withUTF8 { h.add($0) } }
        return h
    }

    func testSmallCountsAreExactAndRepeatsCountOnce() {
        XCTAssertEqual(sketch([]).count, 0)
        for n in [1, 2, 10] {
            let keys = (0..<n).map { "\"k\($0)\"" }
            XCTAssertEqual(sketch(keys + keys + keys).count, Int64(n), "n = \(n)")
        }
        // Linear counting: off by one at most while registers rarely collide.
        let fifty = (0..<50).map { "\"k\($0)\"" }
        XCTAssertEqual(Double(sketch(fifty).count), 50, accuracy: 1)
    }

    func testLargeCountsAreWithinAFewPercentAndSketchesMerge() {
        let n = 100_000
        var whole = sketch((0..<n).map { "[\($0),\"doc\"]" })
        XCTAssertEqual(Double(whole.count), Double(n), accuracy: Double(n) * 0.03)
        var half = sketch((0..<n / 2).map { "[\($0),\"doc\"]" })
        half.merge(sketch((n / 2..<n).map { "[\($0),\"doc\"]" }))
        XCTAssertEqual(half.count, whole.count)
        whole.merge(whole)
        XCTAssertEqual(half.count, whole.count)
    }

    func testTheViewsBuiltInCountsDistinctKeysPerGroup() throws {
        let c = try open().defaultCollection()
        for i in 0..<30 { _ = try c.put(docID: "d\(i)", json: #"{"k":[\#(i % 2),\#(i % 7)]}"#, parent: nil) }
        let v = try keyView(c, reduce: Reducer(builtin: "_approx_count_distinct")!)
        XCTAssertEqual(try rows(v).map(\.valueJSON), ["14"])
        XCTAssertEqual(try rows(v, #"{"group_level":1}"#).map(\.valueJSON), ["7", "7"])
    }
}
