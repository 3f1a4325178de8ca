import CBLiteCore
import CBLiteDiscovery

/// The listener's `"advertise"` option: publish it with DNS-SD while it runs, as
/// `{"name": "Kitchen tablet", "type": "_couchdb._tcp"}` (type optional, CouchDB's protocol
/// by default). Its TXT record carries the served database names, whether TLS is on and the
/// certificate's fingerprint (ServiceTXT).
public struct AdvertiseSettings: Sendable, Equatable {
    public var name: String
    public var type = ServiceType.couchDB

    public init(name: String, type: String = ServiceType.couchDB) {
        self.name = name
        self.type = type
    }

    init(json v: JSONValue) throws {
        func bad(_ m: String) -> CBLError { CBLError(.badRequest, "listener configuration: advertise: \(m)") }
        guard let o = v.objectValue, let name = o["name"]?.stringValue else {
            throw bad("must be an object {\"name\": string, \"type\"?: string}")
        }
        self.name = name
        for (k, value) in o.members where k != "name" {
            guard k == "type", let t = value.stringValue else { throw bad("unknown key \"\(k)\" (name, type)") }
            type = t
        }
        do {
            try ServiceType.validate(name: self.name)
            try ServiceType.validate(type)
        } catch let e as CBLError { throw bad(e.message) }
    }
}
