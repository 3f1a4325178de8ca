import Glibc

/// The one way the library's long-running services (live queries, expiration timers,
/// replicators) run on a thread of their own: started with a body, joined when the
/// service stops — or detached when the stop comes from that thread itself (a callback
/// that stops its own service), which must not wait for itself.
public final class ServiceThread: @unchecked Sendable {
    private var thread: pthread_t

    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Starts `body` on a new thread; throws when the system has no thread to give.
    public init(_ body: @escaping () -> Void) throws {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var t = pthread_t()
        let rc = pthread_create(&t, nil, { arg in
            Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue().body()
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw CBLError.internalError("cannot start a thread (error \(rc))")
        }
        thread = t
    }

    /// Whether the caller is this thread.
    public var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

    /// Waits for the body to return (detaches instead when called from the thread itself).
    /// Call once.
    public func join() {
        if isCurrent { pthread_detach(thread) } else { pthread_join(thread, nil) }
    }

    /// Stops a service whose thread sleeps on `monitor`: `markStopped` runs under the lock
    /// (sets the service's flag and hands over its thread), then the thread is woken and
    /// joined.
    public static func stop(_ monitor: Monitor, _ markStopped: () -> ServiceThread?) {
        let t: ServiceThread? = monitor.locked {
            let t = markStopped()
            monitor.broadcast()
            return t
        }
        t?.join()
    }

    /// Runs `body` on a thread nobody joins (a one-off task), or here if none can start.
    public static func detached(_ body: @escaping () -> Void) {
        var t = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        if pthread_create(&t, nil, { arg in
            Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue().body()
            return nil
        }, box) == 0 {
            pthread_detach(t)
        } else {
            Unmanaged<Box>.fromOpaque(box).takeRetainedValue().body()
        }
    }
}
