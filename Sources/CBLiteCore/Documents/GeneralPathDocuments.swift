import Synchronization

/// Documents whose saves on their current revision take the general path because they
/// have attachments (a body without `_attachments` inherits them, which needs the row):
/// remembered so that their next updates skip the one-statement attempt, which the row's
/// flags would refuse (~10,000 instructions wasted each time; callgrind). A routing hint
/// only: a stale entry (a document purged and made again without attachments) costs the
/// general path's speed, never a different result. Bounded: emptied when full.
final class GeneralPathDocuments: Sendable {
    private let ids = LockedValue<Set<String>>([])
    /// Lets the common case, no such document, skip the lock.
    private let count = Atomic<Int>(0)
    private static let limit = 1024

    func contains(_ docID: String) -> Bool {
        count.load(ordering: .relaxed) > 0 && ids.withLock { $0.contains(docID) }
    }

    func insert(_ docID: String) {
        ids.withLock { set in
            if set.count >= GeneralPathDocuments.limit { set.removeAll() }
            set.insert(docID)
            count.store(set.count, ordering: .relaxed)
        }
    }
}
