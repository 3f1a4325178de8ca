import CCBLite

/// The library's version, read from the header (CBLITE_VERSION, the one place it is
/// written): one value for the C ABI (cbl_version), the listener's `Server` header and
/// welcome, and the replicator's `User-Agent`.
public enum CBLiteVersion {
    public static let string: String = CBLITE_VERSION
    public static let number: Int32 = CBLITE_VERSION_NUMBER
}
