/// Status codes of the engine, HTTP-like as in Couchbase Lite 1.x. The C ABI passes
/// them through unchanged (see include/cblite.h).
public enum Status: Int32, Sendable {
    case ok = 0
    case badRequest = 400
    case unauthorized = 401
    case forbidden = 403
    case notFound = 404
    case notAcceptable = 406
    case conflict = 409
    case preconditionFailed = 412
    case internalError = 500
    case notImplemented = 501
    case busy = 503
    /// The disk (or the user's quota) is full: WebDAV's 507. Nothing of the failed call
    /// was written; what was acknowledged before stays, and writes succeed again once
    /// space is freed.
    case insufficientStorage = 507

    public var name: String {
        switch self {
        case .ok: return "ok"
        case .badRequest: return "bad request"
        case .unauthorized: return "unauthorized"
        case .forbidden: return "forbidden"
        case .notFound: return "not found"
        case .notAcceptable: return "not acceptable"
        case .conflict: return "conflict"
        case .preconditionFailed: return "precondition failed"
        case .internalError: return "internal error"
        case .notImplemented: return "not implemented"
        case .busy: return "busy"
        case .insufficientStorage: return "insufficient storage"
        }
    }
}

/// Every failure of the engine: a status, a message for people, and the underlying
/// engine code (SQLite's extended result code) when there is one.
public struct CBLError: Error, CustomStringConvertible, Equatable, Sendable {
    public let status: Status
    public let message: String
    public let detail: Int32

    public init(_ status: Status, _ message: String, detail: Int32 = 0) {
        self.status = status
        self.message = message
        self.detail = detail
    }

    public var description: String { "\(status.rawValue) \(status.name): \(message)" }

    public static func badRequest(_ m: String) -> CBLError { CBLError(.badRequest, m) }
    public static func notFound(_ m: String) -> CBLError { CBLError(.notFound, m) }
    public static func conflict(_ m: String) -> CBLError { CBLError(.conflict, m) }
    public static func internalError(_ m: String) -> CBLError { CBLError(.internalError, m) }
    /// Any error as a CBLError (a foreign one becomes a 500 with its description).
    public static func wrapping(_ e: Error) -> CBLError { e as? CBLError ?? .internalError("\(e)") }
}
