import Glibc

/// What a rendered text is written into: storage made at the text's final size and filled
/// in place. A document read renders straight into what its caller receives, so the
/// body is copied once between SQLite's page and the caller (into a Swift array, it was
/// copied into the array, then again into the C caller's malloc'ed string).
public protocol TextOutput {
    /// A text of exactly `count` bytes, written by `fill` at the pointer it is given.
    static func make(count: Int, _ fill: (UnsafeMutablePointer<UInt8>) -> Void) -> Self
}

extension TextOutput {
    /// The text `bytes`, copied.
    public static func copying(_ bytes: [UInt8]) -> Self {
        make(count: bytes.count) { p in
            bytes.withUnsafeBufferPointer { if let b = $0.baseAddress { p.update(from: b, count: $0.count) } }
        }
    }
}

extension Array: TextOutput where Element == UInt8 {
    public static func make(count: Int, _ fill: (UnsafeMutablePointer<UInt8>) -> Void) -> [UInt8] {
        guard count > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { buf, initialized in
            fill(buf.baseAddress!)
            initialized = count
        }
    }
}

/// A malloc'ed, NUL-terminated text (no NUL inside: it is JSON). Whoever takes `pointer`
/// owns it and frees it with `free` (the C ABI hands it to its caller, who calls
/// cbl_free). Nothing frees it on its own.
public struct MallocedText: TextOutput {
    public let pointer: UnsafeMutablePointer<CChar>
    public let count: Int

    public static func make(count: Int, _ fill: (UnsafeMutablePointer<UInt8>) -> Void) -> MallocedText {
        // As everywhere in Swift, running out of memory ends the process.
        guard let raw = malloc(count + 1) else { fatalError("out of memory (\(count + 1) bytes)") }
        let p = raw.assumingMemoryBound(to: UInt8.self)
        fill(p)
        p[count] = 0
        return MallocedText(pointer: raw.assumingMemoryBound(to: CChar.self), count: count)
    }
}
