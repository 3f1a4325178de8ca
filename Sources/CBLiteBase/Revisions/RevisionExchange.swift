/// The values a replicating peer's requests are answered with: revision read options and
/// their results, `_revs_diff` and bulk-write outcomes. They are made by the engine and
/// written by the wire format (CouchWire), so they live here, below both.

/// How a revision's attachments appear in its JSON.
public enum AttachmentMode: Sendable {
    /// `"stub": true` entries (metadata only).
    case stubs
    /// `"data"`: the content in base64, for attachments newer than `attsSince`.
    case inline
    /// `"follows": true`, for attachments newer than `attsSince`; the caller streams
    /// their content (`Revision.followingAttachments`, `openBlob`) after the JSON.
    case follows
}

public struct RevisionOptions: Sendable {
    /// `_revisions`: the history as `{"start","ids"}`.
    public var revisions = false
    /// A requested revision that is not a leaf stands for the leaves descending from it.
    public var latest = false
    public var attachments: AttachmentMode = .stubs
    /// Revisions the caller already has: attachments whose revpos is not newer than
    /// the newest of these on the revision's ancestry stay stubs.
    public var attsSince: [String] = []
    /// How attachments appear for a `_bulk_get` document that gives its own non-empty
    /// `atts_since` while `attachments` is `.stubs`: such a request asks for its newer
    /// attachments (CouchDB's rule), inline or following as the caller can take them.
    public var impliedAttachments: AttachmentMode = .inline
    /// `_conflicts`: the other undeleted leaves.
    public var conflicts = false
    /// `_deleted_conflicts`: the deleted leaves other than the current revision.
    public var deletedConflicts = false
    /// `_revs_info`: the revision's ancestry with each one's status.
    public var revsInfo = false
    /// `_local_seq`: the document's sequence.
    public var localSeq = false
    /// Attachment stubs in CouchDB's form (`digest` its "md5-…"), as the listener and the
    /// replicator show them to CouchDB peers; else the engine's ("sha1-…" and "md5").
    public var couchDigests = false
    /// With `couchDigests`: stubs and inline entries show `encoding` and `encoded_length`
    /// of content kept gzip-encoded (CouchDB's `att_encoding_info`; following entries
    /// always do, their parts being sent encoded).
    public var attEncodingInfo = false
    /// Inline `data` of content kept gzip-encoded is that gzip form, with its encoding
    /// shown (CouchDB's `X-CouchDB-Send-Encoded-Atts: true`).
    public var sendEncodedAttachments = false

    public init() {}
}

/// One rendered revision.
public struct Revision: Sendable {
    public let docID: String
    public let revID: String
    public let deleted: Bool
    /// The document: `_id`, `_rev`, `_deleted`, the requested metadata, the content.
    public let json: [UInt8]
    /// With `.follows`: the attachments marked `"follows": true`, in the JSON's order.
    public let followingAttachments: [AttachmentInfo]

    package init(docID: String, revID: String, deleted: Bool, json: [UInt8], followingAttachments: [AttachmentInfo]) {
        self.docID = docID
        self.revID = revID
        self.deleted = deleted
        self.json = json
        self.followingAttachments = followingAttachments
    }
}

public enum OpenRevsResult: Sendable {
    case ok(Revision)
    /// A requested revision this database does not hold (or no longer holds a body of).
    case missing(String)
}

public struct BulkGetRequest: Sendable {
    public var id: String
    /// nil: the current revision.
    public var rev: String?
    /// Overrides the options' `attsSince` for this document.
    public var attsSince: [String]?

    public init(id: String, rev: String? = nil, attsSince: [String]? = nil) {
        self.id = id
        self.rev = rev
        self.attsSince = attsSince
    }
}

public struct BulkGetItem: Sendable {
    public let id: String
    public let rev: String?
    public let results: [OpenRevsResult]
    /// Set when the document could not be read at all (unknown: 404; bad ID: 400).
    public let error: CBLError?

    package init(id: String, rev: String?, results: [OpenRevsResult], error: CBLError?) {
        self.id = id
        self.rev = rev
        self.results = results
        self.error = error
    }
}

public struct RevsDiffResult: Sendable, Equatable {
    public let docID: String
    public let missing: [String]
    /// Local leaves of a lower generation than some missing revision (CouchDB's rule).
    public let possibleAncestors: [String]

    package init(docID: String, missing: [String], possibleAncestors: [String]) {
        self.docID = docID
        self.missing = missing
        self.possibleAncestors = possibleAncestors
    }
}

/// The outcome for one document of a bulk write.
public struct WriteResult: Sendable, Equatable {
    public let docID: String
    public let revID: String?
    public let error: CBLError?

    public init(docID: String, revID: String?, error: CBLError?) {
        self.docID = docID
        self.revID = revID
        self.error = error
    }
}
