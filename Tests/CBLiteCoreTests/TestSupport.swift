import XCTest
import Foundation
import Glibc
@testable import CBLiteCore

/// A value shared between threads (and callbacks), guarded by a lock.
final class Locked<T>: @unchecked Sendable {
    private var value: T
    private let lock = NSLock()
    init(_ v: T) { value = v }
    func get() -> T { lock.lock(); defer { lock.unlock() }; return value }
    func set(_ v: T) { lock.lock(); value = v; lock.unlock() }
    @discardableResult
    func with<R>(_ body: (inout T) throws -> R) rethrows -> R {
        lock.lock(); defer { lock.unlock() }
        return try body(&value)
    }
}

/// Polls `done` every `pollMs` ms for at most `seconds`; returns whether it became true.
func eventually(seconds: Double = 5, pollMs: Int = 5, _ done: () -> Bool) -> Bool {
    let deadline = MonotonicTime.now().adding(milliseconds: Int(seconds * 1000))
    while !done() && MonotonicTime.now() < deadline { usleep(useconds_t(pollMs * 1000)) }
    return done()
}

/// Records change observer batches.
final class ChangeRecorder: @unchecked Sendable {
    private let batches = Locked<[[ChangeEvent]]>([])
    var all: [[ChangeEvent]] { batches.get() }
    var events: [ChangeEvent] { batches.get().flatMap { $0 } }
    var batchCount: Int { batches.get().count }
    func record(_ b: [ChangeEvent]) { batches.with { $0.append(b) } }
    var callback: ([ChangeEvent]) -> Void { { [self] in self.record($0) } }
}

/// Runs `body(i)` on `count` new threads at once and waits for all of them.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchSemaphore(value: 0)
    for i in 0..<count {
        let t = Thread {
            body(i)
            done.signal()
        }
        t.stackSize = 1 << 22
        t.start()
    }
    for _ in 0..<count { done.wait() }
}

/// Asserts that `expr` throws a CBLError with `status`; returns the error.
@discardableResult
func assertStatus<T>(_ status: Status, _ expr: @autoclosure () throws -> T, _ message: String = "",
                     file: StaticString = #filePath, line: UInt = #line) -> CBLError? {
    do {
        _ = try expr()
        XCTFail("expected \(status.rawValue) \(status.name), but the call succeeded. \(message)", file: file, line: line)
        return nil
    } catch let e as CBLError {
        XCTAssertEqual(e.status, status, "got \(e) \(message)", file: file, line: line)
        return e
    } catch {
        XCTFail("expected CBLError \(status.rawValue), got \(error) \(message)", file: file, line: line)
        return nil
    }
}

/// Parses JSON bytes (a document as returned by the engine) into an object.
func obj(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> JSONObject {
    do {
        guard case .object(let o) = try JSONParser.parse(String(decoding: bytes, as: UTF8.self)) else {
            XCTFail("not a JSON object", file: file, line: line)
            return JSONObject()
        }
        return o
    } catch {
        XCTFail("unparseable JSON: \(error)", file: file, line: line)
        return JSONObject()
    }
}

func obj(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> JSONObject {
    obj(Array(text.utf8), file: file, line: line)
}

func jsonValue(_ text: String) throws -> JSONValue { try JSONParser.parse(text) }

extension Collection {
    /// putExisting with a String body.
    @discardableResult
    func putExisting(docID: String, json: String, history: [String]) throws -> Bool {
        var s = json
        return try s.withUTF8 { try putExisting(docID: docID, body: $0, history: history) }
    }

    /// The current document as an object (nil when absent/deleted).
    func doc(_ id: String, _ options: GetOptions = []) throws -> JSONObject {
        obj(try get(docID: id, options: options))
    }
}

/// Base class: a fresh temporary directory per test, removed in tearDown, and helpers
/// to open databases in it (every handle opened through `open` is closed in tearDown).
class CBLTestCase: XCTestCase {
    var dir = ""
    private var handles: [Database] = []

    override func setUp() {
        super.setUp()
        var template = Array("/tmp/cblite-tests-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { p -> Bool in mkdtemp(p.baseAddress!) != nil }
        precondition(made, "mkdtemp failed")
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        dir = (try? FileSystem.realPath(path)) ?? path
    }

    override func tearDown() {
        for h in handles where !h.isClosed {
            if (try? h.close()) == nil {
                try? h.abort()
                try? h.close()
            }
        }
        handles.removeAll()
        if !dir.isEmpty { try? FileManager.default.removeItem(atPath: dir) }
        super.tearDown()
    }

    func open(_ name: String = "db", options: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> Database {
        let db = try Database.open(name: name, directory: dir, options: OpenOptions(json: options))
        handles.append(db)
        return db
    }

    /// Asserts the engine's integrity check finds nothing.
    func assertSound(_ db: Database, file: StaticString = #filePath, line: UInt = #line) {
        do {
            let problems = try db.integrityCheck()
            XCTAssertEqual(problems, [], "integrity check", file: file, line: line)
        } catch {
            XCTFail("integrityCheck threw \(error)", file: file, line: line)
        }
    }
}

/// A test case with a fresh database and its default collection per test.
class CBLCollectionTestCase: CBLTestCase {
    var db: Database!
    var coll: Collection!

    override func setUp() {
        super.setUp()
        db = try! open()
        coll = try! db.defaultCollection()
    }

    override func tearDown() {
        db = nil
        coll = nil
        super.tearDown()
    }
}

/// Every byte of the files under `path` (subfolders too), for tests that look for
/// plaintext on disk.
func allBytes(under path: String) throws -> [UInt8] {
    var out: [UInt8] = []
    for name in try FileSystem.list(path) {
        let p = path + "/" + name
        if FileSystem.isDirectory(p) { out += try allBytes(under: p); continue }
        let fd = Glibc.open(p, O_RDONLY)
        defer { close(fd) }
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out += buf[0..<n]
        }
    }
    return out
}
