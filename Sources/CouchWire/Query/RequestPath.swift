import CBLiteBase

/// A request path split into CouchDB's parts. Segments are split on '/' before they are
/// percent-decoded, so "%2F" in a database name or document ID stays part of it; the
/// `_design/` and `_local/` prefixes keep their document IDs whole (CouchDB accepts
/// `_design/x` both with '/' and "%2F").
public struct RequestPath: Equatable, Sendable {
    public let segments: [String]
    public let query: String

    /// `target` is the request target: "/db/doc?x=1". 400 for a malformed escape. A '+' is
    /// a space when `plusAsSpace` (CouchDB 3.5's default, `[chttpd] decode_plus_to_space`).
    public init(target: String, plusAsSpace: Bool = true) throws {
        let bytes = Array(target.utf8)
        let q = bytes.firstIndex(of: UInt8(ascii: "?"))
        let pathBytes = q.map { bytes[..<$0] } ?? bytes[...]
        query = q.map { String(decoding: bytes[($0 + 1)...], as: UTF8.self) } ?? ""
        guard pathBytes.first == UInt8(ascii: "/") else { throw CBLError(.badRequest, "the request target must be an absolute path") }
        var segs: [String] = []
        for raw in pathBytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            guard let s = PercentDecoding.decode(raw, plusAsSpace: plusAsSpace) else {
                throw CBLError(.badRequest, "malformed percent-escape in the path")
            }
            segs.append(s)
        }
        // Re-join "_design/x" and "_local/x" after a database name (not after a server
        // endpoint such as `/_node/_local/_config`; `_replicator` and `_users` are databases).
        if segs.count >= 3 && (segs[1] == "_design" || segs[1] == "_local")
            && (!segs[0].hasPrefix("_") || segs[0] == "_replicator" || segs[0] == "_users") {
            segs = [segs[0], segs[1] + "/" + segs[2]] + segs[3...]
        }
        segments = segs
    }
}
