/// A growable run of bytes (on the heap, or first in storage its caller lends) for the save path's one-pass writers (not NIO's
/// ByteBuffer: no reference counting, and its owner frees it). Appending a
/// few bytes is a capacity check and a copy; `Array.append(contentsOf:)` cost ~150
/// instructions a call in the canonicalizer's loop (callgrind). It is a plain value over
/// a pointer with no deinit: its owner calls `deallocate()` exactly once, and copies of it
/// must not outlive that (the canonicalizer keeps it private and frees it on exit).
package struct RawByteBuffer {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int
    private var owned = true                 // false while it writes into its caller's storage

    package init(capacity: Int) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    /// Starts in `storage` (say, the caller's stack), which it does not free; it moves to
    /// the heap only when that is too small.
    package init(startingIn storage: UnsafeMutableBufferPointer<UInt8>) {
        base = storage.baseAddress!
        capacity = storage.count
        owned = false
    }

    package func deallocate() { if owned { base.deallocate() } }

    @inline(__always) package mutating func append(_ byte: UInt8) {
        if count == capacity { grow(to: count + 1) }
        base[count] = byte
        count += 1
    }

    @inline(__always) package mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let p = bytes.baseAddress, bytes.count > 0 else { return }
        if count + bytes.count > capacity { grow(to: count + bytes.count) }
        (base + count).update(from: p, count: bytes.count)
        count += bytes.count
    }

    /// Appends bytes `range` of this buffer itself (safe across a reallocation).
    package mutating func appendOwn(_ range: Range<Int>) {
        if count + range.count > capacity { grow(to: count + range.count) }
        (base + count).update(from: base + range.lowerBound, count: range.count)
        count += range.count
    }

    /// Drops everything from `length` on.
    @inline(__always) package mutating func truncate(to length: Int) { count = length }

    package var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    private mutating func grow(to needed: Int) {
        var c = capacity * 2
        while c < needed { c *= 2 }
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: c)
        grown.update(from: base, count: count)
        deallocate()
        base = grown
        capacity = c
        owned = true
    }
}
