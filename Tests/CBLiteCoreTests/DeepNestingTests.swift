import Dispatch
import XCTest
@testable import CBLiteCore

/// Deep documents: the nesting limit (JSONParser.maxDepth), and the stack each recursive
/// consumer of a document costs per level, measured on a thread of our own (StackProbe)
/// and held within the budget the limit was chosen for.
final class DeepNestingTests: XCTestCase {
    private static func arrays(_ n: Int) -> String { String(repeating: "[", count: n) + String(repeating: "]", count: n) }
    private static func objects(_ n: Int) -> String {
        String(repeating: #"{"a":"#, count: n) + "1" + String(repeating: "}", count: n)
    }

    /// Holds a value so that a probe's thread, not the caller's, releases it.
    private final class Box: @unchecked Sendable {
        var value: JSONValue?
        init(_ value: JSONValue) { self.value = value }
    }

    /// Every recursive consumer of a JSON value or text, on input of `depth` levels.
    private static func consumers(depth: Int, objects useObjects: Bool) throws -> [(String, () -> Void)] {
        let text = useObjects ? objects(depth) : arrays(depth)
        let value = try JSONParser.parse(text)
        let twin = try JSONParser.parse(text)
        let key = CollatableKey.encode(value)
        let dropped = Box(try JSONParser.parse(text))
        return [
            ("JSONParser.parse", { _ = try? JSONParser.parse(text) }),
            ("JSONCanonicalizer.canonicalize", {
                var t = text
                _ = t.withUTF8 { try? JSONCanonicalizer.canonicalize($0) }
            }),
            ("JSONCanonicalizer.canonicalizeObject", {
                var t = #"{"k":"# + text + "}"
                _ = t.withUTF8 { try? JSONCanonicalizer.canonicalizeObject($0) { _, _ in true } }
            }),
            ("JSONWriter.canonical", { _ = JSONWriter.canonical(value) }),
            ("JSONWriter.ordered", { _ = JSONWriter.ordered(value) }),
            ("JSONValue ==", { _ = value == twin }),
            ("JSONValue deinit", { dropped.value = nil }),
            ("CollatableKey.encode", { _ = CollatableKey.encode(value) }),
            ("CollatableKey.compare", { _ = CollatableKey.compare(key, key) }),
            ("CollatableKey.appendJSON", {
                var w = JSONWriter()
                _ = key.withUnsafeBufferPointer { CollatableKey.appendJSON($0, to: &w) }
            }),
            ("CollatableKey.needsCollator", { _ = CollatableKey.needsCollator(value) }),
            ("CollatableKey.jsonIsRecoverable", { _ = CollatableKey.jsonIsRecoverable(value) }),
        ]
    }

    /// Stack bytes per nesting level of every consumer, from two depths' measurements.
    private static func costPerLevel(objects: Bool) throws -> [(String, Double)] {
        let low = 100, high = JSONParser.maxDepth
        let a = try consumers(depth: low, objects: objects), b = try consumers(depth: high, objects: objects)
        return zip(a, b).map { x, y in
            let used = (StackProbe.bytesUsed(x.1), StackProbe.bytesUsed(y.1))
            return (x.0, Double(used.1 - used.0) / Double(high - low))
        }
    }

    /// The stack every consumer may use at the limit: 7 MiB of the 8 MiB glibc gives
    /// every thread by default, with 1 MiB left for its callers (JSONParser.maxDepth).
    private static let stackBudget = 7 << 20

    /// At the limit, every consumer fits in `stackBudget` — measured in this build (a
    /// debug build's frames are the largest) — and prints what a level costs.
    func testEveryConsumerFitsTheStackBudgetAtTheLimit() throws {
        for useObjects in [false, true] {
            for (name, body) in try Self.consumers(depth: JSONParser.maxDepth, objects: useObjects) {
                let used = StackProbe.bytesUsed(body)
                XCTAssertLessThan(used, Self.stackBudget, "\(name) (\(useObjects ? "objects" : "arrays")) used \(used) bytes")
            }
            for (name, perLevel) in try Self.costPerLevel(objects: useObjects) {
                print("stack per level, \(useObjects ? "objects" : "arrays"): \(name) \(Int(perLevel)) bytes")
            }
        }
    }

    /// The threads the library runs code on (this one, as a caller's; Dispatch's workers;
    /// the listener's event loops: CBLiteListenerTests' deep document) have at least the
    /// budget, and every consumer runs there at the limit.
    func testEveryConsumerRunsAtTheLimitOnTheLibrarysThreads() throws {
        XCTAssertGreaterThanOrEqual(StackProbe.currentThreadStackSize(), Self.stackBudget)
        for (_, body) in try Self.consumers(depth: JSONParser.maxDepth, objects: true) { body() }
        let done = expectation(description: "worker")
        let work = try Self.consumers(depth: JSONParser.maxDepth, objects: true)
        nonisolated(unsafe) let bodies = work.map(\.1)
        DispatchQueue.global().async {
            XCTAssertGreaterThanOrEqual(StackProbe.currentThreadStackSize(), Self.stackBudget)
            for body in bodies { body() }
            done.fulfill()
        }
        wait(for: [done], timeout: 60)
    }
}
