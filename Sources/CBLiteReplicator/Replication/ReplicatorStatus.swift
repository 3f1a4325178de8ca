import CBLiteCore

/// What a replicator is doing, as its status callback and getter report it.
public struct ReplicatorStatus: Sendable, Equatable {
    public enum Activity: String, Sendable {
        case stopped, offline, connecting, idle, busy
    }

    public init() {}

    public var activity: Activity = .connecting
    /// Changes (document revisions) handled, and known so far.
    public var completed: Int64 = 0
    public var total: Int64 = 0
    public var documentsPushed: Int64 = 0
    public var documentsPulled: Int64 = 0
    public var documentFailures: Int64 = 0
    /// Failed revisions kept with the checkpoint, tried again at the next session (or run)
    /// until they go through or are cleared (Replicator.clearFailedDocuments).
    public var documentsToRetry: Int64 = 0
    /// The error that stopped the replication or made it go offline (nil once it recovers).
    public var errorStatus: Int = 0
    public var errorMessage: String?

    public static func == (a: ReplicatorStatus, b: ReplicatorStatus) -> Bool {
        a.activity == b.activity && a.completed == b.completed && a.total == b.total && a.documentsPushed == b.documentsPushed
            && a.documentsPulled == b.documentsPulled && a.documentFailures == b.documentFailures
            && a.documentsToRetry == b.documentsToRetry
            && a.errorStatus == b.errorStatus && a.errorMessage == b.errorMessage
    }

    public var json: JSONObject {
        var o = JSONObject([
            ("activity", .string(activity.rawValue)),
            ("completed", .int(completed)),
            ("total", .int(total)),
            ("documents_pushed", .int(documentsPushed)),
            ("documents_pulled", .int(documentsPulled)),
            ("document_failures", .int(documentFailures)),
            ("documents_to_retry", .int(documentsToRetry)),
        ])
        if let m = errorMessage { o["error"] = .object(JSONObject([("status", .int(Int64(errorStatus))), ("message", .string(m))])) }
        return o
    }
}

/// One document replicated (or not) in one direction.
public struct DocumentReplication: Sendable {
    public enum Direction: String, Sendable { case push, pull }
    public let direction: Direction
    public let docID: String
    public let revID: String?
    public let deleted: Bool
    public let error: ReplicationError?

    public var json: JSONObject {
        var o = JSONObject([("direction", .string(direction.rawValue)), ("id", .string(docID))])
        if let r = revID { o["rev"] = .string(r) }
        if deleted { o["deleted"] = .bool(true) }
        if let e = error { o["error"] = .object(JSONObject([("status", .int(Int64(e.httpStatus))), ("message", .string(e.message))])) }
        return o
    }
}
