import Glibc
import CBLiteCore
import CouchWire

/// A request body as a worker thread reads it: the event loop appends chunks as they
/// arrive and the worker takes them, blocking while none is there. The event loop stops
/// reading from the socket while more than `highWater` bytes wait, so a body of any size
/// passes in bounded memory.
final class RequestBody: @unchecked Sendable {
    enum Failure: Error { case connectionClosed, tooLarge(Int) }

    static let highWater = 1 << 20

    private let condition = Monitor()
    private var chunks: [[UInt8]] = []
    private var buffered = 0
    private var received = 0
    private var finished = false
    private var failure: Failure?
    private let maxBytes: Int
    /// When the head arrived and when the body's end did: `X-CouchDB-Body-Time`.
    private let startedAt = MonotonicTime.now()
    private var finishedAt: MonotonicTime?
    /// Decodes a `Content-Encoding: gzip` body for the worker (CouchDB accepts those).
    private let inflater: GzipInflater?
    /// Called (from the worker) when the buffer drains, so the event loop reads again.
    var onDrained: (() -> Void)?

    init(maxBytes: Int, gzip: Bool = false) throws {
        self.maxBytes = maxBytes
        inflater = gzip ? try GzipInflater(maxOutput: maxBytes.multipliedReportingOverflow(by: 16).overflow ? Int.max : maxBytes * 16) : nil
    }

    // MARK: event-loop side

    /// Returns false when the body exceeds the limit (the chunk is dropped).
    func append(_ bytes: [UInt8]) -> Bool {
        condition.locked {
            received += bytes.count
            if received > maxBytes {
                failure = failure ?? .tooLarge(maxBytes)
                condition.broadcast()
                return false
            }
            chunks.append(bytes)
            buffered += bytes.count
            condition.broadcast()
            return true
        }
    }

    func finish() { condition.locked { finished = true; finishedAt = MonotonicTime.now(); condition.broadcast() } }

    /// Milliseconds from the request's head to its body's end (so far, while it arrives).
    var receivingMs: Int {
        let end = condition.locked { finishedAt } ?? MonotonicTime.now()
        return Int((end.nanoseconds - startedAt.nanoseconds) / 1_000_000)
    }

    func fail(_ f: Failure) { condition.locked { if failure == nil && !finished { failure = f }; condition.broadcast() } }

    /// Nothing more is read from the socket until the request is authorized (Router.handle
    /// calls `release`): a client who may not write sends no more than one read's worth.
    private var held = true

    var isFull: Bool { condition.locked { held || buffered >= RequestBody.highWater } }

    /// Lets the event loop read the rest. A body already complete has nothing left to read
    /// (a read deferred meanwhile resumes when the response ends): no wake-up of the loop.
    func release() {
        guard condition.locked({ defer { held = false }; return held && !finished }) else { return }
        onDrained?()
    }
    var isComplete: Bool { condition.locked { finished } }

    // MARK: worker side

    /// The next chunk, nil at the end of the body. Throws 413 past the limit, or when the
    /// client went away. A gzip body comes decoded, in pieces of at most 64 KiB, so a bomb
    /// never inflates in memory at once.
    func next() throws -> [UInt8]? {
        guard let inflater else { return try nextRaw() }
        while true {
            if let piece = try inflater.next() { return piece }
            guard let raw = try nextRaw() else { break }
            try inflater.feed(raw)
        }
        try inflater.finish()
        return nil
    }

    private func nextRaw() throws -> [UInt8]? {
        let (chunk, drained): ([UInt8]?, Bool) = try condition.locked {
            while true {
                if let failure { throw RequestBody.error(failure) }
                if !chunks.isEmpty {
                    let c = chunks.removeFirst()
                    let wasFull = buffered >= RequestBody.highWater
                    buffered -= c.count
                    return (c, wasFull && buffered < RequestBody.highWater)
                }
                if finished { return (nil, false) }
                condition.wait()
            }
        }
        if drained { onDrained?() }
        return chunk
    }

    /// Bodies this large give their memory back to the system once read (readAll).
    static let trimThreshold = 8 << 20

    /// glibc's malloc_trim, looked up at run time (Swift's Glibc module does not export
    /// <malloc.h>; another C library simply has none and nothing is trimmed).
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()

    /// The whole body, at most `limit` bytes (413 beyond). Chunks are joined once at the
    /// end: growing one array by doubling would hold up to three times the limit at once
    /// while a (gzip) body runs up to it.
    func readAll(limit: Int? = nil) throws -> [UInt8] {
        var chunks: [[UInt8]] = []
        var total = 0
        defer {
            // A large body (a gzip bomb refused at the limit among them) leaves its pieces
            // free in the malloc arenas of the threads that read it, where glibc keeps them:
            // hand them back to the system, so one such request does not raise the process's
            // memory for good.
            if total >= RequestBody.trimThreshold {
                chunks = []
                _ = RequestBody.mallocTrim?(0)
            }
        }
        while let c = try next() {
            total += c.count
            if let limit, total > limit { throw CouchError.tooLarge("the request body exceeds \(limit) bytes") }
            chunks.append(c)
        }
        if chunks.count == 1 { return chunks[0] }
        var out: [UInt8] = []
        out.reserveCapacity(total)
        for c in chunks { out += c }
        return out
    }

    private static func error(_ f: Failure) -> any Error {
        switch f {
        case .connectionClosed: return CouchError(status: 400, error: "bad_request", reason: "the client closed the connection")
        case .tooLarge(let n): return CouchError.tooLarge("the request body exceeds \(n) bytes")
        }
    }
}
