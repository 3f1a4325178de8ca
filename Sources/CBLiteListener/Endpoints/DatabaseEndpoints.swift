import CBLiteCore
import CouchWire
import Glibc
import NIOHTTP1

/// `/{db}` (info, create, delete, POST a document) and the database-wide commands:
/// `_ensure_full_commit`, `_compact`, `_revs_limit`, `_view_cleanup`.
extension Router {
    func databaseEndpoint(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        switch req.method {
        case .GET, .HEAD:
            let coll = try collection(name)
            res.sendJSON(200, .object(try databaseInfo(name, coll)))
        case .PUT:
            try databases.create(name)
            res.sendJSON(201, .object(JSONObject([("ok", .bool(true))])), headers: [("Location", req.absoluteURL([name]))])
        case .DELETE:
            if req.query.has("rev") {
                throw CouchError.badRequest("You tried to DELETE a database with a ?=rev parameter. Did you mean to DELETE a document instead?")
            }
            try databases.delete(name)
            res.sendJSON(200, .object(JSONObject([("ok", .bool(true))])))
        case .POST:
            try postDocument(name, req, res)
        default:
            throw CouchError.methodNotAllowed("GET,HEAD,PUT,DELETE,POST")
        }
    }

    func databaseInfo(_ name: String, _ coll: Collection) throws -> JSONObject {
        let db = coll.database
        let fileSize = Router.fileSize(db.path + "/db.sqlite3") + Router.fileSize(db.path + "/db.sqlite3-wal")
        return JSONObject([
            ("db_name", .string(name)),
            ("doc_count", .int(try coll.count)),
            ("doc_del_count", .int(try coll.deletedCount)),
            ("update_seq", .int(try coll.lastSequence)),
            ("purge_seq", .int(try coll.purgeSequence)),
            ("instance_start_time", .string(String(db.instanceStartTime))),
            ("sizes", .object(JSONObject([("file", .int(fileSize)), ("external", .int(fileSize)), ("active", .int(fileSize))]))),
            ("props", .object(JSONObject())),
            ("disk_format_version", .int(8)),
            ("compact_running", .bool(false)),
            ("uuid", .string(try db.uuid)),
            ("cluster", .object(JSONObject([("q", .int(1)), ("n", .int(1)), ("w", .int(1)), ("r", .int(1))]))),
        ])
    }

    static func fileSize(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// The engine writes durably on commit, so there is nothing to flush (CouchDB answers 201).
    func ensureFullCommit(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        let coll = try collection(name)
        res.sendJSON(201, .object(JSONObject([("ok", .bool(true)), ("instance_start_time", .string(String(coll.database.instanceStartTime)))])))
    }

    /// POST /db/_compact, and /db/_compact/DDOC (that design document's view indexes).
    func compact(_ name: String, designDoc: String? = nil, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        guard req.contentType?.isJSON == true else { throw CouchError.badContentType("Content-Type must be application/json") }
        let coll = try collection(name)
        if let designDoc { try coll.compactDesignViews(name: designDoc) } else { try coll.database.compact() }
        res.sendJSON(202, .object(JSONObject([("ok", .bool(true))])))
    }

    func viewCleanup(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        try requireMethod(req, [.POST])
        try collection(name).cleanUpDesignViews()
        res.sendJSON(202, .object(JSONObject([("ok", .bool(true))])))
    }

    /// GET: the maximum revision tree depth; PUT: a number sets it.
    func revsLimit(_ name: String, _ req: Request, _ res: ResponseWriter) throws {
        let coll = try collection(name)
        switch req.method {
        case .GET, .HEAD:
            res.sendJSON(200, raw: Array(String(try coll.database.maxRevTreeDepth).utf8))
        case .PUT:
            guard let n = try req.jsonBody(limit: 1024).intValue, n > 0, n <= Int64(Int32.max) else {
                throw CouchError.badRequest("Request body must be a positive integer")
            }
            try coll.database.setMaxRevTreeDepth(Int(n))
            res.sendJSON(200, .object(JSONObject([("ok", .bool(true))])))
        default:
            throw CouchError.methodNotAllowed("GET,HEAD,PUT")
        }
    }
}
