import CBLiteBase

/// An error as CouchDB answers it: an HTTP status and a body `{"error": name, "reason": text}`.
public struct CouchError: Error, Equatable, Sendable, CustomStringConvertible {
    public let status: Int
    public let error: String
    public let reason: String

    public init(status: Int, error: String, reason: String) {
        self.status = status
        self.error = error
        self.reason = reason
    }

    public var description: String { "\(status) \(error): \(reason)" }

    /// `{"error":..,"reason":..}` followed by a newline, as CouchDB writes it.
    public var body: [UInt8] {
        var w = JSONWriter(canonical: false)
        w.writeObject(JSONObject([("error", .string(error)), ("reason", .string(reason))]))
        w.appendByte(10)
        return w.bytes
    }

    /// The error's members for per-document results (`_bulk_docs`, `_bulk_get`).
    public var members: [(key: String, value: JSONValue)] { [("error", .string(error)), ("reason", .string(reason))] }

    // MARK: the common ones, with CouchDB's words

    public static func badRequest(_ reason: String) -> CouchError { CouchError(status: 400, error: "bad_request", reason: reason) }
    public static func unauthorized(_ reason: String = "Name or password is incorrect.") -> CouchError {
        CouchError(status: 401, error: "unauthorized", reason: reason)
    }
    public static func forbidden(_ reason: String) -> CouchError { CouchError(status: 403, error: "forbidden", reason: reason) }
    public static func notFound(_ reason: String = "missing") -> CouchError { CouchError(status: 404, error: "not_found", reason: reason) }
    public static let databaseNotFound = CouchError(status: 404, error: "not_found", reason: "Database does not exist.")
    public static func methodNotAllowed(_ allowed: String) -> CouchError {
        CouchError(status: 405, error: "method_not_allowed", reason: "Only \(allowed) allowed")
    }
    public static let conflict = CouchError(status: 409, error: "conflict", reason: "Document update conflict.")
    public static let databaseExists = CouchError(status: 412, error: "file_exists",
                                                  reason: "The database could not be created, the file already exists.")
    public static func tooLarge(_ reason: String) -> CouchError { CouchError(status: 413, error: "too_large", reason: reason) }
    public static func badContentType(_ reason: String) -> CouchError { CouchError(status: 415, error: "bad_content_type", reason: reason) }
    public static let rangeNotSatisfiable = CouchError(status: 416, error: "requested_range_not_satisfiable",
                                                       reason: "Requested range not satisfiable")
    public static func notImplemented(_ reason: String) -> CouchError { CouchError(status: 501, error: "not_implemented", reason: reason) }

    /// Maps an engine error to CouchDB's status and error name. Document-level 404s say
    /// "missing" or "deleted" as CouchDB does; conflicts use CouchDB's sentence.
    public init(_ e: CBLError) {
        switch e.status {
        case .ok: self.init(status: 200, error: "ok", reason: e.message)
        case .badRequest: self.init(status: 400, error: e.designDocumentRefusal?.couchName ?? "bad_request", reason: e.message)
        case .unauthorized: self.init(status: 401, error: "unauthorized", reason: e.message)
        case .forbidden: self.init(status: 403, error: "forbidden", reason: e.message)
        case .notFound:
            let m = e.message
            // CouchDB's reasons pass as they are (a design document's missing function: "missing json key: NAME").
            let reason = m == "missing" || m == "deleted" || m.hasPrefix("missing json key: ") ? m
                : (m.hasSuffix("is deleted") || m.hasSuffix("deleted") ? "deleted" : "missing")
            self.init(status: 404, error: "not_found", reason: reason)
        case .notAcceptable: self.init(status: 406, error: "not_acceptable", reason: e.message)
        case .conflict: self.init(status: 409, error: "conflict", reason: "Document update conflict.")
        case .preconditionFailed:
            // The engine's stub refusal carries CouchDB's reason; its error name is missing_stub.
            self.init(status: 412, error: e.message.hasPrefix("Invalid attachment stub in ") ? "missing_stub" : "file_exists", reason: e.message)
        case .internalError: self.init(status: 500, error: "unknown_error", reason: e.message)
        case .notImplemented: self.init(status: 501, error: "not_implemented", reason: e.message)
        case .busy: self.init(status: 503, error: "service_unavailable", reason: e.message)
        case .insufficientStorage: self.init(status: 507, error: "insufficient_storage", reason: e.message)
        }
    }

    /// Any error: engine errors mapped, wire-format errors as 400, the rest as 500.
    public static func from(_ error: any Error) -> CouchError {
        switch error {
        case let e as CouchError: return e
        case let e as CBLError: return CouchError(e)
        case let e as MultipartError:
            if case .tooLarge(let m) = e { return .tooLarge(m) }
            return .badRequest(e.description)
        default: return CouchError(status: 500, error: "unknown_error", reason: "\(error)")
        }
    }

    /// CouchDB's reason phrases where they differ from the usual ones.
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Object Not Found"
        case 405: return "Method Not Allowed"
        case 406: return "Not Acceptable"
        case 409: return "Conflict"
        case 412: return "Precondition Failed"
        case 413: return "Request Entity Too Large"
        case 415: return "Unsupported Media Type"
        case 416: return "Requested Range Not Satisfiable"
        case 417: return "Expectation Failed"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        case 507: return "Insufficient Storage"
        default: return "Unknown"
        }
    }
}
