/// Where a page of hits ended: the last hit's score (its bits, exact) and sequence, as
/// base64 of a JSON array.
struct FullTextBookmark {
    let score: Double
    let sequence: Int64

    var text: String {
        Base64.encode(JSONWriter.ordered(.array([.int(Int64(bitPattern: score.bitPattern)), .int(sequence)])))
    }

    init(score: Double, sequence: Int64) { self.score = score; self.sequence = sequence }

    init(_ text: String) throws {
        guard let bytes = Base64.decode(text),
              let v = try? bytes.withUnsafeBufferPointer({ try JSONParser.parse(bytes: $0) }),
              case .array(let a) = v, a.count == 2, case .int(let bits) = a[0], case .int(let seq) = a[1] else {
            throw CBLError.badRequest("invalid bookmark")
        }
        score = Double(bitPattern: UInt64(bitPattern: bits))
        sequence = seq
    }
}
