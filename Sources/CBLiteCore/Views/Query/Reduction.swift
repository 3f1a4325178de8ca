/// Reduces a stream of rows into one value without holding them all: built-in reducers
/// accumulate natively; a custom reducer, and `_sum`, are called on chunks of `chunkSize`
/// rows and their partial results are re-reduced (rereduce = true), so memory stays
/// bounded by the chunk size however many rows the range holds.
///
/// `_sum` folds each chunk, then the chunks' sums, newest first: CouchDB's B-tree gathers
/// a group's rows by prepending them (couch_btree:reduce_stream_kv_node2), so its reduce
/// meets them in the reverse of the query's order — which decides the error a bad value
/// gives (CouchDB's replay names the last row's value) and whether objects mix.
final class Reduction {
    private let reducer: Reducer
    private let chunkSize: Int
    private(set) var rowCount: Int64 = 0

    // built-ins
    private var count: Int64 = 0
    private var stats = Stats()
    private var sumChunk = ValueChunk()       // _sum: the chunk's values, not yet added
    private var sumPartials: [JSONValue] = [] // _sum: the sums of the chunks before, oldest first
    private var distinct = HyperLogLog()      // _approx_count_distinct, over the keys

    // custom
    private var keys: [[UInt8]] = []
    private var values: [[UInt8]] = []
    private var partials: [[UInt8]] = []

    /// Rows per reduce call (tests lower it to see rereduce at work).
    nonisolated(unsafe) static var defaultChunkSize = 256

    init(_ reducer: Reducer, chunkSize: Int = Reduction.defaultChunkSize) {
        self.reducer = reducer
        self.chunkSize = max(2, chunkSize)
    }

    /// Adds a row (its key and value as JSON text; value nil when none was emitted; the
    /// ID of the document that emitted it, which CouchDB's reduce sees).
    func add(key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>?, docID: UnsafeBufferPointer<UInt8>?) throws {
        rowCount += 1
        switch reducer {
        case .count:
            count += 1
        case .sum:
            sumChunk.append(value)
            if sumChunk.count >= chunkSize {
                sumPartials.append(try sumOfChunk())
                if sumPartials.count >= chunkSize { sumPartials = [CouchSum.fold(sumPartials.reversed())] }
            }
        case .stats:
            guard let n = Num(try parse(value)) else { throw CBLError.badRequest("the _stats reducer needs numbers") }
            stats.add(n)
        case .approxCountDistinct:
            distinct.add(key)
        case .custom(let fn), .couch(let fn):
            if case .couch = reducer {
                var w = JSONWriter(capacity: key.count + (docID?.count ?? 4) + 4)
                w.append("[")
                w.appendRaw(key)
                w.append(",")
                if let docID { w.writeString(utf8: docID) } else { w.append("null") }
                w.append("]")
                keys.append(w.bytes)
            } else {
                keys.append(Array(key))
            }
            values.append(value.map { Array($0) } ?? Array("null".utf8))
            if keys.count >= chunkSize {
                partials.append(try fn(keys, values, false))
                keys.removeAll(keepingCapacity: true)
                values.removeAll(keepingCapacity: true)
                if partials.count >= chunkSize {
                    partials = [try fn(nil, partials, true)]
                }
            }
        }
    }

    /// The reduced value as JSON.
    func finish() throws -> [UInt8] {
        switch reducer {
        case .count:
            return Array(String(count).utf8)
        case .sum:
            if sumPartials.isEmpty { return Collation.compactJSON(try sumOfChunk()) }
            if sumChunk.count > 0 { sumPartials.append(try sumOfChunk()) }
            return Collation.compactJSON(CouchSum.fold(sumPartials.reversed()))
        case .stats:
            return Collation.compactJSON(stats.value)
        case .approxCountDistinct:
            return Array(String(distinct.count).utf8)
        case .custom(let fn):
            if partials.isEmpty { return try fn(keys, values, false) }
            if !keys.isEmpty { partials.append(try fn(keys, values, false)) }
            keys.removeAll()
            values.removeAll()
            if partials.count == 1 { return partials[0] }
            return try fn(nil, partials, true)
        case .couch(let fn):
            if !keys.isEmpty || partials.isEmpty { partials.append(try fn(keys, values, false)) }
            keys.removeAll()
            values.removeAll()
            return try fn(nil, partials, true)
        }
    }

    /// The chunk's values added last to first (CouchDB's order); the chunk is emptied.
    private func sumOfChunk() throws -> JSONValue {
        defer { sumChunk.removeAll() }
        return CouchSum.fold(try sumChunk.parsedReversed())
    }

    private func parse(_ value: UnsafeBufferPointer<UInt8>?) throws -> JSONValue {
        guard let value else { return .null }
        return try JSONParser.parse(bytes: value)
    }
}
