import CBLiteBase

/// CouchDB's revision read options (`GET /db/doc`, `open_revs`, `_bulk_get`), read the
/// same way from a query string and from the C ABI's options object.
public enum RevisionOptionsReader {
    /// The names this reader understands (`follows` only where allowed, see `read`).
    public static let names: Set<String> = [
        "revs", "latest", "attachments", "atts_since", "conflicts", "deleted_conflicts",
        "revs_info", "local_seq", "meta", "follows",
    ]

    /// `meta` implies `conflicts`, `deleted_conflicts` and `revs_info`; `atts_since` implies
    /// `attachments` (those newer than the revisions given), as CouchDB. `follows` (the C
    /// ABI's: attachments marked `"follows": true`, their content read by the caller) is
    /// honoured only with `allowFollows`: over HTTP the transport decides that from `Accept`.
    public static func read(_ source: some OptionSource, allowFollows: Bool = false) throws -> RevisionOptions {
        var o = RevisionOptions()
        let meta = try source.bool("meta", default: false)
        o.revisions = try source.bool("revs", default: false)
        o.latest = try source.bool("latest", default: false)
        o.conflicts = try source.bool("conflicts", default: false) || meta
        o.deletedConflicts = try source.bool("deleted_conflicts", default: false) || meta
        o.revsInfo = try source.bool("revs_info", default: false) || meta
        o.localSeq = try source.bool("local_seq", default: false)
        o.attsSince = try source.stringArray("atts_since") ?? []
        let attachments = try source.bool("attachments", default: false) || !o.attsSince.isEmpty
        let follows = allowFollows ? try source.bool("follows", default: false) : false
        o.impliedAttachments = follows ? .follows : .inline
        o.attachments = !attachments ? .stubs : o.impliedAttachments
        return o
    }
}
