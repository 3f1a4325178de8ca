import CBLiteCore
import CouchWire

/// A design document's endpoints other than its views: `_info`; show, list, update and
/// rewrite functions are not run (CouchDB deprecated them): 501 with the reason.
extension Router {
    func designDocumentEndpoint(_ name: String, _ ddoc: String, _ function: String, _ req: Request, _ res: ResponseWriter) throws {
        switch function {
        case "_info":
            try requireMethod(req, [.GET, .HEAD])
            guard let info = try collection(name).designInfo(name: ddoc) else { throw CouchError.notFound("missing") }
            res.sendJSON(200, .object(info))
        case "_show", "_list", "_update", "_rewrite":
            throw CouchError.notImplemented("\(function) functions are not run by cblite: CouchDB 3 deprecated show, list, update and rewrite functions; use views, _changes filters or the document API.")
        default:
            throw CouchError.notImplemented("Design document endpoint \(function) is not supported by cblite (views, _info and filters are).")
        }
    }
}
