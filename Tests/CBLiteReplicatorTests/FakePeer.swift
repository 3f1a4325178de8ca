import CBLiteCore
import Glibc

/// A scripted HTTP/1.1 peer on 127.0.0.1 for what a real one does not do on demand:
/// answer garbage, send documents this engine refuses, hang up mid-answer. Each request
/// (method, target, body, lower-cased headers) goes to `handler`, which returns raw response bytes (nil: close
/// the connection without answering). Keep-alive; one thread per connection.
final class FakePeer: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let handler: @Sendable (String, String, [UInt8], [String: String]) -> [UInt8]?
    private let stopped = LockedValue(false)
    let requests = LockedValue<[(method: String, target: String, body: [UInt8])]>([])

    init(_ handler: @escaping @Sendable (String, String, [UInt8], [String: String]) -> [UInt8]?) throws {
        self.handler = handler
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listenFD = fd
        guard withUnsafePointer(to: &addr, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listenFD, $0, len) } }) == 0,
              listen(listenFD, 16) == 0 else { throw CBLError(.internalError, "fake peer cannot listen") }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listenFD, $0, &len) } }
        port = Int(UInt16(bigEndian: addr.sin_port))
        start(listenFD)
    }

    private func start(_ listenFD: Int32) {
        ServiceThread.detached { [self] in
            while !stopped.withLock({ $0 }) {
                let c = accept(listenFD, nil, nil)
                if c < 0 { return }
                ServiceThread.detached { self.serve(c) }
            }
        }
    }

    var url: String { "http://127.0.0.1:\(port)/db" }

    func stop() {
        stopped.withLock { $0 = true }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    static func response(_ status: Int, _ body: String, contentType: String = "application/json") -> [UInt8] {
        response(status, Array(body.utf8), contentType: contentType)
    }

    static func response(_ status: Int, _ body: [UInt8], contentType: String = "application/json") -> [UInt8] {
        Array("HTTP/1.1 \(status) X\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
    }

    private func serve(_ c: Int32) {
        defer { close(c) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            // The head.
            var headEnd: Int? = nil
            while headEnd == nil {
                if let r = find(buffer, [13, 10, 13, 10]) { headEnd = r; break }
                let n = read(c, &chunk, chunk.count)
                if n <= 0 { return }
                buffer += chunk[0..<n]
            }
            let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
            buffer.removeFirst(headEnd! + 4)
            let lines = head.split(separator: "\r\n")
            let requestLine = lines.first?.split(separator: " ") ?? []
            guard requestLine.count >= 2 else { return }
            var headers: [String: String] = [:]
            for l in lines.dropFirst() {
                guard let colon = l.firstIndex(of: ":") else { continue }
                headers[l[..<colon].lowercased()] = String(l[l.index(after: colon)...].trimmingSpaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            while buffer.count < length {
                let n = read(c, &chunk, chunk.count)
                if n <= 0 { return }
                buffer += chunk[0..<n]
            }
            let body = Array(buffer[0..<length])
            buffer.removeFirst(length)
            let method = String(requestLine[0]), target = String(requestLine[1])
            requests.withLock { $0.append((method, target, body)) }
            guard let answer = handler(method, target, body, headers) else { return }
            var sent = 0
            while sent < answer.count {
                let n = answer[sent...].withUnsafeBytes { write(c, $0.baseAddress, $0.count) }
                if n <= 0 { return }
                sent += n
            }
        }
    }

    private func find(_ b: [UInt8], _ p: [UInt8]) -> Int? {
        guard b.count >= p.count else { return nil }
        for i in 0...(b.count - p.count) where b[i] == p[0] && Array(b[i..<i + p.count]) == p { return i }
        return nil
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}

/// The `_local` documents (the replicator's checkpoints) a scripted peer keeps: GET and
/// PUT under `/db/_local/`, as CouchDB answers them.
final class FakeLocalDocuments: Sendable {
    private let docs = LockedValue<[String: String]>([:])

    func answer(_ method: String, _ path: String, _ body: [UInt8]) -> [UInt8] {
        switch method {
        case "GET":
            if let d = docs.withLock({ $0[path] }) { return FakePeer.response(200, d) }
            return FakePeer.response(404, #"{"error":"not_found","reason":"missing"}"#)
        case "PUT":
            var doc = String(decoding: body, as: UTF8.self)
            doc.removeLast()
            docs.withLock { $0[path] = doc + #","_rev":"0-1"}"# }
            return FakePeer.response(201, #"{"ok":true,"id":"x","rev":"0-1"}"#)
        default:
            return FakePeer.response(405, #"{"error":"method_not_allowed","reason":"Only GET,PUT allowed"}"#)
        }
    }
}
