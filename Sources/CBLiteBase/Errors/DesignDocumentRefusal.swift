/// Why a design document was refused when written (a 400), as CouchDB names it: a shape
/// error (`invalid_design_doc`) or a function that does not compile (`compilation_error`).
/// Carried in CBLError's detail, as negative codes no SQLite result code takes — the C
/// header's CBL_DETAIL_INVALID_DESIGN_DOC and CBL_DETAIL_COMPILATION_ERROR.
public enum DesignDocumentRefusal: Int32, Sendable {
    case invalid = -4001
    case compilation = -4002

    public func error(_ reason: String) -> CBLError { CBLError(.badRequest, reason, detail: rawValue) }

    /// CouchDB's error name.
    public var couchName: String { self == .invalid ? "invalid_design_doc" : "compilation_error" }
}

extension CBLError {
    /// The refusal this 400 is, if it refused a design document.
    public var designDocumentRefusal: DesignDocumentRefusal? {
        status == .badRequest ? DesignDocumentRefusal(rawValue: detail) : nil
    }
}
