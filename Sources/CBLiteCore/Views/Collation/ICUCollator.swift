import CICU
import Glibc

/// ICU's root collator (tertiary strength), opened once. ICU collators are thread-safe
/// for comparisons (const use since ICU 53).
final class ICU: @unchecked Sendable {
    static let shared = ICU()
    let collator: OpaquePointer?

    private init() {
        var status: Int32 = 0
        collator = cblite_ucol_open_root(&status)
        if status > 0 || collator == nil {
            Loggers.database.error("ICU collator could not be opened (status \(status)); strings compare by code point")
        }
    }

    /// ucol_strcoll on UTF-8 (the order sort keys must reproduce; tests hold them to it).
    func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        guard let collator else { return CollatableKey.compare(a, b) }
        let empty: [CChar] = [0]
        return empty.withUnsafeBufferPointer { e in
            let pa = a.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) } ?? e.baseAddress!
            let pb = b.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) } ?? e.baseAddress!
            return Int(cblite_ucol_strcoll_utf8(collator, pa, Int32(a.count), pb, Int32(b.count)))
        }
    }

    static var version: String { String(cString: cblite_icu_version()) }

    /// The collator's version as text ("153.120.0.0"); "none" without ICU.
    var collatorVersion: String {
        guard let collator else { return "none" }
        return Self.dotted(collator, cblite_ucol_version)
    }

    /// The Unicode Collation Algorithm's version ("15.0.0.0"); "none" without ICU.
    var collationAlgorithmVersion: String {
        guard let collator else { return "none" }
        return Self.dotted(collator, cblite_uca_version)
    }

    /// ICU's four version bytes as "a.b.c.d".
    private static func dotted(_ collator: OpaquePointer,
                               _ read: (OpaquePointer, UnsafeMutablePointer<UInt8>) -> Void) -> String {
        var v: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &v) { read(collator, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        return "\(v.0).\(v.1).\(v.2).\(v.3)"
    }

    /// Appends the sort key of `s` (ending with its 0 byte). Without ICU, the UTF-8 bytes
    /// shifted up by one, then 0: code point order.
    func appendSortKey(_ s: String, to out: inout [UInt8]) {
        guard let collator else {
            for c in s.utf8 { out.append(c + 1) }      // UTF-8 has no 0xFF byte
            out.append(0)
            return
        }
        var units = Array(s.utf16)
        if units.isEmpty { units.reserveCapacity(1) }
        units.withUnsafeBufferPointer { u in
            var capacity = max(32, u.count * 4 + 16)
            while true {
                let start = out.count
                out.append(contentsOf: repeatElement(0, count: capacity))
                let n = out.withUnsafeMutableBufferPointer { o in
                    Int(cblite_ucol_sort_key(collator, u.baseAddress, Int32(u.count), o.baseAddress! + start, Int32(capacity)))
                }
                if n <= 0 {                                   // an ICU error: the empty key
                    out.removeSubrange(start...)
                    out.append(0)
                    return
                }
                if n <= capacity {
                    out.removeSubrange((start + n)...)
                    return
                }
                out.removeSubrange(start...)
                capacity = n
            }
        }
    }
}
