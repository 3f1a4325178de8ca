import Glibc

/// Measures how much stack a piece of code uses: runs it on a new thread whose stack is
/// memory of ours, painted with a pattern first, and counts the bytes no longer painted
/// (the stack grows down from the top). The thread's own set-up is a constant part of
/// every measurement, so differences between two depths give the cost of a level.
enum StackProbe {
    private static let paint: UInt8 = 0xA5

    private final class Job {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Bytes of stack `body` used, run on a thread with a stack of `size` bytes.
    static func bytesUsed(stackSize size: Int = 16 << 20, _ body: @escaping () -> Void) -> Int {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let total = (size + page - 1) / page * page
        guard let mem = mmap(nil, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              mem != MAP_FAILED else { fatalError("mmap of \(total) bytes failed") }
        defer { munmap(mem, total) }
        memset(mem, Int32(paint), total)
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        pthread_attr_setstack(&attr, mem, total)
        let job = Unmanaged.passRetained(Job(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attr, { arg in
            let job = Unmanaged<Job>.fromOpaque(arg!).takeRetainedValue()
            job.body()
            return nil
        }, job)
        guard rc == 0 else { fatalError("pthread_create failed: \(rc)") }
        pthread_join(thread, nil)
        let bytes = mem.assumingMemoryBound(to: UInt8.self)
        var untouched = 0
        while untouched < total && bytes[untouched] == paint { untouched += 1 }
        return total - untouched
    }

    /// The stack size of the thread this is called on (glibc's pthread_getattr_np, which
    /// Glibc's module map leaves out: it is a GNU extension).
    static func currentThreadStackSize() -> Int {
        typealias GetAttr = @convention(c) (pthread_t, UnsafeMutablePointer<pthread_attr_t>) -> Int32
        guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pthread_getattr_np") else { return 0 }
        let getattr = unsafeBitCast(sym, to: GetAttr.self)
        var attr = pthread_attr_t()
        guard getattr(pthread_self(), &attr) == 0 else { return 0 }
        defer { pthread_attr_destroy(&attr) }
        var size = 0
        pthread_attr_getstacksize(&attr, &size)
        return size
    }
}
