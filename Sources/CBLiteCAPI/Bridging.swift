import CBLiteCore
import CCBLite
import Glibc

// Translation between C and the engine: errors, strings, out-parameters. No behaviour.

public typealias CString = UnsafePointer<CChar>
public typealias OutString = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
public typealias ErrorOut = UnsafeMutablePointer<cbl_error>

/// Runs `body`, filling `err` and returning the status. Every entry point goes through here.
@inline(__always)
func abiCall(_ err: ErrorOut?, _ body: () throws -> Void) -> cbl_status {
    do {
        try body()
        if let err { err.pointee.code = 0; err.pointee.detail = 0; err.pointee.message.0 = 0 }
        return 0
    } catch let e as CBLError {
        return fail(err, e)
    } catch {
        return fail(err, CBLError(.internalError, "\(error)"))
    }
}

func fail(_ err: ErrorOut?, _ e: CBLError) -> cbl_status {
    if let err {
        err.pointee.code = e.status.rawValue
        err.pointee.detail = e.detail
        withUnsafeMutableBytes(of: &err.pointee.message) { buf in
            let bytes = Array(e.message.utf8)
            var n = min(bytes.count, buf.count - 1)
            // never cut a UTF-8 sequence in half
            while n > 0 && n < bytes.count && (bytes[n] & 0xC0) == 0x80 { n -= 1 }
            for i in 0..<n { buf[i] = bytes[i] }
            buf[n] = 0
        }
    }
    return e.status.rawValue
}

/// A required string argument: 400 when NULL or not valid UTF-8.
func string(_ p: CString?, _ what: String) throws -> String {
    guard let p else { throw CBLError(.badRequest, "\(what) is NULL") }
    guard let s = String(validatingCString: p) else { throw CBLError(.badRequest, "\(what) is not valid UTF-8") }
    return s
}

/// An optional string argument: nil when NULL, 400 when not valid UTF-8.
func optionalString(_ p: CString?, _ what: String) throws -> String? {
    guard let p else { return nil }
    return try string(p, what)
}

/// A JSON text argument as bytes, without copying (the parser validates UTF-8).
func withJSONBytes<T>(_ p: CString?, _ what: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) throws -> T {
    guard let p else { throw CBLError(.badRequest, "\(what) is NULL") }
    let n = strlen(p)
    return try p.withMemoryRebound(to: UInt8.self, capacity: n) { try body(UnsafeBufferPointer(start: $0, count: n)) }
}

/// A JSON text argument, parsed: 400 when NULL or not JSON. `message`: it holds documents
/// (a batch), read to JSONParser.messageDepth; each is held to the document limit.
func jsonValue(_ p: CString?, _ what: String, message: Bool = false) throws -> JSONValue {
    try withJSONBytes(p, what) { try JSONParser.parse(bytes: $0, depthLimit: message ? JSONParser.messageDepth : JSONParser.maxDepth) }
}

/// A JSON object argument, parsed: 400 when NULL, not JSON or not an object.
func jsonObject(_ p: CString?, _ what: String) throws -> JSONObject {
    try withJSONBytes(p, what) { try JSONParser.parseObject(bytes: $0, what: what) }
}

/// A malloc'ed, NUL-terminated copy that the caller frees with cbl_free.
func cString(_ bytes: [UInt8]) -> UnsafeMutablePointer<CChar> { MallocedText.copying(bytes).pointer }

func cString(_ s: String) -> UnsafeMutablePointer<CChar> { cString(Array(s.utf8)) }

/// The shape of every call that returns a value through an out-parameter: *out is reset
/// to `empty` first (never left stale by a failure), NULL `out` is a 400 unless the
/// parameter is optional, and *out is set only on success.
func outCall<T>(_ out: UnsafeMutablePointer<T>?, _ name: String, empty: T, optional: Bool = false,
                _ err: ErrorOut?, _ body: () throws -> T) -> cbl_status {
    out?.pointee = empty
    return abiCall(err) {
        if out == nil && !optional { throw CBLError(.badRequest, "\(name) is NULL") }
        let value = try body()
        out?.pointee = value
    }
}

/// A call that returns one JSON text (caller frees): *out is NULL on failure.
func jsonCall(_ out: OutString?, _ err: ErrorOut?, _ name: String, _ body: () throws -> [UInt8]) -> cbl_status {
    outCall(out, name, empty: nil, err) { cString(try body()) }
}

/// The same for a text the engine rendered straight into a malloc'ed string.
func textCall(_ out: OutString?, _ err: ErrorOut?, _ name: String, _ body: () throws -> MallocedText) -> cbl_status {
    outCall(out, name, empty: nil, err) { try body().pointer }
}

/// A call that returns a new handle: *out is NULL on failure.
func handleCall(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ name: String, _ err: ErrorOut?,
                _ make: () throws -> AnyObject) -> cbl_status {
    outCall(out, name, empty: nil, err) { HandleTable.shared.register(try make()) }
}

/// Checks a required out-parameter.
func require<T>(_ p: UnsafeMutablePointer<T>?, _ what: String) throws -> UnsafeMutablePointer<T> {
    guard let p else { throw CBLError(.badRequest, "\(what) is NULL") }
    return p
}

/// A C context pointer carried into closures that may run on other threads.
struct Context: @unchecked Sendable { let raw: UnsafeMutableRawPointer? }
