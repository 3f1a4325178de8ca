/// The library's version, one value for the C ABI (cbl_version), the listener's
/// `Server` header and welcome, and the replicator's `User-Agent`.
public enum CBLiteVersion {
    public static let string = "0.1.0"
}
