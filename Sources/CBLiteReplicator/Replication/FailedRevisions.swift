import CBLiteCore

/// The revisions one direction of a replication failed to move, waiting to be tried
/// again: the checkpoint moves past a failed revision (the rest of the batch must not
/// wait for it), so without this list the revision would never travel. Kept in the
/// local copy of the checkpoint (ReplicationCheckpointer), retried at the start of
/// every session until they go through or the user clears them.
///
/// Thread-safe: the replication thread records and takes, the user's thread reads and clears.
final class FailedRevisions: @unchecked Sendable {
    struct Entry: Hashable, Sendable {
        let docID: String
        let revID: String
    }

    private let state: LockedValue<[Entry]>

    init(_ entries: [Entry]) { state = LockedValue(entries) }

    var entries: [Entry] { state.withLock { $0 } }
    var count: Int { state.withLock { $0.count } }

    /// A batch's outcome: failures join the list, revisions that went through leave it.
    /// A revision the source no longer has (404) is not kept: no retry can bring it.
    func record(_ events: [DocumentReplication]) {
        state.withLock { list in
            var present = Set(list)
            for e in events {
                guard let rev = e.revID else { continue }
                let entry = Entry(docID: e.docID, revID: rev)
                if let error = e.error, error.httpStatus != 404 {
                    if present.insert(entry).inserted { list.append(entry) }
                } else if present.remove(entry) != nil {
                    list.removeAll { $0 == entry }
                }
            }
        }
    }

    /// Hands the whole list to a retry (whose failures come back through `record`).
    func takeAll() -> [Entry] { state.withLock { l in defer { l = [] }; return l } }

    /// Puts back revisions a retry took but could not finish (the session failed).
    func restore(_ entries: [Entry]) {
        state.withLock { list in
            let present = Set(list)
            list = entries.filter { !present.contains($0) } + list
        }
    }

    func clear() { state.withLock { $0 = [] } }

    /// The revisions grouped by document, in the list's order (the shape revs_diff takes).
    static func byDocument(_ entries: [Entry]) -> [(docID: String, revs: [String])] {
        var out: [(docID: String, revs: [String])] = []
        var position: [String: Int] = [:]
        for e in entries {
            if let i = position[e.docID] { out[i].revs.append(e.revID) } else {
                position[e.docID] = out.count
                out.append((e.docID, [e.revID]))
            }
        }
        return out
    }

    // MARK: the checkpoint's field

    static let checkpointField = "cblite_failed"

    static func json(_ entries: [Entry]) -> JSONValue {
        .array(entries.map { .object(JSONObject([("id", .string($0.docID)), ("rev", .string($0.revID))])) })
    }

    static func parse(_ value: JSONValue?) -> [Entry] {
        (value?.arrayValue ?? []).compactMap { v in
            guard let o = v.objectValue, let id = o["id"]?.stringValue, let rev = o["rev"]?.stringValue else { return nil }
            return Entry(docID: id, revID: rev)
        }
    }
}
