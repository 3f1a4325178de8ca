/// Finding a byte pattern in a buffer (multipart delimiters, header ends). Patterns are
/// short, so a first-byte scan then a compare is enough.
enum ByteSearch {
    static func find(_ pattern: [UInt8], in buffer: [UInt8], from start: Int) -> Int? {
        guard !pattern.isEmpty, buffer.count - start >= pattern.count else { return nil }
        let first = pattern[0]
        var i = start
        let last = buffer.count - pattern.count
        while i <= last {
            guard let j = buffer[i...last].firstIndex(of: first) else { return nil }
            var k = 1
            while k < pattern.count && buffer[j + k] == pattern[k] { k += 1 }
            if k == pattern.count { return j }
            i = j + 1
        }
        return nil
    }

    static func hasPrefix(_ buffer: [UInt8], at start: Int, _ pattern: [UInt8]) -> Bool {
        guard buffer.count - start >= pattern.count else { return false }
        for k in 0..<pattern.count where buffer[start + k] != pattern[k] { return false }
        return true
    }
}
