import Glibc
#if CBLITE_FAULT_INJECTION
import CSQLCipher
#endif

/// The attachment store's fault points: each write, sync, rename and directory creation
/// of its files passes here. In test builds (CBLITE_FAULT_INJECTION, debug: Package.swift)
/// each asks the fault injector, which SQLite's VFS shim shares
/// (CSQLCipher/include/cblite_faults.h: one counter, one owner), whether to fail as a
/// full disk or an I/O error would; inert until a test arms it. In release builds `call`
/// is the system call alone.
enum FaultPoint {
    /// The numbers of cblite_faults.h's CBLITE_FAULT_*.
    enum Kind: Int32 { case write = 0, sync = 1, truncate = 2, rename = 3, create = 4 }

    /// Runs the system call `body`, or fails it (-1, errno set) when the injector says so.
    @inline(__always)
    static func call<T: BinaryInteger>(_ kind: Kind, _ body: () -> T) -> T {
        #if CBLITE_FAULT_INJECTION
        let injected = cblite_fault_point(kind.rawValue)
        if injected != 0 {
            errno = injected
            return -1
        }
        #endif
        return body()
    }
}

#if CBLITE_FAULT_INJECTION
/// The test side of the injector (see FaultPoint): arm it to fail the N-th fault point of
/// SQLite's files and the attachment store, sweep N over a workload.
enum FaultInjector {
    /// The `failAt`-th point from now (1-based) fails with `errno` (ENOSPC, EIO); when
    /// `sticky`, every later one too, until `disarm`. failAt 0: count only.
    static func arm(failAt: Int, errno: Int32, sticky: Bool) {
        cblite_faults_arm(Int64(failAt), errno, sticky ? 1 : 0)
    }

    /// Space is back: nothing fails any more.
    static func disarm() { cblite_faults_disarm() }

    /// Fault points passed since the last arm.
    static var count: Int { Int(cblite_faults_count()) }

    /// Faults injected since the last arm.
    static var injected: Int { Int(cblite_faults_injected()) }
}
#endif
