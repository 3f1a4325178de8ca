import Glibc

/// Canonicalizes JSON text in one pass, without building a value tree: the save path's
/// hot loop (parse + sort keys + re-serialize was ~30% of an insert). Accepts exactly
/// what JSONParser accepts and produces exactly JSONWriter.canonical(JSONParser.parse(x))
/// — a differential test holds the two to that.
public struct JSONCanonicalizer {
    /// Canonicalizes a JSON object. Top-level members whose key starts with "_" are
    /// parsed into values and handed to `metadata`, which returns whether to keep the
    /// member in the output.
    public static func canonicalizeObject(_ bytes: UnsafeBufferPointer<UInt8>, what: String = "body",
                                          metadata: (String, JSONValue) throws -> Bool) throws -> [UInt8] {
        try withCanonicalizer(bytes) { c in
            c.skipSpace()
            guard c.peek() == UInt8(ascii: "{") else {
                // Not an object: report a syntax error first, as the parser would.
                _ = try JSONParser.parse(bytes: bytes)
                throw CBLError.badRequest("\(what) must be a JSON object")
            }
            try withoutActuallyEscaping(metadata) { try c.object(depth: 1, metadata: $0) }
        }
    }

    /// Canonical form of any JSON value.
    public static func canonicalize(_ bytes: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        try withCanonicalizer(bytes) { c in
            c.skipSpace()
            try c.value(depth: 0)
        }
    }

