/// The save path's attachment rules (called from Documents/DocumentWrites.swift):
///
/// - inline "data" is written to the store before the write transaction begins;
/// - a body without an `_attachments` key inherits the parent revision's attachments
///   unchanged (a body-only update copies no data); `"_attachments": {}` removes them;
///   a tombstone inherits nothing;
/// - every stub must name content the store has (412 otherwise: a revision can never
///   refer to missing content), and a given `length` must match it; a stub without a
///   digest of ours (CouchDB's form) names the parent's attachment of that name, and of
///   that revpos when it gives one (412 `missing_stub` otherwise);
/// - each stub keeps CouchDB's form of the content beside our SHA-1 (AttachmentCouchForm):
///   the parent's for the same content, else made when attached;
/// - `revpos` is set by the engine: the parent's when the parent has the same content
///   under the same name, else the new revision's generation (revisions inserted with
///   their history keep a given revpos within 1...generation).
extension Collection {
    var blobStore: BlobStore { BlobStore(store: store) }

    /// Writes inline attachment data to the store and turns it into digest + length.
    func storeInlineAttachments(_ body: inout DocumentBody) throws {
        guard var inputs = body.attachments, inputs.contains(where: { $0.data != nil }) else { return }
        let blobs = blobStore
        for i in inputs.indices {
            guard let data = inputs[i].data else { continue }
            let info = try blobs.put(data, expected: inputs[i].digest)
            inputs[i].digest = info.digest
            inputs[i].length = info.length
            inputs[i].md5 = info.md5
            inputs[i].data = nil
        }
        body.attachments = inputs
    }

    /// The body to store for a new revision of generation `generation` on `parent`:
    /// resolves `_attachments` (see above) and writes the stubs into the canonical body.
    /// `imported`: a revision inserted with its history (no inheritance, given revpos kept).
    /// `contentMD5s`: the MD5s of content the caller just stored; `knownForms`: the forms
    /// of content found on other revisions (kept as they are, as CouchDB keeps them).
    func withResolvedAttachments(_ body: DocumentBody, docID: String, parent: RevTree.Node?, docHasAttachments: Bool,
                                 generation: Int, imported: Bool = false, contentMD5s: [BlobDigest: [UInt8]] = [:],
                                 knownForms: [BlobDigest: CouchForm] = [:]) throws -> DocumentBody {
        let inherits = body.attachments == nil && !imported && !body.deleted
        let needParent = docHasAttachments && parent?.deleted == false && (inherits || !(body.attachments?.isEmpty ?? true))
        let parentAtts = needParent ? try parent?.body.map { try Attachments.stored(inBody: $0) } ?? [] : []
        guard let inputs = body.attachments else {
            guard inherits, !parentAtts.isEmpty else { return body }
            var out = body
            out.canonical = try Attachments.body(body.canonical, withStubs: parentAtts)
            out.hasAttachments = true
            return out
        }
        let blobs = blobStore
        let infos: [AttachmentInfo] = try inputs.map { input in
            if input.stubByName {
                // CouchDB's merge_stubs: the parent's attachment, kept as it is.
                guard let p = parentAtts.first(where: { $0.name == input.name }), input.revpos.map({ $0 == p.revpos }) ?? true else {
                    throw Attachments.missingStub(docID: docID, name: input.name)
                }
                return p.md5 != nil ? p : AttachmentInfo(name: p.name, contentType: p.contentType, digest: p.digest, length: p.length,
                                                         revpos: p.revpos, md5: try blobs.md5(of: p.digest), encoded: p.encoded)
            }
            guard let digest = input.digest else {
                throw CBLError.badRequest("attachment \"\(input.name)\" has no content (data or digest)")
            }
            let same = parentAtts.first { $0.name == input.name && $0.digest == digest }
            let length: UInt64
            if let same {
                length = same.length              // the parent refers to it: stored, not copied
            } else {
                do {
                    length = try blobs.length(of: digest)
                } catch let e as CBLError where e.status == .notFound {
                    throw CBLError(.preconditionFailed, "attachment content missing for \"\(input.name)\" (\(digest)): store it first")
                }
            }
            if let given = input.length, given != length {
                throw CBLError.badRequest("attachment \"\(input.name)\": \"length\" \(given) differs from the stored content's \(length) bytes")
            }
            let revpos: Int
            if imported, let r = input.revpos, r >= 1, r <= generation { revpos = r }
            else { revpos = same?.revpos ?? generation }
            let contentType = input.contentType ?? parentAtts.first { $0.name == input.name }?.contentType ?? Attachments.defaultContentType
            // Content kept under this name keeps its form; new content gets one now.
            let form: CouchForm
            if let same {
                form = try CouchForm(same) ?? CouchForm(md5: blobs.md5(of: digest), encoded: nil)
            } else if let known = knownForms[digest] {
                form = known
            } else {
                form = try makeCouchForm(of: digest, contentType: contentType, contentMD5: input.md5 ?? contentMD5s[digest])
            }
            return AttachmentInfo(name: input.name, contentType: contentType, digest: digest, length: length, revpos: revpos,
                                  md5: form.md5, encoded: form.encoded)
        }
        var out = body
        out.hasAttachments = !infos.isEmpty
        if !infos.isEmpty { out.canonical = try Attachments.body(body.canonical, withStubs: infos) }
        return out
    }
}
