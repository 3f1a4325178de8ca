import CBLiteCore

/// Views registered through the API (their map and reduce are Swift or C functions),
/// served as `/{db}/_design/{ddoc}/_view/{view}`.
final class ViewRegistry: @unchecked Sendable {
    private let lock = Monitor()
    private var views: [String: View] = [:]

    private static func key(_ db: String, _ ddoc: String, _ name: String) -> String { db + "\u{0}" + ddoc + "\u{0}" + name }

    func set(_ view: View?, database: String, designDoc: String, name: String) {
        lock.locked { views[ViewRegistry.key(database, designDoc, name)] = view }
    }

    func view(database: String, designDoc: String, name: String) -> View? {
        lock.locked { views[ViewRegistry.key(database, designDoc, name)] }
    }

    /// Whether any view is registered under the design document `designDoc`.
    func hasViews(database: String, designDoc: String) -> Bool {
        let prefix = ViewRegistry.key(database, designDoc, "")
        return lock.locked { views.keys.contains { $0.hasPrefix(prefix) } }
    }
}
