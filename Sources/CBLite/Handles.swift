import CBLiteCore

/// Opaque handles for the C ABI. A handle is a number from this table, never a raw
/// object pointer: a released, foreign or garbage pointer is simply not found, so the
/// call fails with 400 instead of touching freed memory.
final class HandleTable: @unchecked Sendable {
    static let shared = HandleTable()

    /// A handle is `base + ((generation << 24 | slot) << 4)`: it looks like an aligned
    /// pointer, finds its slot without hashing (rows are read one call at a time, so this
    /// lookup is on the hot path), and a released handle's slot gets a new generation, so
    /// the old number is never valid again.
    private struct Slot {
        var generation: UInt32 = 0
        var object: AnyObject?
    }

    private static let base: UInt = 0x5A0_0000
    private static let slotBits = 24
    private let monitor = Monitor()
    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    private var live = 0

    func register(_ object: AnyObject) -> OpaquePointer {
        monitor.locked {
            let index: Int
            if let f = freeSlots.popLast() {
                index = f
            } else {
                index = slots.count
                precondition(index < 1 << HandleTable.slotBits, "more than 16 million live handles")
                slots.append(Slot())
            }
            slots[index].generation &+= 1
            if slots[index].generation == 0 { slots[index].generation = 1 }
            slots[index].object = object
            live += 1
            let code = UInt(slots[index].generation) << HandleTable.slotBits | UInt(index)
            return OpaquePointer(bitPattern: HandleTable.base + code << 4)!
        }
    }

    /// The slot a handle names, nil when it is not a handle of this table's shape.
    private static func decode(_ handle: OpaquePointer) -> (index: Int, generation: UInt32)? {
        let v = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(handle)))
        guard v >= base, (v - base) & 0xF == 0 else { return nil }
        let code = (v - base) >> 4
        guard code >> HandleTable.slotBits <= UInt(UInt32.max) else { return nil }
        return (Int(code & (1 << UInt(slotBits) - 1)), UInt32(code >> HandleTable.slotBits))
    }

    /// The live object of a handle (caller holds the monitor).
    private func object(_ handle: OpaquePointer) -> AnyObject? {
        guard let (index, generation) = HandleTable.decode(handle), index < slots.count,
              slots[index].generation == generation else { return nil }
        return slots[index].object
    }

    func lookup<T: AnyObject>(_ handle: OpaquePointer?, as: T.Type, _ what: String) throws -> T {
        guard let handle else { throw CBLError(.badRequest, "\(what) handle is NULL") }
        guard let object = monitor.locked({ self.object(handle) }) else {
            throw CBLError(.badRequest, "invalid \(what) handle (released, or not a handle of this library)")
        }
        guard let typed = object as? T else { throw CBLError(.badRequest, "handle is not a \(what)") }
        return typed
    }

    @discardableResult
    func remove(_ handle: OpaquePointer?) -> AnyObject? {
        guard let handle else { return nil }
        return monitor.locked {
            guard let object = self.object(handle), let (index, _) = HandleTable.decode(handle) else { return nil }
            slots[index].object = nil
            freeSlots.append(index)
            live -= 1
            return object
        }
    }

    var count: Int { monitor.locked { live } }
}

func database(_ h: OpaquePointer?) throws -> Database { try HandleTable.shared.lookup(h, as: Database.self, "cbl_db") }
func collection(_ h: OpaquePointer?) throws -> Collection { try HandleTable.shared.lookup(h, as: Collection.self, "cbl_collection") }
