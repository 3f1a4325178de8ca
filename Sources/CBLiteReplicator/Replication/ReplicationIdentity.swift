import CBLiteCore

/// The replication ID: what names a replication's checkpoints on both peers. Two runs
/// with the same databases, direction and selection share it (and resume); anything
/// that changes which documents travel gives a new one. The peer is named by its URL
/// without credentials, or by `remote_uuid` when its address changes.
enum ReplicationIdentity {
    static func id(local: Collection, config: ReplicatorConfiguration, direction: DocumentReplication.Direction) throws -> String {
        var parts: [JSONValue] = [
            .string("cblite-replication-1"),
            .string(try local.database.uuid),
            .string("\(local.scope).\(local.name)"),
            .string(config.remoteUUID ?? config.remote.redacted),
            .string(direction.rawValue),
        ]
        switch direction {
        case .push:
            parts += [config.filter.map { .string($0) } ?? .null, .object(config.filter == nil ? JSONObject() : config.filterParams)]
        case .pull:
            parts += [config.pullFilter.map { .string($0) } ?? .null, .object(config.pullFilter == nil ? JSONObject() : config.pullFilterParams),
                      config.channels.map { .array($0.sorted().map { .string($0) }) } ?? .null]
        }
        parts.append(config.docIDs.map { .array($0.sorted().map { .string($0) }) } ?? .null)
        if let s = config.selector { parts.append(s) }      // (absent: the identities of before)
        return Hex.encode(SHA1.hash(JSONWriter.canonical(.array(parts))))
    }
}
