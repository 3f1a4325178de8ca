import CBLiteCore

/// A document ID as the tool takes it: CouchDB's name `_local/ID` reaches the local
/// (unreplicated) document ID, as the listener does; any other ID is a document.
enum DocumentAddress {
    case document(String)
    case local(String)

    static let localPrefix = "_local/"

    init(_ argument: String) {
        if argument.hasPrefix(DocumentAddress.localPrefix) {
            self = .local(String(argument.dropFirst(DocumentAddress.localPrefix.count)))
        } else {
            self = .document(argument)
        }
    }

    /// A usage error for an option that has no meaning for a local document (it has one
    /// revision, no history, no tombstone).
    func refuseForLocal(_ option: String, given: Bool) throws {
        if case .local = self, given { throw ToolError.usage("\(option) does not apply to a local document") }
    }

    /// The current body with `_id` as given on the command line (`_local/ID` for a local
    /// document, as the listener answers).
    func read(_ c: Collection, options: Collection.GetOptions = [.conflicts]) throws -> [UInt8] {
        switch self {
        case .document(let id): return try c.get(docID: id, options: options)
        case .local(let id):
            var doc = try JSONParser.parseObject(String(decoding: try c.getLocal(id: id), as: UTF8.self), what: "local document")
            doc["_id"] = .string(DocumentAddress.localPrefix + id)
            return Array(doc.jsonText.utf8)
        }
    }

    /// Saves `json` as the child of `parent` (nil: a new document); returns the new revision.
    func save(_ c: Collection, json: String, parent: String?) throws -> String {
        switch self {
        case .document(let id): return try c.put(docID: id, json: json, parent: parent).revID
        case .local(let id): return try c.putLocal(id: id, json: json, parent: parent)
        }
    }

    /// Saves `json` over whatever revision is current (none: a new document).
    func replace(_ c: Collection, json: String) throws -> String {
        switch self {
        case .document(let id): return try c.update(docID: id) { _ in json }
        case .local(let id):
            let current = try? JSONParser.parseObject(String(decoding: try c.getLocal(id: id), as: UTF8.self))
            return try c.putLocal(id: id, json: json, parent: current?["_rev"]?.stringValue)
        }
    }

    /// Deletes `parent` (nil: the current revision). Returns the tombstone's revision
    /// ("0-0" for a local document, which leaves none, as CouchDB answers).
    func delete(_ c: Collection, parent: String?) throws -> String {
        switch self {
        case .document(let id): return try c.delete(docID: id, parent: parent)
        case .local(let id):
            try c.deleteLocal(id: id, parent: parent)
            return "0-0"
        }
    }
}
