import CBLiteBase

/// Writes multipart bodies the way CouchDB does: `--b CRLF headers CRLF CRLF content`,
/// parts separated by `CRLF --b CRLF`, closed by `CRLF --b--` with no CRLF after it.
/// Produces bytes piecewise so content can be streamed between the pieces.
public struct MultipartWriter: Sendable {
    public let boundary: String
    public private(set) var partsWritten = 0

    public init(boundary: String = MultipartWriter.randomBoundary()) { self.boundary = boundary }

    /// 32 random hex digits, as CouchDB's boundaries.
    public static func randomBoundary() -> String {
        var g = SystemRandomNumberGenerator()
        return Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &g) })
    }

    /// `multipart/<subtype>; boundary="..."`.
    public func contentType(_ subtype: String) -> String { "multipart/\(subtype); boundary=\"\(boundary)\"" }

    /// The delimiter and headers that begin the next part; its content follows.
    public mutating func beginPart(_ headers: [(String, String)]) -> [UInt8] {
        var s = partsWritten == 0 ? "--\(boundary)\r\n" : "\r\n--\(boundary)\r\n"
        for (n, v) in headers { s += "\(n): \(v)\r\n" }
        s += "\r\n"
        partsWritten += 1
        return Array(s.utf8)
    }

    /// The closing delimiter (an empty body is just the closing delimiter).
    public func close() -> [UInt8] {
        Array((partsWritten == 0 ? "--\(boundary)--" : "\r\n--\(boundary)--").utf8)
    }

    /// A whole part in one piece (small JSON parts).
    public mutating func part(_ headers: [(String, String)], _ content: [UInt8]) -> [UInt8] {
        beginPart(headers) + content
    }
}
