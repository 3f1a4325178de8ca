import ArgumentParser
import CBLiteCore

struct AttachmentCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "att", abstract: "List, read and write a document's attachments.",
        subcommands: [AttachmentList.self, AttachmentGet.self, AttachmentPut.self])
}

struct AttachmentList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List a document's attachments.")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Document ID.") var docID: String

    func run() throws {
        try db.withCollection { _, c in
            let atts = try c.attachments(docID: docID)
            if db.json {
                print(JSONValue.array(atts.map { a in .object(JSONObject([
                    ("name", .string(a.name)), ("content_type", .string(a.contentType)), ("length", .int(Int64(a.length))),
                    ("digest", .string(a.digest.string)), ("revpos", .int(Int64(a.revpos)))])) }).jsonString)
                return
            }
            for a in atts { print("\(a.name)\t\(a.contentType)\t\(a.length) bytes\t\(a.digest.string)") }
        }
    }
}

struct AttachmentGet: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Write an attachment's content to a file (or standard output).")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Document ID.") var docID: String
    @Argument(help: "Attachment name.") var name: String
    @Option(name: .shortAndLong, help: "Output file (default: standard output).") var output: String?

    func run() throws {
        try db.withCollection { _, c in
            if let output, output != "-" {
                try c.writeAttachment(docID: docID, name: name, toFile: output)
                let info = try c.attachment(docID: docID, name: name)
                if db.json { print(JSONObject([("name", .string(name)), ("length", .int(Int64(info.length))), ("output", .string(output))]).jsonText) }
                else { print("wrote \(info.length) bytes to \(output)") }
            } else {
                let out = try OutputFile(nil)
                try out.write(try c.attachmentContent(docID: docID, name: name))
            }
        }
    }
}

struct AttachmentPut: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "put", abstract: "Set an attachment from a file (saves a new revision on the current one).")
    @OptionGroup var db: DatabaseOptions
    @Argument(help: "Document ID.") var docID: String
    @Argument(help: "Attachment name.") var name: String
    @Argument(help: "File with the content.") var file: String
    @Option(name: .customLong("type"), help: "Content type (default: the previous one, or application/octet-stream).") var contentType: String?
    @Option(help: "Parent revision (default: the current one).") var rev: String?

    func run() throws {
        try db.withCollection { _, c in
            let parent = rev ?? (try? c.history(docID: docID, revID: nil))?.first
            let revID = try c.setAttachment(docID: docID, parent: parent, name: name, contentType: contentType, filePath: file)
            if db.json { print(JSONObject([("id", .string(docID)), ("rev", .string(revID))]).jsonText) } else { print(revID) }
        }
    }
}
