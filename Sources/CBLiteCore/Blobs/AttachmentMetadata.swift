/// One entry of `_attachments` in a body given to save, validated but not yet resolved
/// against the store (that happens in the save path, see AttachmentSaving.swift).
struct AttachmentInput: Sendable {
    var name: String
    var contentType: String?
    var digest: BlobDigest?
    var length: UInt64?
    var revpos: Int?
    /// Inline content ("data", base64), written to the store before the save.
    var data: [UInt8]?
    /// A stub without a digest of ours (`{"stub": true}` alone, or CouchDB's "md5-…"):
    /// it names the parent revision's attachment of that name (CouchDB's rule).
    var stubByName = false
    /// The content's MD5, when the engine just wrote it (never taken from a caller).
    var md5: [UInt8]?
}

/// Validation and (de)serialization of attachment metadata.
enum Attachments {
    static let maxNameBytes = 255
    static let maxContentTypeBytes = 255
    static let defaultContentType = "application/octet-stream"

    /// Names are JSON keys only and never become paths: 1–255 bytes of UTF-8 without
    /// control characters (NUL included).
    static func validateName(_ name: String) throws {
        let u = name.utf8
        guard !u.isEmpty else { throw CBLError.badRequest("attachment name is empty") }
        // CouchDB's rule and reason: names starting with "_" are reserved.
        guard u.first != UInt8(ascii: "_") else {
            throw CBLError.badRequest("Attachment name '\(name.prefix(255))' starts with prohibited character '_'")
        }
        guard u.count <= maxNameBytes else { throw CBLError.badRequest("attachment name is longer than \(maxNameBytes) bytes") }
        guard !u.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw CBLError.badRequest("attachment name must not contain control characters")
        }
    }

    private static func isTokenChar(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(c)
        }
    }

    /// `type/subtype` (RFC 7231 tokens), optionally followed by `; name=value` parameters
    /// (value a token or a quoted string); at most 255 bytes.
    static func validateContentType(_ type: String) throws {
        let u = Array(type.utf8)
        let bad = CBLError.badRequest("content type \"\(type.prefix(80))\" is not a MIME type (type/subtype)")
        guard !u.isEmpty, u.count <= maxContentTypeBytes else {
            throw CBLError.badRequest("content type must be 1 to \(maxContentTypeBytes) bytes")
        }
        var i = 0
        func token() -> Bool {
            let start = i
            while i < u.count && isTokenChar(u[i]) { i += 1 }
            return i > start
        }
        func spaces() { while i < u.count && (u[i] == 0x20 || u[i] == 0x09) { i += 1 } }
        guard token(), i < u.count, u[i] == UInt8(ascii: "/") else { throw bad }
        i += 1
        guard token() else { throw bad }
        while true {
            spaces()
            if i == u.count { return }
            guard u[i] == UInt8(ascii: ";") else { throw bad }
            i += 1
            spaces()
            guard token(), i < u.count, u[i] == UInt8(ascii: "=") else { throw bad }
            i += 1
            if i < u.count && u[i] == UInt8(ascii: "\"") {
                i += 1
                while i < u.count && u[i] != UInt8(ascii: "\"") {
                    guard u[i] >= 0x20 && u[i] != 0x7F else { throw bad }
                    if u[i] == UInt8(ascii: "\\") { i += 1 }
                    i += 1
                }
                guard i < u.count else { throw bad }
                i += 1
            } else {
                guard token() else { throw bad }
            }
        }
    }

    /// Validates `_attachments` of a body to save: an object of name -> entry, each entry
    /// with "data" (base64), a "digest" of ours, or `"stub": true` (CouchDB's form: by
    /// name, its "md5-…" digest not needed), and optionally "content_type", "length",
    /// "revpos" (set by the engine). What reads give besides ("md5", "encoding",
    /// "encoded_length") is accepted and ignored, so a read body saves back as it is.
    static func parseInput(_ value: JSONValue) throws -> [AttachmentInput] {
        guard let members = value.objectValue?.members else { throw CBLError.badRequest("\"_attachments\" must be an object") }
        return try members.map { name, entry in
            try validateName(name)
            let what = "attachment \"\(name.prefix(80))\""
            guard let o = entry.objectValue else { throw CBLError.badRequest("\(what) must be an object") }
            var input = AttachmentInput(name: name)
            var stub = false
            for (key, v) in o.members {
                switch key {
                case "content_type":
                    guard let s = v.stringValue else { throw CBLError.badRequest("\(what): \"content_type\" must be a string") }
                    try validateContentType(s)
                    input.contentType = s
                case "digest":
                    guard let s = v.stringValue else { throw CBLError.badRequest("\(what): \"digest\" must be a string") }
                    if CouchDigest.parse(s) == nil { input.digest = try BlobDigest.parse(s, what: "\(what): digest") }
                case "md5", "encoding", "encoded_length", "encoded_digest":
                    continue
                case "length":
                    guard let n = v.intValue, n >= 0 else { throw CBLError.badRequest("\(what): \"length\" must be a non-negative integer") }
                    input.length = UInt64(n)
                case "revpos":
                    guard let n = v.intValue, n >= 0, n <= 999_999_999 else {
                        throw CBLError.badRequest("\(what): \"revpos\" must be a non-negative integer")
                    }
                    input.revpos = Int(n)
                case "stub":
                    guard let b = v.boolValue else { throw CBLError.badRequest("\(what): \"stub\" must be a boolean") }
                    stub = b
                case "data":
                    guard let s = v.stringValue, let bytes = Base64.decode(s.utf8) else {
                        throw CBLError.badRequest("Invalid attachment data for \(name.prefix(255))")   // CouchDB's reason
                    }
                    input.data = bytes
                default:
                    throw CBLError.badRequest("\(what): unsupported property \"\(key.prefix(40))\"")
                }
            }
            if stub && input.data != nil { throw CBLError.badRequest("\(what): a stub carries no \"data\"") }
            if input.data == nil && input.digest == nil {
                guard stub else { throw CBLError.badRequest("Invalid attachment data for \(name.prefix(255))") }
                input.stubByName = true
            }
            if let data = input.data, let n = input.length, n != UInt64(data.count) {
                throw CBLError.badRequest("\(what): \"length\" \(n) differs from the data's \(data.count) bytes")
            }
            return input
        }
    }

    /// The attachments of a stored body (canonical JSON written by the engine).
    static func stored(inBody body: [UInt8]) throws -> [AttachmentInfo] {
        // Cheap test first: most bodies have no attachments.
        guard contains(body, "\"_attachments\"") else { return [] }
        let o = try body.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
        guard let atts = o["_attachments"] else { return [] }
        guard let members = atts.objectValue?.members else { throw CBLError.internalError("stored \"_attachments\" is not an object") }
        return try members.map { name, v in
            guard let e = v.objectValue, let d = e["digest"]?.stringValue, let digest = BlobDigest(d),
                  let length = e["length"]?.intValue, let revpos = e["revpos"]?.intValue else {
                throw CBLError.internalError("stored metadata of attachment \"\(name)\" is damaged")
            }
            let encoded = e["encoded_digest"]?.stringValue.flatMap(BlobDigest.init).flatMap { d in
                e["encoded_length"]?.intValue.map { EncodedAttachment(digest: d, length: UInt64(max(0, $0))) }
            }
            return AttachmentInfo(name: name, contentType: e["content_type"]?.stringValue ?? defaultContentType,
                                  digest: digest, length: UInt64(max(0, length)), revpos: Int(revpos),
                                  md5: e["md5"]?.stringValue.flatMap(CouchDigest.parse), encoded: encoded)
        }
    }

    /// `body` with its `_attachments` replaced by stubs of `infos` (removed when empty).
    static func body(_ body: [UInt8], withStubs infos: [AttachmentInfo]) throws -> [UInt8] {
        var o = try body.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
        o["_attachments"] = infos.isEmpty ? nil : .object(JSONObject(infos.map { ($0.name, $0.stub) }))
        return JSONWriter.canonical(.object(o))
    }

    /// The stub members the engine derives for CouchDB's peers (AttachmentCouchForm).
    static let derivedMembers = ["encoded_digest", "encoded_length", "encoding", "md5"]

    /// The canonical body a new revision's ID covers: without the derived members, so the
    /// same change gets the same revision ID whether a database keeps a gzip form or not,
    /// and as it did before the MD5 was kept.
    static func revisionDigestBody(_ body: DocumentBody) throws -> [UInt8] {
        guard body.hasAttachments else { return body.canonical }
        var o = try body.canonical.withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0) }
        guard var atts = o["_attachments"]?.objectValue else { return body.canonical }
        for i in atts.members.indices {
            guard case .object(var e) = atts.members[i].value else { continue }
            for k in derivedMembers { e[k] = nil }
            atts.members[i].value = .object(e)
        }
        o["_attachments"] = .object(atts)
        return JSONWriter.canonical(.object(o))
    }

    /// CouchDB's 412 for a stub that names no attachment of the parent revision.
    static func missingStub(docID: String, name: String) -> CBLError {
        CBLError(.preconditionFailed, "Invalid attachment stub in \(docID) for \(name)")
    }

    static func contains(_ haystack: [UInt8], _ needle: StaticString) -> Bool {
        let n = needle.utf8CodeUnitCount
        guard haystack.count >= n else { return false }
        let first = needle.utf8Start[0]
        var i = 0
        while i <= haystack.count - n {
            if haystack[i] == first {
                var j = 1
                while j < n && haystack[i + j] == needle.utf8Start[j] { j += 1 }
                if j == n { return true }
            }
            i += 1
        }
        return false
    }
}
