import CouchWire

/// A whole error response as bytes, with `Connection: close`: for the handlers that
/// answer below the HTTP codec (a refused connection, a request line that is not HTTP/1.x).
enum RawResponse {
    static func closing(_ e: CouchError) -> [UInt8] {
        let body = e.body
        let head = "HTTP/1.1 \(e.status) \(CouchError.reasonPhrase(e.status))\r\nServer: \(ResponseWriter.serverHeader)\r\n"
            + "\(RequestID.header): \(RequestID.generate())\r\nX-CouchDB-Body-Time: 0\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }
}
