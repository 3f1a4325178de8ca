/// A `bookmark`: where the previous page's last result was in the scan — its index key
/// and document ID — as base64 of `[key, docid]`. CouchDB's are Erlang terms, so the two
/// are not interchangeable; each reads its own.
struct Bookmark {
    let key: JSONValue
    let docID: String

    var text: String { Base64.encode(JSONWriter.ordered(.array([key, .string(docID)]))) }

    init(key: JSONValue, docID: String) { self.key = key; self.docID = docID }

    init(_ text: String) throws {
        guard let bytes = Base64.decode(text),
              let v = try? bytes.withUnsafeBufferPointer({ try JSONParser.parse(bytes: $0) }),
              case .array(let a) = v, a.count == 2, case .string(let id) = a[1] else {
            throw MangoError(400, "invalid_bookmark", "Invalid bookmark value: \(String(decoding: JSONWriter.ordered(.string(text)), as: UTF8.self))")
        }
        key = a[0]
        docID = id
    }
}
