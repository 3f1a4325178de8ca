/// The headers of one MIME part, in order, looked up case-insensitively.
public struct PartHeaders: Sendable, Equatable {
    public var fields: [(name: String, value: String)]

    public init(_ fields: [(name: String, value: String)] = []) { self.fields = fields }

    public static func == (a: PartHeaders, b: PartHeaders) -> Bool {
        a.fields.elementsEqual(b.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    public subscript(name: String) -> String? {
        let lower = name.lowercased()
        return fields.first { $0.name.lowercased() == lower }?.value
    }

    public var contentType: MediaType? { self["Content-Type"].flatMap(MediaType.init) }

    /// `filename` of `Content-Disposition: attachment; filename="x"`.
    public var filename: String? {
        guard let d = self["Content-Disposition"] else { return nil }
        return MediaType("x/" + d)?.parameter("filename")
    }

    /// Parses "Name: value" lines separated by CRLF (obsolete line folding is refused).
    static func parse(_ bytes: ArraySlice<UInt8>) throws -> PartHeaders {
        var fields: [(String, String)] = []
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw MultipartError.malformed("part headers are not UTF-8")
        }
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: true) {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw MultipartError.malformed("malformed part header line")
            }
            if line.first == " " || line.first == "\t" { throw MultipartError.malformed("folded part header lines are not supported") }
            fields.append((String(line[..<colon]).trimmingSpaces, String(line[line.index(after: colon)...]).trimmingSpaces))
        }
        return PartHeaders(fields)
    }
}

public enum MultipartError: Error, Equatable, CustomStringConvertible {
    case malformed(String)
    case tooLarge(String)

    public var description: String {
        switch self {
        case .malformed(let m): return "malformed multipart body: \(m)"
        case .tooLarge(let m): return "multipart body too large: \(m)"
        }
    }
}
