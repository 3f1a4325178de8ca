import CICU

/// A `$regex` pattern compiled by ICU's regular expressions (CouchDB uses PCRE; the
/// common syntax is the same). A match is an unanchored search, as `re:run` does. ICU
/// expressions are used by one thread at a time: a lock serves selectors shared by
/// threads (a partial index's filter during concurrent updates).
final class MangoRegex: @unchecked Sendable {
    private let re: OpaquePointer
    private let lock = Monitor()

    init?(_ pattern: String) {
        let units = Array(pattern.utf16)
        guard let r = units.withUnsafeBufferPointer({ cblite_uregex_open($0.baseAddress, Int32($0.count)) }) else { return nil }
        re = r
    }

    deinit { cblite_uregex_close(re) }

    func search(_ s: String) -> Bool {
        let units = Array(s.utf16)
        return lock.locked {
            units.withUnsafeBufferPointer { cblite_uregex_search(re, $0.baseAddress, Int32($0.count)) != 0 }
        }
    }
}
