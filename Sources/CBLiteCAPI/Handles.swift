import CBLiteCore

/// Opaque handles for the C ABI. A handle is a number from this table, never a raw
/// object pointer: a released, foreign or garbage pointer is simply not found, so the
/// call fails with 400 instead of touching freed memory.
final class HandleTable: Sendable {
    static let shared = HandleTable()

    /// A handle is `base + ((generation << 24 | slot) << 4)`: it looks like an aligned
    /// pointer, finds its slot without hashing (rows are read one call at a time, so this
    /// lookup is on the hot path), and a released handle's slot gets a new generation, so
    /// the old number is never valid again.
    private struct Slot {
        var generation: UInt32 = 0
        var object: AnyObject?
    }

    private struct Table: @unchecked Sendable {
        var slots: [Slot] = []
        var freeSlots: [Int] = []
        var live = 0

        /// The live object of a handle.
        func object(_ handle: OpaquePointer) -> AnyObject? {
            guard let (index, generation) = HandleTable.decode(handle), index < slots.count,
                  slots[index].generation == generation else { return nil }
            return slots[index].object
        }
    }

    /// An object carried out of the lock (objects are shared across threads by design:
    /// each class a handle names does its own locking).
    private struct Found: @unchecked Sendable { let object: AnyObject? }

    private static let base: UInt = 0x5A0_0000
    private static let slotBits = 24
    private let table = LockedValue(Table())

    func register(_ object: AnyObject) -> OpaquePointer {
        table.withLock { t in
            let index: Int
            if let f = t.freeSlots.popLast() {
                index = f
            } else {
                index = t.slots.count
                precondition(index < 1 << HandleTable.slotBits, "more than 16 million live handles")
                t.slots.append(Slot())
            }
            t.slots[index].generation &+= 1
            if t.slots[index].generation == 0 { t.slots[index].generation = 1 }
            t.slots[index].object = object
            t.live += 1
            let code = UInt(t.slots[index].generation) << HandleTable.slotBits | UInt(index)
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

    func lookup<T: AnyObject>(_ handle: OpaquePointer?, as: T.Type, _ what: String) throws -> T {
        guard let handle else { throw CBLError(.badRequest, "\(what) handle is NULL") }
        guard let object = table.withLock({ Found(object: $0.object(handle)) }).object else {
            throw CBLError(.badRequest, "invalid \(what) handle (released, or not a handle of this library)")
        }
        guard let typed = object as? T else { throw CBLError(.badRequest, "handle is not a \(what)") }
        return typed
    }

    @discardableResult
    func remove(_ handle: OpaquePointer?) -> AnyObject? {
        guard let handle else { return nil }
        return table.withLock { t in
            guard let object = t.object(handle), let (index, _) = HandleTable.decode(handle) else { return Found(object: nil) }
            t.slots[index].object = nil
            t.freeSlots.append(index)
            t.live -= 1
            return Found(object: object)
        }.object
    }

    var count: Int { table.withLock { $0.live } }
}

func database(_ h: OpaquePointer?) throws -> Database { try HandleTable.shared.lookup(h, as: Database.self, "cbl_db") }
func collection(_ h: OpaquePointer?) throws -> Collection { try HandleTable.shared.lookup(h, as: Collection.self, "cbl_collection") }