    /// Runs `write` on a canonicalizer of `bytes`, checks that the input ends there and
    /// returns the output. The key and member stacks start on this stack frame, and the
    /// output has room for an object's second copy while its members are reordered: no
    /// allocation but the output's for a body of up to 16 members at a level (callgrind:
    /// three allocations an update fewer).
    private static func withCanonicalizer(_ bytes: UnsafeBufferPointer<UInt8>,
                                          _ write: (inout JSONCanonicalizer) throws -> Void) throws -> [UInt8] {
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 256) { keyStorage in
            try withUnsafeTemporaryAllocation(of: Member.self, capacity: 16) { memberStorage in
                var c = JSONCanonicalizer(bytes, keys: RawByteBuffer(startingIn: keyStorage),
                                          members: MemberStack(startingIn: memberStorage))
                defer { c.deallocate() }        // on every way out, the early ones included
                try write(&c)
                c.skipSpace()
                guard c.pos == c.end else { throw c.error("unexpected data after the JSON value") }
                return Array(c.out.bytes)
            }
        }
    }

    private let base: UnsafePointer<UInt8>?
    private let input: UnsafeBufferPointer<UInt8>
    private var pos = 0
    private let end: Int
    private var out: RawByteBuffer
    private var keys: RawByteBuffer          // decoded keys with escapes, of the objects being written
    private var members: MemberStack         // the members of the objects being written, innermost last

    private init(_ bytes: UnsafeBufferPointer<UInt8>, keys: RawByteBuffer, members: MemberStack) {
        input = bytes
        base = bytes.baseAddress
        end = bytes.count
        out = RawByteBuffer(capacity: 2 * bytes.count + 16)
        self.keys = keys
        self.members = members
    }

    /// Frees the buffers (once, by the entry point that made this canonicalizer).
    private func deallocate() {
        out.deallocate()
        keys.deallocate()
        members.deallocate()
    }

    private func error(_ message: String) -> CBLError { CBLError.badRequest("invalid JSON: \(message) at byte \(pos)") }

    @inline(__always) private func peek() -> UInt8? { pos < end ? base![pos] : nil }

    @inline(__always) private mutating func skipSpace() {
        while pos < end {
            let c = base![pos]
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { pos += 1 } else { break }
        }
    }

    private mutating func literal(_ text: StaticString) throws {
        let n = text.utf8CodeUnitCount
        guard end - pos >= n else { throw error("truncated literal") }
        for i in 0..<n where base![pos + i] != text.utf8Start[i] { throw error("invalid literal") }
        out.append(UnsafeBufferPointer(start: text.utf8Start, count: n))
        pos += n
    }

    private mutating func value(depth: Int) throws {
        guard let c = peek() else { throw error("unexpected end of input") }
        switch c {
        case UInt8(ascii: "{"):
            guard depth < JSONParser.maxDepth else { throw error("nesting deeper than \(JSONParser.maxDepth)") }
            try object(depth: depth + 1, metadata: nil)
        case UInt8(ascii: "["):
            guard depth < JSONParser.maxDepth else { throw error("nesting deeper than \(JSONParser.maxDepth)") }
            try array(depth: depth + 1)
        case UInt8(ascii: "\""):
            if let raw = try plainString() {
                // No escapes: the literal, quotes included, is already canonical.
                out.append(UnsafeBufferPointer(rebasing: input[(raw.lowerBound - 1)...raw.upperBound]))
            } else {
                let k = keys.count
                try escapedStringIntoKeys()
                writeString(keysFrom: k)
                keys.truncate(to: k)
            }
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
        default: throw error("unexpected character")
        }
    }

    /// One member of an object being written: its key (decoded: in `input` when the key
    /// has no escapes, else in `keys`) and its bytes in `out`.
    private struct Member {
        package var keyStart: Int, keyEnd: Int
        package var keyInInput: Bool
        package var outStart: Int, outEnd: Int
    }

    /// The members of the objects being written, one stack for the whole document: an
    /// object's members are the top of it while it is written (no array, so no
    /// allocation, per object; callgrind: ~1,000 instructions an update).
    private struct MemberStack {
        private(set) var base: UnsafeMutablePointer<Member>
        private(set) var count = 0
        private var capacity: Int
        private var owned = false                // false while in the caller's storage

        package init(startingIn storage: UnsafeMutableBufferPointer<Member>) {
            base = storage.baseAddress!
            capacity = storage.count
        }

        package func deallocate() { if owned { base.deallocate() } }

        @inline(__always) package mutating func push(_ m: Member) {
            if count == capacity {
                let grown = UnsafeMutablePointer<Member>.allocate(capacity: capacity * 2)
                grown.moveInitialize(from: base, count: count)
                deallocate()
                base = grown
                capacity *= 2
                owned = true
            }
            (base + count).initialize(to: m)
            count += 1
        }

        @inline(__always) package mutating func truncate(to n: Int) { count = n }
    }

    /// A member's decoded key.
    @inline(__always)
    private func keyBytes(_ m: Member) -> UnsafePointer<UInt8> {
        m.keyInInput ? base! + m.keyStart : UnsafePointer(keys.base) + m.keyStart
    }

    private mutating func object(depth: Int, metadata: ((String, JSONValue) throws -> Bool)?) throws {
        pos += 1
        let objectStart = out.count
        let keysBase = keys.count
        let first = members.count
        defer { members.truncate(to: first) }
        out.append(UInt8(ascii: "{"))
        skipSpace()
        if peek() == UInt8(ascii: "}") { pos += 1; out.append(UInt8(ascii: "}")); return }
        var sorted = true
        while true {
            skipSpace()
            guard peek() == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let commaPos = out.count
            if members.count > first { out.append(UInt8(ascii: ",")) }
            let memberStart = out.count
            var m = Member(keyStart: 0, keyEnd: 0, keyInInput: true, outStart: memberStart, outEnd: 0)
            if let raw = try plainString() {
                // No escapes: the decoded key is the raw bytes, and the literal is canonical.
                m.keyStart = raw.lowerBound
                m.keyEnd = raw.upperBound
                out.append(UnsafeBufferPointer(rebasing: input[(raw.lowerBound - 1)...raw.upperBound]))
            } else {
                m.keyInInput = false
                m.keyStart = keys.count
                try escapedStringIntoKeys()
                m.keyEnd = keys.count
                writeString(keysFrom: m.keyStart, to: m.keyEnd)
            }
            skipSpace()
            guard peek() == UInt8(ascii: ":") else { throw error("expected ':'") }
            pos += 1
            skipSpace()
            out.append(UInt8(ascii: ":"))
            let valueStart = pos
            try value(depth: depth)
            var keep = true
            if let metadata, m.keyEnd > m.keyStart, keyBytes(m)[0] == UInt8(ascii: "_") {
                let key = String(decoding: UnsafeBufferPointer(start: keyBytes(m), count: m.keyEnd - m.keyStart), as: UTF8.self)
                let v = try JSONParser.parse(bytes: UnsafeBufferPointer(rebasing: input[valueStart..<pos]))
                keep = try metadata(key, v)
            }
            if keep {
                m.outEnd = out.count
                if sorted && members.count > first && !keyLess(members.base[members.count - 1], m) { sorted = false }
                members.push(m)
            } else {
                out.truncate(to: commaPos)
            }
            skipSpace()
            guard let c = peek() else { throw error("unterminated object") }
            pos += 1
            if c == UInt8(ascii: "}") { break }
            guard c == UInt8(ascii: ",") else { throw error("expected ',' or '}'") }
        }
        if !sorted {   // else: strictly ascending, so no duplicates either
            try reorder(UnsafeMutableBufferPointer(start: members.base + first, count: members.count - first),
                        objectStart: objectStart)
        }
        out.append(UInt8(ascii: "}"))
        keys.truncate(to: keysBase)
    }

    /// Sorts an object's members by key (a stable insertion sort: objects are small),
    /// rejects a duplicate key, and rewrites the members in that order after `{`.
    private mutating func reorder(_ m: UnsafeMutableBufferPointer<Member>, objectStart: Int) throws {
        for i in 1..<m.count {
            let x = m[i]
            var j = i
            while j > 0 && keyLess(x, m[j - 1]) { m[j] = m[j - 1]; j -= 1 }
            m[j] = x
        }
        for i in 1..<m.count where !keyLess(m[i - 1], m[i]) {
            let key = String(decoding: UnsafeBufferPointer(start: keyBytes(m[i]), count: m[i].keyEnd - m[i].keyStart), as: UTF8.self)
            throw error("duplicate key \"\(key)\"")
        }
        // The members in order after the written ones, then moved down over them (the
        // same bytes and commas, so the same length).
        let unsortedStart = objectStart + 1, sortedStart = out.count
        for i in 0..<m.count {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.appendOwn(m[i].outStart..<m[i].outEnd)
        }
        let length = out.count - sortedStart
        (out.base + unsortedStart).update(from: out.base + sortedStart, count: length)
        out.truncate(to: unsortedStart + length)
    }

    /// Key order: UTF-8 bytes, a prefix first.
    @inline(__always)
    private func keyLess(_ a: Member, _ b: Member) -> Bool {
        let la = a.keyEnd - a.keyStart, lb = b.keyEnd - b.keyStart
        let n = min(la, lb)
        guard n > 0 else { return la < lb }
        let pa = keyBytes(a), pb = keyBytes(b)
        // Most keys differ in their first byte: decided here without a call to memcmp.
        if pa[0] != pb[0] { return pa[0] < pb[0] }
        let r = memcmp(pa, pb, n)
        return r != 0 ? r < 0 : la < lb
    }

    private mutating func array(depth: Int) throws {
        pos += 1
        out.append(UInt8(ascii: "["))
        skipSpace()
        if peek() == UInt8(ascii: "]") { pos += 1; out.append(UInt8(ascii: "]")); return }
        while true {
            skipSpace()
            try value(depth: depth)
            skipSpace()
            guard let c = peek() else { throw error("unterminated array") }
            pos += 1
            if c == UInt8(ascii: "]") { break }
            guard c == UInt8(ascii: ",") else { throw error("expected ',' or ']'") }
            out.append(UInt8(ascii: ","))
        }
        out.append(UInt8(ascii: "]"))
    }

    /// At a string literal without escapes: validates it, moves past it and returns its
    /// content's range in `input` (the quotes are just outside it). nil, not moved, when the
    /// literal has escapes (`escapedStringIntoKeys` decodes those).
    /// (A byte loop, not JSONWriter.escapeFreePrefix's 8-byte scan: keys and values of
    /// bodies are short, and that scan plus a separate UTF-8 check measured +4% on inserts.)
    private mutating func plainString() throws -> Range<Int>? {
        let start = pos + 1
        var i = start
        var high: UInt8 = 0
        while i < end {
            let c = base![i]
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") { break }
            if c < 0x20 { pos = i; throw error("control character in string") }
            high |= c
            i += 1
        }
        guard i < end else { pos = i; throw error("unterminated string") }
        guard base![i] == UInt8(ascii: "\"") else { return nil }
        if high >= 0x80 {
            guard UTF8Validation.isValid(UnsafeBufferPointer(rebasing: input[start..<i])) else {
                pos = i
                throw error("invalid UTF-8 in string")
            }
        }
        pos = i + 1
        return start..<i
    }

    /// Decodes a string literal with escapes onto `keys`, with the parser's exact rules.
    private mutating func escapedStringIntoKeys() throws {
        var p = JSONParserProxy(input: input, pos: pos)
        var decoded = try p.string()
        pos = p.pos
        decoded.withUTF8 { keys.append($0) }
    }

    private mutating func writeString(keysFrom start: Int, to stop: Int? = nil) {
        let stop = stop ?? keys.count
        out.append(UInt8(ascii: "\""))
        do {
            let k = keys.bytes
            var runStart = start
            for i in start..<stop {
                let c = k[i]
                guard c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 else { continue }
                if i > runStart { out.append(UnsafeBufferPointer(rebasing: k[runStart..<i])) }
                var w = JSONWriter(capacity: 8)
                w.writeString(String(decoding: [c], as: UTF8.self))
                w.bytes.dropFirst().dropLast().withUnsafeBufferPointer { out.append($0) }
                runStart = i + 1
            }
            if runStart < stop { out.append(UnsafeBufferPointer(rebasing: k[runStart..<stop])) }
        }
        out.append(UInt8(ascii: "\""))
    }

    private mutating func number() throws {
        let start = pos
        guard let isInteger = JSONParser.scanNumber(base!, &pos, end) else { throw error("invalid number") }
        let raw = UnsafeBufferPointer(rebasing: input[start..<pos])
        // An integer literal is already canonical (except "-0"): JSON allows no leading
        // zeros, and one beyond Int64 is kept as written (JSONValue.bigInteger).
        if isInteger {
            if raw.count == 2 && raw[0] == UInt8(ascii: "-") && raw[1] == UInt8(ascii: "0") {
                out.append(UInt8(ascii: "0"))
            } else {
                out.append(raw)
            }
            return
        }
        if !isInteger && JSONCanonicalizer.isCanonicalDecimal(raw) {
            out.append(raw)
            return
        }
        if !isInteger, let n = JSONCanonicalizer.canonicalPrefixLength(raw) {
            out.append(UnsafeBufferPointer(rebasing: raw[..<n]))
            return
        }
        let text = String(decoding: raw, as: UTF8.self)
        var w = JSONWriter(capacity: 24)
        guard let d = Double(text), d.isFinite else { throw error("number out of range") }
        w.write(.double(d))
        w.bytes.withUnsafeBufferPointer { out.append($0) }
    }
}

