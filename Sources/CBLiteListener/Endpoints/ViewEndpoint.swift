import CBLiteCore
import CouchWire

/// `/{db}/_design/{ddoc}/_view/{view}`: not served yet (views registered through the API
/// have no design-document form here; JavaScript ones are never run).
extension Router {
    func view(_ name: String, _ ddoc: String, _ view: String, _ req: Request, _ res: ResponseWriter) throws {
        _ = try collection(name)
        throw CouchError.notImplemented("views are not served by the listener (JavaScript design documents are not run)")
    }
}
