/// Compiled contexts kept for reuse: a design document's code is compiled once per
/// context, and a context serves one thread at a time (taken out while used, put back
/// after). Keys name the code (the design document and a digest of its functions), so a
/// changed design document gets new contexts and the old ones age out.
public final class JSEnginePool: @unchecked Sendable {
    public static let shared = JSEnginePool()

    /// Idle contexts kept in all (least recently used go first).
    let maxIdle: Int
    private let idle = LockedValue<[(key: String, engine: JSEngine)]>([])

    public init(maxIdle: Int = 32) { self.maxIdle = maxIdle }

    /// Runs `body` with a context for `key` under the current limits (see `take`). A
    /// context whose call ran out of time or memory is dropped (its heap may be
    /// half-built); one whose script only threw goes back.
    public func withEngine<R>(key: String, label: String, setUp: (JSEngine) throws -> Void,
                              _ body: (JSEngine) throws -> R) throws -> R {
        let engine = try take(key: key, label: label, setUp: setUp)
        do {
            let r = try body(engine)
            give(key: key, engine)
            return r
        } catch let failure as JSFailure {
            if case .threw = failure { give(key: key, engine) }
            throw failure
        } catch {
            give(key: key, engine)
            throw error
        }
    }

    /// A context for `key` under the current limits, the caller's alone until `give`: an
    /// idle one, or a new one that `setUp` compiles (dropped when that fails).
    public func take(key: String, label: String, setUp: (JSEngine) throws -> Void) throws -> JSEngine {
        let limits = JSLimits.current
        let reused: JSEngine? = idle.withLock { list in
            guard let i = list.lastIndex(where: { $0.key == key && $0.engine.limits == limits }) else { return nil }
            return list.remove(at: i).engine
        }
        if let reused { return reused }
        let engine = try JSEngine(limits: limits, label: label)
        try setUp(engine)
        return engine
    }

    /// Puts back a context taken for `key`.
    public func give(key: String, _ engine: JSEngine) { put(key, engine) }

    private func put(_ key: String, _ engine: JSEngine) {
        // Released outside the lock: destroying a heap takes a while.
        let evicted: [JSEngine] = idle.withLock { list in
            list.append((key, engine))
            guard list.count > maxIdle else { return [] }
            let n = list.count - maxIdle
            defer { list.removeFirst(n) }
            return list.prefix(n).map(\.engine)
        }
        _ = evicted
    }

    /// Drops the idle contexts whose key starts with `prefix` (a deleted database's).
    public func removeAll(keyPrefix prefix: String) {
        let dropped: [JSEngine] = idle.withLock { list in
            let gone = list.filter { $0.key.hasPrefix(prefix) }.map(\.engine)
            list.removeAll { $0.key.hasPrefix(prefix) }
            return gone
        }
        _ = dropped
    }

    /// Idle contexts held (tests).
    public var idleCount: Int { idle.withLock { $0.count } }
}
