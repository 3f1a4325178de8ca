import CBLiteCore
import CouchWire
import NIOHTTP1

/// `_local_docs`: the local documents by ID, as CouchDB lists them (`total_rows` null).
extension Router {
    func localDocs(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.GET, .HEAD, .POST])
        let coll = try collection(name)
        let includeDocs = try req.query.bool("include_docs", default: false)
        let descending = try req.query.bool("descending", default: false)
        let limit = try req.query.nonNegativeInt("limit").map(Int.init) ?? Int.max
        let skip = Int(try req.query.nonNegativeInt("skip") ?? 0)
        var docs = try coll.localDocuments()
        if descending { docs.reverse() }
        res.begin(status: 200)
        try res.write(Array("{\"total_rows\":null,\"offset\":null,\"rows\":[\n".utf8))
        for (i, d) in docs.dropFirst(skip).prefix(limit).enumerated() {
            let wireID = "_local/" + d.id
            var w = JSONWriter(canonical: false)
            if i > 0 { w.append(",\n") }
            w.append("{\"id\":"); w.writeString(wireID)
            w.append(",\"key\":"); w.writeString(wireID)
            w.append(",\"value\":{\"rev\":"); w.writeString(d.rev); w.appendByte(UInt8(ascii: "}"))
            if includeDocs {
                var doc = try parseObject(d.json)
                doc["_id"] = .string(wireID)
                w.append(",\"doc\":"); w.writeObject(Router.idFirst(doc))
            }
            w.appendByte(UInt8(ascii: "}"))
            try res.write(w.bytes)
        }
        try res.write(Array("\n]}\n".utf8))
    }
}
