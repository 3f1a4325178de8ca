import ArgumentParser
import CBLiteCore
import Glibc

struct Edit: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Edit a document in $VISUAL or $EDITOR (default vi) and save it on the revision you edited.",
        discussion: """
            The document is saved as a child of the revision that was opened: when someone else \
            saved it meanwhile, nothing is saved, the edited copy is kept and its path printed \
            (exit 3, conflict). An unchanged file saves nothing. A new ID creates the document.
            """)
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Document ID (_local/ID: a local document).") var docID: String

    func run() throws {
        let address = DocumentAddress(docID)
        try db.withCollection { _, c in
            var parent: String?
            var body = JSONObject()
            do {
                let current = try JSONParser.parseObject(String(decoding: try address.read(c, options: []), as: UTF8.self), what: "document")
                parent = current["_rev"]?.stringValue
                for (k, v) in current.members where k != "_id" && k != "_rev" { body[k] = v }
            } catch let e as CBLError where e.status == .notFound {}
            let original = pretty(.object(body)) + "\n"
            var template = Array("/tmp/cblite-edit-XXXXXX.json".utf8CString)
            let fd = template.withUnsafeMutableBufferPointer { mkstemps($0.baseAddress!, 5) }
            guard fd >= 0 else { throw CBLError.internalError("cannot create a temporary file: \(String(cString: strerror(errno)))") }
            let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
            close(fd)
            let file = try OutputFile(path)
            try file.write(Array(original.utf8))
            try file.close()
            let editor = Secrets.env("VISUAL") ?? Secrets.env("EDITOR") ?? "vi"
            let status = system("\(editor) '\(path.replacingOccurrences(of: "'", with: "'\\''"))'")
            guard status == 0 else {
                throw CBLError.internalError("the editor (\(editor)) failed (status \(status)); your copy is in \(path)")
            }
            let edited = String(decoding: try readAll(path), as: UTF8.self)
            if edited == original {
                unlink(path)
                if db.json { print(JSONObject([("id", .string(docID)), ("changed", .bool(false))]).jsonText) } else { print("unchanged") }
                return
            }
            do {
                let revID = try address.save(c, json: edited, parent: parent)
                unlink(path)
                if db.json { print(JSONObject([("id", .string(docID)), ("rev", .string(revID)), ("changed", .bool(true))]).jsonText) }
                else { print(revID) }
            } catch let e as CBLError {
                throw CBLError(e.status, "\(e.message); nothing was saved, your copy is in \(path)", detail: e.detail)
            }
        }
    }
}

extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        var out = ""
        var rest = Substring(self)
        while let r = rest.firstRange(of: target) {
            out += rest[..<r.lowerBound] + replacement
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}
