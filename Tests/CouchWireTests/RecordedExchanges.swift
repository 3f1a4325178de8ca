import CBLiteBase
import XCTest

/// The CouchDB 3.5.0 recordings in Tests/Fixtures/couchdb-3.5 (see its README): requests and
/// responses with their exact bodies and the recorder's per-part view of multipart ones.
struct RecordedExchange {
    let file: String
    let seq: Int
    let request: JSONObject
    let response: JSONObject

    /// Tests/CouchWireTests/RecordedExchanges.swift -> Tests/Fixtures/couchdb-3.5.
    static let directory = "/" + #filePath.split(separator: "/").dropLast(2).joined(separator: "/") + "/Fixtures/couchdb-3.5"

    /// A missing file fails the test: a skip would pass without checking anything.
    struct MissingRecording: Error, CustomStringConvertible {
        let path: String
        var description: String { "CouchDB recording missing: \(path) (Tests/Fixtures/couchdb-3.5 is part of the repository)" }
    }

    static func load(_ file: String) throws -> [RecordedExchange] {
        let path = directory + "/" + file
        guard let f = fopen(path, "r") else { throw MissingRecording(path: path) }
        defer { fclose(f) }
        var out: [RecordedExchange] = []
        var line: UnsafeMutablePointer<CChar>? = nil
        var cap = 0
        while getline(&line, &cap, f) > 0 {
            let o = try JSONParser.parseObject(String(cString: line!))
            out.append(RecordedExchange(file: file, seq: Int(o["seq"]!.intValue!), request: o["request"]!.objectValue!,
                                        response: o["response"]!.objectValue!))
        }
        free(line)
        return out
    }

    static func body(_ message: JSONObject) -> [UInt8] {
        guard let text = message["body"]?.stringValue else { return [] }
        if message["body_encoding"]?.stringValue == "base64" { return Base64Decode.decode(text) }
        return Array(text.utf8)
    }

    static func header(_ message: JSONObject, _ name: String) -> String? {
        message["headers"]?.arrayValue?.first { $0.arrayValue?.first?.stringValue?.lowercased() == name.lowercased() }?
            .arrayValue?[1].stringValue
    }
}

/// A test-side base64 decoder, independent of the one under test.
enum Base64Decode {
    static func decode(_ s: String) -> [UInt8] {
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var map = [UInt8: UInt32]()
        for (i, c) in table.enumerated() { map[c] = UInt32(i) }
        var out: [UInt8] = []
        var acc: UInt32 = 0, bits = 0
        for c in s.utf8 {
            guard let v = map[c] else { continue }
            acc = acc << 6 | v
            bits += 6
            if bits >= 8 { bits -= 8; out.append(UInt8(acc >> UInt32(bits) & 255)) }
        }
        return out
    }
}
