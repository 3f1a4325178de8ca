// The engine's vocabulary (JSON, errors, encodings, digests, revision IDs, attachment
// identities) lives in CBLiteBase, below the engine, so that the wire format (CouchWire)
// can share it without depending on storage. Every user of the engine sees it too.
@_exported import CBLiteBase
