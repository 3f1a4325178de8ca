/// How a JavaScript call failed: it threw (with what), ran past its time limit, or would
/// have grown its heap past the cap. Each fails that call only.
public enum JSFailure: Error, CustomStringConvertible, Equatable, Sendable {
    /// `message` is String(thrown); `thrown` the value itself when it was not an Error
    /// (validate_doc_update's {forbidden: ...}).
    case threw(message: String, thrown: JSONValue?)
    case timeout(ms: UInt32)
    case memory(bytes: Int)

    public var description: String {
        switch self {
        case .threw(let message, _): return message
        case .timeout(let ms): return "execution timeout: the call ran past its limit of \(ms) ms"
        case .memory(let bytes): return "out of memory: the call needed more than the limit of \(bytes) bytes"
        }
    }

    /// As the engine's error: a 500, as CouchDB answers for a function that fails.
    public var cblError: CBLError { CBLError(.internalError, "JavaScript: \(description)") }
}
