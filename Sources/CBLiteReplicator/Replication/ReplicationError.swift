import CBLiteCore
import CouchWire

/// Why a replication (or one request of it) failed, and whether trying again can help.
/// `httpStatus` is the peer's answer (0 when there was none: the network failed).
public struct ReplicationError: Error, Sendable, CustomStringConvertible {
    public let httpStatus: Int
    public let message: String
    /// Timeouts, refused or dropped connections, 408, 429 and 5xx: retried with back-off.
    /// Everything else (401, 403, 404, a peer that does not speak the protocol) is not.
    public let isTransient: Bool

    public init(httpStatus: Int, message: String, isTransient: Bool? = nil) {
        self.httpStatus = httpStatus
        self.message = message
        self.isTransient = isTransient ?? (httpStatus == 0 || httpStatus == 408 || httpStatus == 429 || httpStatus >= 500)
    }

    public static func network(_ message: String) -> ReplicationError { ReplicationError(httpStatus: 0, message: message, isTransient: true) }

    /// A peer that answered something this protocol does not allow: not retried.
    public static func protocolViolation(_ message: String) -> ReplicationError {
        ReplicationError(httpStatus: 502, message: "the peer's answer is not CouchDB's protocol: \(message)", isTransient: false)
    }

    /// A local failure (the database closed, the disk is full): not retried.
    public static func local(_ error: any Error) -> ReplicationError {
        let e = CBLError.wrapping(error)
        return ReplicationError(httpStatus: CouchError(e).status, message: "local database: \(e.message)", isTransient: e.status == .busy)
    }

    public var description: String { httpStatus == 0 ? message : "\(httpStatus) \(message)" }

    /// The status the engine's error carries for this failure (for the C ABI and Python).
    public var cblError: CBLError {
        let status: Status
        switch httpStatus {
        case 0, 502, 503, 504: status = .busy
        case 400: status = .badRequest
        case 401: status = .unauthorized
        case 403: status = .forbidden
        case 404: status = .notFound
        case 409: status = .conflict
        case 412: status = .preconditionFailed
        case 501: status = .notImplemented
        case 507: status = .insufficientStorage
        default: status = .internalError
        }
        return CBLError(status, message)
    }
}
