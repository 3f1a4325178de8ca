import XCTest
@testable import CBLiteCore

/// The batch of rows a view update maps before writing them: the order it writes them in
/// (the index's: key bytes, document ID bytes, emit number), and the keys of integers
/// emitted as JSON text.
final class MappedBatchTests: XCTestCase {
    private struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    /// Each row of the batch as (key, document ID, emit number), by row index.
    private func rowsByIndex(_ batch: MappedBatch) -> [(key: [UInt8], id: String, n: Int)] {
        var out: [(key: [UInt8], id: String, n: Int)] = []
        for d in 0..<batch.docCount {
            for (n, key) in batch.keys(of: d).enumerated() { out.append((key, batch.docID(d), n)) }
        }
        return out
    }

    /// Checks `indexOrder` against the index order computed by brute force.
    private func assertIndexOrder(_ batch: MappedBatch, documents: [Int]? = nil, file: StaticString = #filePath, line: UInt = #line) {
        let all = rowsByIndex(batch)
        var firstRow: [Int] = []
        var r = 0
        for d in 0..<batch.docCount { firstRow.append(r); r += batch.rowCount(of: d) }
        let chosen: [Int] = documents.map { $0.flatMap { d in (firstRow[d]..<firstRow[d] + batch.rowCount(of: d)).map { $0 } } }
            ?? Array(all.indices)
        let expected = chosen.map { all[$0] }.sorted { a, b in
            if a.key != b.key { return a.key.lexicographicallyPrecedes(b.key) }
            if a.id != b.id { return Array(a.id.utf8).lexicographicallyPrecedes(Array(b.id.utf8)) }
            return a.n < b.n
        }
        let got = batch.indexOrder(documents: documents).map { all[Int($0)] }
        XCTAssertEqual(got.count, expected.count, file: file, line: line)
        for (g, e) in zip(got, expected) where g.key != e.key || g.id != e.id || g.n != e.n {
            XCTFail("row (\(g.key), \(g.id), \(g.n)) where (\(e.key), \(e.id), \(e.n)) belongs", file: file, line: line)
            return
        }
    }

    /// A batch of documents in a shuffled ID order (as after updates), emitting 0-3 rows
    /// each of keys from `key`.
    private func batch(ids: [String], seed: UInt64, key: (inout Generator, MappedBatch) -> Void) -> MappedBatch {
        var g = Generator(state: seed)
        var order = ids
        for i in stride(from: order.count - 1, to: 0, by: -1) { order.swapAt(i, g.next(i + 1)) }
        let batch = MappedBatch()
        for (s, id) in order.enumerated() {
            let bytes = Array(id.utf8)
            bytes.withUnsafeBufferPointer { batch.beginDocument(id: $0, sequence: Int64(s + 1)) }
            for _ in 0..<g.next(4) { key(&g, batch) }
        }
        return batch
    }

    private let mixedIDs: [String] = (0..<400).map { "doc-\($0)" } + ["a", "ab", "a0", "b", "aé", "a~", "zz", "z"]

    func testRowsOfShortKeysAreSortedIntoIndexOrder() {
        // Integer keys made both ways, null and booleans: keys that fit their 8-byte prefix.
        let b = batch(ids: mixedIDs, seed: 7) { g, batch in
            switch g.next(4) {
            case 0: batch.addRow(integerKey: Int64(g.next(60)) - 30, value: nil)
            case 1: batch.addRow(key: .int(Int64(g.next(60)) - 30), keyJSON: nil, value: nil)
            case 2: batch.addRow(key: g.next(2) == 0 ? .null : .bool(g.next(2) == 0), keyJSON: nil, value: nil)
            default: batch.addRow(integerKey: Int64(g.next(2)) * 281_474_976_710_656, value: Array("1".utf8))
            }
        }
        assertIndexOrder(b)
        assertIndexOrder(b, documents: Array(stride(from: 0, to: b.docCount, by: 3)))
    }

    func testRowsInBatchOrderOfAscendingIDsAreSortedIntoIndexOrder() {
        let b = MappedBatch()
        var g = Generator(state: 3)
        for i in 0..<500 {
            let digits = String(i)
            let id = Array(("doc-" + String(repeating: "0", count: 5 - digits.count) + digits).utf8)
            id.withUnsafeBufferPointer { b.beginDocument(id: $0, sequence: Int64(i + 1)) }
            for _ in 0..<g.next(3) { b.addRow(integerKey: Int64(g.next(90)), value: nil) }
        }
        assertIndexOrder(b)
    }

    func testRowsOfLongKeysOrLongIDsAreSortedIntoIndexOrder() {
        // Keys longer than 8 bytes (a double that keeps all its bytes, strings, arrays).
        let long = batch(ids: mixedIDs, seed: 11) { g, batch in
            switch g.next(4) {
            case 0: batch.addRow(key: .double(Double(g.next(10)) + 0.1), keyJSON: nil, value: nil)
            case 1: batch.addRow(key: .string(["a", "B", "é", ""][g.next(4)]), keyJSON: nil, value: nil)
            case 2: batch.addRow(key: .array([.int(Int64(g.next(3))), .null]), keyJSON: nil, value: nil)
            default: batch.addRow(integerKey: Int64(g.next(5)), value: nil)
            }
        }
        assertIndexOrder(long)
        // Short keys, and an ID that others begin with.
        let longID = batch(ids: mixedIDs + [String(repeating: "x", count: 40), String(repeating: "x", count: 39)], seed: 5) { g, batch in
            batch.addRow(integerKey: Int64(g.next(5)), value: nil)
        }
        assertIndexOrder(longID)
    }

    func testIntegerKeysAreTheKeysOfTheirJSONValue() {
        let values: [Int64] = [0, 1, -1, 2, 42, 89, 255, 256, -256, 1 << 20, 123_456_789, 281_474_976_710_656,
                               999_999_999_999_999, -999_999_999_999_999, 4_503_599_627_370_497]
        let b = MappedBatch()
        let id = Array("d".utf8)
        id.withUnsafeBufferPointer { b.beginDocument(id: $0, sequence: 1) }
        for v in values { b.addRow(integerKey: v, value: nil) }
        XCTAssertEqual(b.keys(of: 0), values.map { CollatableKey.encode(.int($0)) })
        XCTAssertEqual(b.rows(of: 0).map { String(decoding: $0.keyJSON, as: UTF8.self) }, values.map { String($0) })
    }
}
