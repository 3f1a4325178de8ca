import CBLiteCore

/// CouchDB's UUID algorithms for `/_uuids` and the IDs of documents POSTed without one
/// (its `[uuids] algorithm` setting, here the configuration's "uuids"):
///   random      32 random hex digits;
///   sequential  (CouchDB's default) a random 26-digit prefix and a 6-digit counter that
///               grows by a random step, so IDs made together sort together (kind to
///               b-trees), with a new prefix when the counter would overflow;
///   utc_random  14 hex digits of microseconds since 1970, then 18 random ones;
///   utc_id      the same 14 digits, then a configured suffix.
/// Thread-safe.
final class UUIDGenerator: @unchecked Sendable {
    enum Algorithm: String, Sendable, CaseIterable { case random, sequential, utc_random, utc_id }

    private let lock = Monitor()
    private var algorithm: Algorithm
    private var utcIDSuffix: String
    private var prefix = ""
    private var counter: UInt32 = 0

    init(algorithm: Algorithm = .sequential, utcIDSuffix: String = "") {
        self.algorithm = algorithm
        self.utcIDSuffix = utcIDSuffix
    }

    /// Changes the algorithm (`_config`'s uuids section); nil leaves a part as it is.
    func configure(algorithm: Algorithm? = nil, utcIDSuffix: String? = nil) {
        lock.locked {
            if let algorithm { self.algorithm = algorithm }
            if let utcIDSuffix { self.utcIDSuffix = utcIDSuffix }
        }
    }

    func next() -> String {
        lock.locked {
            switch algorithm {
            case .random:
                return randomHex(32)
            case .sequential:
                let step = UInt32.random(in: 1...0xFFE)
                if prefix.isEmpty || counter + step > 0xFFF000 {
                    prefix = randomHex(26)
                    counter = UInt32.random(in: 0...0xFFF)
                } else {
                    counter += step
                }
                return prefix + hex(UInt64(counter), digits: 6)
            case .utc_random:
                return hex(UInt64(unixTimeMicrosNow()), digits: 14) + randomHex(18)
            case .utc_id:
                return hex(UInt64(unixTimeMicrosNow()), digits: 14) + utcIDSuffix
            }
        }
    }

    private func randomHex(_ digits: Int) -> String { String(Listener.randomHex((digits + 1) / 2).prefix(digits)) }

    private func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