extension JSONCanonicalizer {
    /// Whether a non-integer literal is already what JSONWriter writes for its Double
    /// (Swift's shortest round-trip form): `-?(0|[1-9][0-9]*)\.[0-9]*[1-9]`, no exponent,
    /// at most 15 significant digits (two such decimals never share a Double, so the
    /// shortest form has exactly these digits), and below 1 at most three zeros after the
    /// point (from 0.00001 on, Swift writes an exponent). Parsing and re-printing such a
    /// number was most of the canonicalizer's cost on bodies with decimals (callgrind).
    package static func isCanonicalDecimal(_ raw: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = raw.first == UInt8(ascii: "-") ? 1 : 0
        let intStart = i
        while i < raw.count, raw[i] >= 0x30 && raw[i] <= 0x39 { i += 1 }
        let intDigits = i - intStart
        guard intDigits > 0, intDigits == 1 || raw[intStart] != 0x30,
              i < raw.count, raw[i] == UInt8(ascii: ".") else { return false }
        i += 1
        let fracStart = i
        while i < raw.count, raw[i] >= 0x30 && raw[i] <= 0x39 { i += 1 }
        let fracDigits = i - fracStart
        guard i == raw.count, fracDigits > 0, raw[raw.count - 1] != 0x30 else { return false }   // no exponent, no trailing zero
        if intDigits == 1 && raw[intStart] == 0x30 {
            var zeros = 0
            while raw[fracStart + zeros] == 0x30 { zeros += 1 }
            return zeros <= 3 && fracDigits - zeros <= 15
        }
        return intDigits + fracDigits <= 15
    }

