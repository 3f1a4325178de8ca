import CBLiteCore

/// CouchDB's made-up ETags (couch_httpd:make_etag): the MD5 of what the answer depends on,
/// as a base-36 number in capitals, quoted — the form `_changes` answers carry.
enum CouchETag {
    static func make(_ parts: [String]) -> String {
        "\"" + base36(MD5.hash(Array(parts.joined(separator: "\n").utf8))) + "\""
    }

    /// A big-endian unsigned number in base 36 (no leading zeros; "0" for zero).
    static func base36(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        var n = bytes
        var out: [UInt8] = []
        while n.contains(where: { $0 != 0 }) {
            var rest = 0
            for i in n.indices {                 // long division by 36, most significant first
                let v = rest * 256 + Int(n[i])
                n[i] = UInt8(v / 36)
                rest = v % 36
            }
            out.append(digits[rest])
        }
        return out.isEmpty ? "0" : String(decoding: out.reversed(), as: UTF8.self)
    }
}
