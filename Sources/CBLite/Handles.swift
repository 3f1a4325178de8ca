import CBLiteCore

/// Opaque handles for the C ABI. A handle is a number from this table, never a raw
/// object pointer: a released, foreign or garbage pointer is simply not found, so the
/// call fails with 400 instead of touching freed memory.
final class HandleTable: @unchecked Sendable {
    static let shared = HandleTable()

    private let monitor = Monitor()
    private var objects: [UInt: AnyObject] = [:]
    private var next: UInt = 0x5A0_0000

    func register(_ object: AnyObject) -> OpaquePointer {
        monitor.locked {
            next += 16                     // looks like an aligned pointer; never reused
            objects[next] = object
            return OpaquePointer(bitPattern: next)!
        }
    }

    func lookup<T: AnyObject>(_ handle: OpaquePointer?, as: T.Type, _ what: String) throws -> T {
        guard let handle else { throw CBLError(.badRequest, "\(what) handle is NULL") }
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(handle)))
        guard let object = monitor.locked({ objects[key] }) else {
            throw CBLError(.badRequest, "invalid \(what) handle (released, or not a handle of this library)")
        }
        guard let typed = object as? T else { throw CBLError(.badRequest, "handle is not a \(what)") }
        return typed
    }

    @discardableResult
    func remove(_ handle: OpaquePointer?) -> AnyObject? {
        guard let handle else { return nil }
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(handle)))
        return monitor.locked { objects.removeValue(forKey: key) }
    }

    var count: Int { monitor.locked { objects.count } }
}

func database(_ h: OpaquePointer?) throws -> Database { try HandleTable.shared.lookup(h, as: Database.self, "cbl_db") }
func collection(_ h: OpaquePointer?) throws -> Collection { try HandleTable.shared.lookup(h, as: Collection.self, "cbl_collection") }
