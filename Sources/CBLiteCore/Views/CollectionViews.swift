extension Collection {
    /// The view of this collection named `name` (its index is created by the first
    /// update). Names: 1–255 bytes of UTF-8 without control characters.
    public func view(named name: String) throws -> View {
        try check()
        let u = name.utf8
        guard !u.isEmpty, u.count <= 255, !u.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw CBLError.badRequest("view name must be 1 to 255 bytes without control characters")
        }
        return View(collection: self, name: name)
    }

    /// Names of the views of this collection that have an index.
    public func viewNames() throws -> [String] {
        try check()
        return try store.read { conn in try ViewStorage.names(conn, collectionID: id) }.filter { !$0.hasPrefix(MangoIndex.viewPrefix) }   // Mango's are its indexes'
    }
}
