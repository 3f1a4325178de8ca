import CBLiteCore
import Glibc
import XCTest

/// A deliberately small HTTP/1.1 client over a raw socket: the tests control every byte
/// (malformed requests, slow headers, bodies that never come) and see every byte back.
final class TestHTTPClient {
    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        func header(_ n: String) -> String? { headers.first { $0.0.lowercased() == n.lowercased() }?.1 }
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: JSONValue? { body.withUnsafeBufferPointer { try? JSONParser.parse(bytes: $0) } }
        var object: JSONObject { json?.objectValue ?? JSONObject() }
    }

    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, timeoutSeconds: Int = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { close(fd); throw CBLError(.internalError, "connect failed: \(errno)") }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            off += n
        }
    }

    func send(_ s: String) { send(Array(s.utf8)) }

    /// Half-closes: the server sees the end of the request stream.
    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Sends a request; `body` with a Content-Length unless `headers` say otherwise.
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) throws -> Response {
        var h = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (n, v) in headers { h += "\(n): \(v)\r\n" }
        if let body, !headers.contains(where: { $0.0.lowercased() == "content-length" || $0.0.lowercased() == "transfer-encoding" }) {
            h += "Content-Length: \(body.count)\r\n"
        }
        h += "\r\n"
        send(Array(h.utf8) + (body ?? []))
        return try readResponse(head: method == "HEAD")
    }

    func json(_ method: String, _ path: String, _ body: String? = nil, headers: [(String, String)] = []) throws -> Response {
        try request(method, path, headers: (body != nil ? [("Content-Type", "application/json")] : []) + headers, body: body.map { Array($0.utf8) })
    }

    /// nil when the server closed the connection.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return false }
        buffer += chunk[0..<n]
        return true
    }

    private func readLine() throws -> String {
        while true {
            if let i = buffer.firstIndex(of: 10) {
                let line = buffer[..<i]
                buffer.removeFirst(i + 1)
                return String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
            }
            guard fill() else { throw CBLError(.internalError, "connection closed") }
        }
    }

    private func readExactly(_ n: Int) throws -> [UInt8] {
        while buffer.count < n { guard fill() else { throw CBLError(.internalError, "connection closed mid-body") } }
        let out = Array(buffer[..<n])
        buffer.removeFirst(n)
        return out
    }

    /// Reads one response (skipping 1xx ones unless `informational`).
    func readResponse(head: Bool = false, informational: Bool = false) throws -> Response {
        while true {
            let status = try readLine()
            let parts = status.split(separator: " ")
            guard parts.count >= 2, let code = Int(parts[1]) else { throw CBLError(.internalError, "bad status line \(status)") }
            var headers: [(String, String)] = []
            while true {
                let l = try readLine()
                if l.isEmpty { break }
                if let c = l.firstIndex(of: ":") {
                    headers.append((String(l[..<c]), String(l[l.index(after: c)...]).trimmingCharacters()))
                }
            }
            var r = Response(status: code, headers: headers, body: [])
            if code < 200 { if informational { return r } else { continue } }
            if head || code == 204 || code == 304 { return r }
            if r.header("Transfer-Encoding")?.lowercased() == "chunked" {
                while true {
                    let sizeLine = try readLine()
                    guard let size = Int(sizeLine.split(separator: ";")[0], radix: 16) else { throw CBLError(.internalError, "bad chunk") }
                    if size == 0 { _ = try readLine(); break }
                    r.body += try readExactly(size)
                    _ = try readLine()
                }
            } else if let len = r.header("Content-Length").flatMap(Int.init) {
                r.body = try readExactly(len)
            } else {
                while fill() {}
                r.body = buffer
                buffer = []
            }
            return r
        }
    }

    /// Reads raw bytes until `marker` appears (streamed feeds) or the time runs out.
    func readUntil(_ marker: String, timeoutMs: Int = 5000) -> String {
        let start = Clock.ms()
        while Clock.ms() - start < timeoutMs {
            let s = String(decoding: buffer, as: UTF8.self)
            if s.contains(marker) { return s }
            if !fill() { break }
        }
        return String(decoding: buffer, as: UTF8.self)
    }

    /// True when the server has closed the connection (within `timeoutMs`).
    func isClosedByServer(timeoutMs: Int = 3000) -> Bool {
        let start = Clock.ms()
        while Clock.ms() - start < timeoutMs {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK { return true }
            if n > 0 { buffer += chunk[0..<n] }
        }
        return false
    }
}

enum Clock {
    static func ms() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
    }
}

extension String {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return String(s)
    }
    func contains(_ other: String) -> Bool { self.range(of: other) != nil }
    func range(of other: String) -> Range<String.Index>? {
        guard !other.isEmpty else { return nil }
        var i = startIndex
        while i != endIndex {
            if self[i...].hasPrefix(other) { return i..<index(i, offsetBy: other.count) }
            i = index(after: i)
        }
        return nil
    }
}
