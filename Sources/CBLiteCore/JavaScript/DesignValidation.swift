/// CouchDB's `validate_doc_update(newDoc, oldDoc, userCtx, secObj)`: every design document
/// of the collection that has one sees each new revision (after the native validators,
/// inside the writing transaction) and may refuse it:
/// - `throw({forbidden: msg})` → 403 with msg as the reason, `throw({unauthorized: msg})`
///   → 401; any other thrown value, a function that does not compile, a time or memory
///   limit → a 500 for that write (logged), as CouchDB answers;
/// - design documents themselves are not run through them (couch_db.erl checks only that
///   their writer is an admin), nor are local documents (they are apart);
/// - newDoc carries `_id`, `_rev`, `_revisions` (and `_deleted: true` for a deletion);
///   oldDoc is the revision it replaces, null for a new document or one re-created on a
///   tombstone; for a replicated revision, its nearest stored ancestor (CouchDB's
///   find_prev_known_rev), else null.
/// Which design documents have one is cached per collection (DesignValidators), so a
/// collection without any pays one lookup a write.
extension Collection {
    /// Whether a save must take the validating path: native validators, or design
    /// documents that have (or, not looked at yet, may have) a validate_doc_update.
    func hasValidation() -> Bool {
        store.validators.hasValidators(id) || store.designValidators.mayHave(id)
    }

    /// Runs the design documents' validate_doc_update on revision `newIndex` of `tree`,
    /// replacing `oldIndex` (nil: none).
    func validateWithDesignDocuments(_ conn: Connection, _ txn: TransactionState, docID: String,
                                     tree: RevTree, newIndex: Int, oldIndex: Int?) throws {
        guard !docID.hasPrefix("_design/") else { return }
        let validators = try designValidators(conn, txn)
        guard !validators.isEmpty else { return }
        let args = try validationArguments(docID: docID, tree: tree, newIndex: newIndex, oldIndex: oldIndex)
        for ddoc in validators {
            do {
                _ = try ddoc.withEngine { try $0.call("__cbl_validate", argumentsJSON: args) }
            } catch let failure as JSFailure {
                throw Self.refusal(failure, ddoc, docID)
            }
        }
    }

    /// The design documents with a JavaScript validate_doc_update, as the transaction
    /// sees them; cached unless the transaction itself changed a design document (a
    /// rollback would leave the cache wrong).
    private func designValidators(_ conn: Connection, _ txn: TransactionState) throws -> [DesignDocument] {
        if let known = store.designValidators.cached(id) { return known }
        let s = try docStore.summaries(conn, filter: .live, lower: .init(value: .string("_design/"), inclusive: true),
                                       upper: .init(value: .string("_design0"), inclusive: false), descending: false, limit: -1)
        var ids: [String] = []
        while try s.step() { ids.append(s.string(0) ?? "") }
        var found: [DesignDocument] = []
        for docID in ids {
            guard let row = try docStore.row(conn, docID: docID) else { continue }
            let body = try row.json().withUnsafeBufferPointer { try JSONParser.parseObject(bytes: $0, what: "design document") }
            let ddoc = DesignDocument(self, name: String(docID.dropFirst(8)), body: body)
            if ddoc.language == "javascript", body["validate_doc_update"]?.stringValue != nil { found.append(ddoc) }
        }
        if !txn.designDocumentsChanged { store.designValidators.set(id, found) }
        return found
    }

    /// Notes a write of `docID`: when it is a design document, the cached validators of
    /// the collection are stale.
    @inline(__always)
    func noteWrite(_ docID: String, _ txn: TransactionState) {
        guard docID.utf8.first == UInt8(ascii: "_") else { return }
        txn.designDocumentsChanged = true
        store.designValidators.invalidate(id)
    }

