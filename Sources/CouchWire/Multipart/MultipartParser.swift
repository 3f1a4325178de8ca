/// An incremental multipart (RFC 2046) parser: bytes go in as they arrive, events come
/// out, and only a delimiter's length of content is held back, so a part of any size
/// passes in bounded memory. Accepts what CouchDB writes: a preamble (CouchDB's
/// `_bulk_get` starts with CRLF), boundaries that begin with "--", and a closing
/// delimiter with or without a CRLF after it.
public struct MultipartParser {
    public enum Event: Equatable {
        case partBegin(PartHeaders)
        case body([UInt8])
        case partEnd
        case end
    }

    private enum State { case preamble, afterDelimiter, headers, body, epilogue }

    private let dashBoundary: [UInt8]        // "--" + boundary
    private let delimiter: [UInt8]           // CRLF "--" boundary
    private let maxHeaderBytes: Int
    private var state = State.preamble
    private var buffer: [UInt8] = []
    private var position = 0
    private var skippedPreamble = false      // a bare "--boundary" only counts at the very start

    public init(boundary: String, maxHeaderBytes: Int = 16 * 1024) throws {
        guard !boundary.isEmpty, boundary.utf8.count <= 200 else {
            throw MultipartError.malformed("boundary must be 1 to 200 characters")
        }
        dashBoundary = Array("--\(boundary)".utf8)
        delimiter = Array("\r\n--\(boundary)".utf8)
        self.maxHeaderBytes = maxHeaderBytes
    }

    /// Whether the closing delimiter has been seen.
    public var isComplete: Bool { state == .epilogue }

    public mutating func feed<C: Swift.Collection>(_ bytes: C) throws -> [Event] where C.Element == UInt8 {
        if state == .epilogue { return [] }           // the epilogue is ignored
        buffer.append(contentsOf: bytes)
        var events: [Event] = []
        loop: while true {
            switch state {
            case .preamble:
                // The first delimiter may open the body (no CRLF before it) or follow a preamble.
                if !skippedPreamble && ByteSearch.hasPrefix(buffer, at: position, dashBoundary) {
                    position += dashBoundary.count
                    state = .afterDelimiter
                } else if let i = ByteSearch.find(delimiter, in: buffer, from: position) {
                    position = i + delimiter.count
                    state = .afterDelimiter
                } else {
                    // Keep what could still be the start of a delimiter.
                    let keep = min(buffer.count - position, delimiter.count - 1)
                    if buffer.count - keep > position { skippedPreamble = true }
                    position = buffer.count - keep
                    break loop
                }
            case .afterDelimiter:
                // "--" closes; otherwise optional transport padding, then CRLF.
                var i = position
                guard i + 2 <= buffer.count else { break loop }
                if buffer[i] == UInt8(ascii: "-") && buffer[i + 1] == UInt8(ascii: "-") {
                    state = .epilogue
                    events.append(.end)
                    buffer = []
                    position = 0
                    return events
                }
                while i < buffer.count && (buffer[i] == UInt8(ascii: " ") || buffer[i] == UInt8(ascii: "\t")) { i += 1 }
                guard i + 2 <= buffer.count else { break loop }
                guard buffer[i] == 13 && buffer[i + 1] == 10 else {
                    throw MultipartError.malformed("a boundary delimiter must be followed by CRLF or \"--\"")
                }
                position = i + 2
                state = .headers
            case .headers:
                if ByteSearch.hasPrefix(buffer, at: position, [13, 10]) {
                    position += 2                       // a part without headers
                    events.append(.partBegin(PartHeaders()))
                    state = .body
                } else if let end = ByteSearch.find([13, 10, 13, 10], in: buffer, from: position) {
                    guard end - position <= maxHeaderBytes else { throw MultipartError.tooLarge("part headers exceed \(maxHeaderBytes) bytes") }
                    events.append(.partBegin(try PartHeaders.parse(buffer[position..<end])))
                    position = end + 4
                    state = .body
                } else {
                    guard buffer.count - position <= maxHeaderBytes else { throw MultipartError.tooLarge("part headers exceed \(maxHeaderBytes) bytes") }
                    break loop
                }
            case .body:
                if let i = ByteSearch.find(delimiter, in: buffer, from: position) {
                    if i > position { events.append(.body(Array(buffer[position..<i]))) }
                    events.append(.partEnd)
                    position = i + delimiter.count
                    state = .afterDelimiter
                } else {
                    let safeEnd = max(position, buffer.count - (delimiter.count - 1))
                    if safeEnd > position { events.append(.body(Array(buffer[position..<safeEnd]))) }
                    position = safeEnd
                    break loop
                }
            case .epilogue:
                break loop
            }
        }
        // Drop consumed bytes so the buffer stays small.
        if position > 0 {
            buffer.removeFirst(position)
            position = 0
        }
        return events
    }

    /// Call at the end of the input: a body that never closed is malformed.
    public func finish() throws {
        guard state == .epilogue else { throw MultipartError.malformed("the body ended before the closing boundary") }
    }
}
