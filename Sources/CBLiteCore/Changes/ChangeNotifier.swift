/// Delivers committed changes to observers: in commit order, after the
/// commit, never while the engine holds a lock. Batches are queued under the write
/// lock (so queue order is commit order); the first committing thread to find nobody
/// delivering becomes the deliverer and drains the queue, others leave their batch
/// to it. Buffered mode holds batches until `flush`.
public final class ChangeNotifier: @unchecked Sendable {
    public typealias Callback = ([ChangeEvent]) -> Void

    final class Observer {
        let id: Int64
        let collectionID: Int64
        let docID: String?
        let callback: Callback
        var removed = false
        var inFlight = 0
        init(id: Int64, collectionID: Int64, docID: String?, callback: @escaping Callback) {
            self.id = id
            self.collectionID = collectionID
            self.docID = docID
            self.callback = callback
        }
    }

    private let monitor = Monitor()
    private var queue: [[ChangeEvent]] = []
    private var deliverer: ThreadID?
    private var buffered = false
    private var observers: [Observer] = []
    private var nextID: Int64 = 1

    func enqueue(_ batch: [ChangeEvent]) {
        monitor.locked { queue.append(batch) }
    }

    public var isBuffered: Bool {
        get { monitor.locked { buffered } }
        set { monitor.locked { buffered = newValue } }
    }

    /// Delivers queued batches unless buffered or someone else is already delivering.
    func deliverPending() { drain(force: false) }

    /// Delivers queued batches now, even in buffered mode.
    public func flush() { drain(force: true) }

    private func drain(force: Bool) {
        let me = ThreadID.current
        let start: Bool = monitor.locked {
            if deliverer != nil || queue.isEmpty || (buffered && !force) { return false }
            deliverer = me
            return true
        }
        guard start else { return }
        while true {
            let next: ([ChangeEvent], [Observer])? = monitor.locked {
                if queue.isEmpty || (buffered && !force) {
                    deliverer = nil
                    monitor.broadcast()
                    return nil
                }
                return (queue.removeFirst(), observers)
            }
            guard let (batch, targets) = next else { return }
            for l in targets {
                let events = batch.filter { $0.collectionID == l.collectionID && (l.docID == nil || l.docID == $0.docID) }
                if events.isEmpty { continue }
                let go: Bool = monitor.locked {
                    if l.removed { return false }
                    l.inFlight += 1
                    return true
                }
                guard go else { continue }
                Loggers.changes.debug("delivering \(events.count) change(s) to an observer")
                l.callback(events)
                monitor.locked { l.inFlight -= 1; monitor.broadcast() }
            }
        }
    }

    /// Waits until every queued batch has been delivered. Returns false on timeout.
    /// Returns at once in buffered mode or when called by the delivering thread itself.
    public func waitIdle(timeoutMs: Int) -> Bool {
        deliverPending()
        let me = ThreadID.current
        let deadline = MonotonicTime.now().adding(milliseconds: timeoutMs)
        return monitor.locked {
            while !buffered && (deliverer != nil || !queue.isEmpty) {
                if deliverer == me { return true }
                // Queued with no deliverer yet: its committer is about to deliver; the
                // deliverer broadcasts when the queue is empty.
                if !monitor.wait(until: deadline) && MonotonicTime.now() >= deadline { return false }
            }
            return true
        }
    }

    func addObserver(collectionID: Int64, docID: String?, callback: @escaping Callback) -> Int64 {
        monitor.locked {
            let id = nextID
            nextID += 1
            observers.append(Observer(id: id, collectionID: collectionID, docID: docID, callback: callback))
            return id
        }
    }

    /// Removes an observer; returns once no call of it is running, unless the caller is
    /// that call (a callback removing its own observer). Unknown IDs are ignored.
    func removeObserver(_ id: Int64) {
        let me = ThreadID.current
        monitor.locked {
            guard let i = observers.firstIndex(where: { $0.id == id }) else { return }
            let l = observers.remove(at: i)
            l.removed = true
            while l.inFlight > 0 && deliverer != me { _ = monitor.wait(until: nil) }
        }
    }

    var observerCount: Int { monitor.locked { observers.count } }
}