    /// `[newDoc, oldDoc, userCtx, secObj]` as JSON.
    private func validationArguments(docID: String, tree: RevTree, newIndex: Int, oldIndex: Int?) throws -> [UInt8] {
        let n = tree.nodes[newIndex]
        let ancestry = tree.ancestry(of: newIndex).map { JSONValue.string(tree.nodes[$0].rev.digest) }
        let revisions: JSONValue = .object(JSONObject([("start", .int(Int64(n.rev.generation))), ("ids", .array(ancestry))]))
        var args = Array("[".utf8)
        args += DocumentJSON.render(docID: docID, rev: n.rev.string, deleted: n.deleted, body: n.body, extras: [("_revisions", revisions)])
        args.append(UInt8(ascii: ","))
        if let oldIndex, let body = tree.nodes[oldIndex].body {
            let o = tree.nodes[oldIndex]
            args += DocumentJSON.render(docID: docID, rev: o.rev.string, deleted: o.deleted, body: body)
        } else {
            args += Array("null".utf8)
        }
        let user = WriteUser.current ?? .local
        let userCtx: JSONValue = .object(JSONObject([
            ("db", .string(user.db ?? database.name)),
            ("name", user.name.map { .string($0) } ?? .null),
            ("roles", .array(user.roles.map { .string($0) })),
        ]))
        let secObj = try user.security?() ?? database.securityObject?.json ?? JSONObject()
        args += Array(",".utf8) + JSONWriter.ordered(userCtx) + Array(",".utf8) + JSONWriter.ordered(.object(secObj)) + Array("]".utf8)
        return args
    }

    /// CouchDB's answer to what a validate_doc_update threw (couch_query_servers): an
    /// object of one member `forbidden` or `unauthorized` refuses the write (403, 401);
    /// anything else fails it (500, CouchDB's unknown_error), and is logged.
    static func refusal(_ failure: JSFailure, _ ddoc: DesignDocument, _ docID: String) -> CBLError {
        if case .threw(_, let thrown?) = failure, let o = thrown.objectValue, o.members.count == 1 {
            let (key, value) = (o.members[0].key, o.members[0].value)
            let reason = value.stringValue ?? String(decoding: JSONWriter.ordered(value), as: UTF8.self)
            if key == "forbidden" { return CBLError(.forbidden, reason) }
            if key == "unauthorized" { return CBLError(.unauthorized, reason) }
        }
        Loggers.database.warning("\(ddoc.id): validate_doc_update failed on document \"\(docID)\", whose write fails: \(failure)")
        if case .threw(_, let thrown?) = failure, let text = thrown.stringValue { return CBLError(.internalError, text) }
        return CBLError(.internalError, "\(ddoc.id) validate_doc_update: \(failure)")
    }
}

/// Who a write is made by, as a validate_doc_update sees it (CouchDB's userCtx, and the
/// security object it is given). The listener binds its request's user around each
/// request (`WriteUser.$current`); every other write — C API, Python, replication pulls —
/// is `local`: `{"db": NAME, "name": null, "roles": ["_admin"]}` with the database's
/// stored security object (`{}` when none), as documented in include/cblite.h.
public struct WriteUser: Sendable {
    public let name: String?
    public let roles: [String]
    /// The database name the function sees; nil: the database's own.
    public let db: String?
    /// The security object it sees; nil: the database's stored one.
    public let security: (@Sendable () throws -> JSONObject)?

    public init(name: String?, roles: [String], db: String?, security: (@Sendable () throws -> JSONObject)?) {
        self.name = name
        self.roles = roles
        self.db = db
        self.security = security
    }

    public static let local = WriteUser(name: nil, roles: ["_admin"], db: nil, security: nil)

    @TaskLocal public static var current: WriteUser?
}

/// Per collection, the design documents that have a validate_doc_update: nil until a
/// write needs them, dropped when a design document of the collection is written. Read
/// and filled only inside write transactions, which the store serializes.
final class DesignValidators: @unchecked Sendable {
    private let known = LockedValue<[Int64: [DesignDocument]]>([:])

    /// True when there are some, or when not known yet (the write's validating path loads them).
    func mayHave(_ collectionID: Int64) -> Bool { known.withLock { $0[collectionID].map { !$0.isEmpty } ?? true } }

    func cached(_ collectionID: Int64) -> [DesignDocument]? { known.withLock { $0[collectionID] } }

    func set(_ collectionID: Int64, _ list: [DesignDocument]) { known.withLock { $0[collectionID] = list } }

    func invalidate(_ collectionID: Int64) { known.withLock { _ = $0.removeValue(forKey: collectionID) } }
}