    /// For a decimal literal whose fraction ends in zeros ("70.0", "12.50"), the length of
    /// the prefix that is JSONWriter's form of its Double: the integer part when the
    /// fraction is all zeros ("70": integral Doubles print as integers; at most 15 digits,
    /// so exact), else the literal without the zeros when that is a canonical decimal
    /// ("12.5"). nil otherwise ("-0.0" among them). Such numbers took the parse and
    /// re-print path, ~1,500 instructions each (callgrind).
    package static func canonicalPrefixLength(_ raw: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let point = raw.firstIndex(of: UInt8(ascii: ".")), raw.last == 0x30 else { return nil }
        var end = raw.count
        while end > point + 1 && raw[end - 1] == 0x30 { end -= 1 }
        for i in (point + 1)..<end where !(raw[i] >= 0x30 && raw[i] <= 0x39) { return nil }   // an exponent
        if end == point + 1 {
            let negative = raw[0] == UInt8(ascii: "-")
            let intDigits = point - (negative ? 1 : 0)
            guard intDigits >= 1, intDigits <= 15, !(negative && intDigits == 1 && raw[1] == 0x30) else { return nil }
            return point
        }
        return isCanonicalDecimal(UnsafeBufferPointer(rebasing: raw[..<end])) ? end : nil
    }
}

/// Lets the canonicalizer decode escaped strings with the parser's exact rules.
private struct JSONParserProxy {
    package let input: UnsafeBufferPointer<UInt8>
    package var pos: Int

    package mutating func string() throws -> String {
        // Find the literal's end (a quote not escaped), then parse it as a JSON value.
        var i = pos + 1
        while i < input.count {
            let c = input[i]
            if c == UInt8(ascii: "\\") { i += 2; continue }
            if c == UInt8(ascii: "\"") { break }
            i += 1
        }
        guard i < input.count else { throw CBLError.badRequest("invalid JSON: unterminated string at byte \(pos)") }
        let v = try JSONParser.parse(bytes: UnsafeBufferPointer(rebasing: input[pos...i]))
        pos = i + 1
        return v.stringValue ?? ""
    }
}
