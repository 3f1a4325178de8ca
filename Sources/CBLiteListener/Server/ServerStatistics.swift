import CBLiteCore
import Foundation

/// The listener's share of CouchDB's `/_node/_local/_stats`: the HTTP counters (requests,
/// by method, by status code) and the `request_time` histogram, counted as each answer
/// ends, under CouchDB's names, types and descriptions (couch's stats_descriptions.cfg).
/// Counters count from the listener's start; the histogram covers the last `interval`
/// seconds, as CouchDB's `[stats] interval` (10 s) does. Thread-safe: one lock, held for
/// a few increments per request.
final class ServerStatistics: @unchecked Sendable {
    static let methods = ["COPY", "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"]
    static let statusDescriptions: [(Int, String)] = [
        (200, "OK responses"), (201, "Created responses"), (202, "Accepted responses"),
        (204, "No Content responses"), (206, "Partial Content"), (301, "Moved Permanently responses"),
        (302, "Found responses"), (304, "Not Modified responses"), (400, "Bad Request responses"),
        (401, "Unauthorized responses"), (403, "Forbidden responses"), (404, "Not Found responses"),
        (405, "Method Not Allowed responses"), (406, "Not Acceptable responses"), (409, "Conflict responses"),
        (412, "Precondition Failed responses"), (413, "Request Entity Too Long responses"),
        (414, "Request URI Too Long responses"), (415, "Unsupported Media Type responses"),
        (416, "Requested Range Not Satisfiable responses"), (417, "Expectation Failed responses"),
        (500, "Internal Server Error responses"), (501, "Not Implemented responses"),
        (503, "Service unavailable responses"), (507, "Insufficient Storage responses"),
    ]

    let interval: Double
    /// At most this many request times are kept for the histogram; beyond it the oldest go
    /// first, so memory stays bounded under any load.
    let maxSamples: Int
    private let lock = NSLock()
    private var requests: Int64 = 0
    private var byMethod: [String: Int64] = [:]
    private var byStatus: [Int: Int64] = [:]
    /// (when, milliseconds), oldest first, in a ring.
    private var samples: [(at: Double, ms: Double)] = []
    private var nextSample = 0

    init(interval: Double = 10, maxSamples: Int = 10_000) {
        self.interval = interval
        self.maxSamples = maxSamples
    }

    /// One answered request: its method, status and time from its head to its answer's end.
    func record(method: String, status: Int, milliseconds: Double, now: Double = Date().timeIntervalSince1970) {
        lock.lock()
        defer { lock.unlock() }
        requests += 1
        byMethod[method, default: 0] += 1
        byStatus[status, default: 0] += 1
        if samples.count < maxSamples {
            samples.append((now, milliseconds))
        } else {
            samples[nextSample] = (now, milliseconds)
            nextSample = (nextSample + 1) % maxSamples
        }
    }

    /// The whole tree, `{"couchdb": {...}}`; `openDatabases` is the registry's count.
    func json(openDatabases: Int, now: Double = Date().timeIntervalSince1970) -> JSONValue {
        lock.lock()
        let (requests, byMethod, byStatus) = (self.requests, self.byMethod, self.byStatus)
        let recent = samples.filter { now - $0.at <= interval }.map(\.ms)
        lock.unlock()

        func counter(_ value: Int64, _ desc: String) -> JSONValue {
            .object(JSONObject([("value", .int(value)), ("type", .string("counter")), ("desc", .string(desc))]))
        }
        let methods = JSONObject(Self.methods.map { m in (m, counter(byMethod[m] ?? 0, "number of HTTP \(m) requests")) })
        let codes = JSONObject(Self.statusDescriptions.map { code, text in
            (String(code), counter(byStatus[code] ?? 0, "number of HTTP \(code) \(text)"))
        })
        let httpd = JSONObject([("requests", counter(requests, "number of HTTP requests"))])
        let histogram = JSONValue.object(JSONObject([
            ("value", Self.histogram(recent)), ("type", .string("histogram")),
            ("desc", .string("length of a request inside CouchDB without MochiWeb")),
        ]))
        return .object(JSONObject([("couchdb", .object(JSONObject([
            ("httpd", .object(httpd)),
            ("httpd_request_methods", .object(methods)),
            ("httpd_status_codes", .object(codes)),
            ("open_databases", counter(Int64(openDatabases), "number of open databases")),
            ("request_time", histogram),
        ])))]))
    }

    /// CouchDB's histogram summary of `values` (milliseconds): moments, percentiles, and
    /// the counts in power-of-two buckets ([upper bound, count]); zeros when empty.
    static func histogram(_ values: [Double]) -> JSONValue {
        let sorted = values.sorted()
        let n = Double(sorted.count)
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let rank = max(0, Int((p * n).rounded(.up)) - 1)     // nearest rank
            return sorted[min(sorted.count - 1, rank)]
        }
        var mean = 0.0, geometric = 0.0, harmonic = 0.0, variance = 0.0, skewness = 0.0, kurtosis = 0.0
        if !sorted.isEmpty {
            mean = sorted.reduce(0, +) / n
            let positive = sorted.filter { $0 > 0 }
            if !positive.isEmpty {
                geometric = exp(positive.map(log).reduce(0, +) / Double(positive.count))
                harmonic = Double(positive.count) / positive.map { 1 / $0 }.reduce(0, +)
            }
            if sorted.count > 1 {
                variance = sorted.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / (n - 1)
                let sd = variance.squareRoot()
                if sd > 0 {
                    skewness = sorted.map { pow(($0 - mean) / sd, 3) }.reduce(0, +) / n
                    kurtosis = sorted.map { pow(($0 - mean) / sd, 4) }.reduce(0, +) / n - 3
                }
            }
        }
        var buckets: [(Double, Int64)] = []
        for v in sorted {
            var bound = 1.0
            while bound < v { bound *= 2 }
            if let last = buckets.last, last.0 == bound { buckets[buckets.count - 1].1 += 1 } else { buckets.append((bound, 1)) }
        }
        let percentiles: [(Int, Double)] = [(50, 0.5), (75, 0.75), (90, 0.9), (95, 0.95), (99, 0.99), (999, 0.999)]
        return .object(JSONObject([
            ("n", .int(Int64(sorted.count))),
            ("min", .double(sorted.first ?? 0)),
            ("max", .double(sorted.last ?? 0)),
            ("arithmetic_mean", .double(mean)),
            ("geometric_mean", .double(geometric)),
            ("harmonic_mean", .double(harmonic)),
            ("median", .double(percentile(0.5))),
            ("variance", .double(variance)),
            ("standard_deviation", .double(variance.squareRoot())),
            ("skewness", .double(skewness)),
            ("kurtosis", .double(kurtosis)),
            ("percentile", .array(percentiles.map { .array([.int(Int64($0.0)), .double(percentile($0.1))]) })),
            ("histogram", .array(buckets.isEmpty ? [.array([.int(0), .int(0)])]
                                  : buckets.map { .array([.double($0.0), .int($0.1)]) })),
        ]))
    }

    /// The part of `tree` at `path` (`couchdb/request_time`…); null where nothing is, as
    /// CouchDB answers an unknown statistic (200 null).
    static func select(_ tree: JSONValue, _ path: ArraySlice<String>) -> JSONValue {
        var node = tree
        for name in path {
            guard case .object(let o) = node, let next = o[name] else { return .null }
            node = next
        }
        return node
    }
}
