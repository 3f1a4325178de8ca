import CBLiteCore
import NIOSSL

/// The listener's TLS identity: a given PEM certificate and key, or an anonymous
/// self-signed one (the seeds' `setAnonymousSSLIdentityWithLabel`) generated once and
/// kept beside the databases, so clients that pinned its fingerprint keep trusting it.
enum TLSIdentity {
    static let certificateFile = "listener-identity-cert.pem"
    static let keyFile = "listener-identity-key.pem"

    /// A server context for the PEM files, and the certificate's SHA-256 fingerprint.
    static func context(certificatePEMFile: String, keyPEMFile: String) throws -> (NIOSSLContext, String) {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificatePEMFile)
            guard let leaf = chain.first else { throw CBLError(.badRequest, "no certificate in \(certificatePEMFile)") }
            let key = try NIOSSLPrivateKey(file: keyPEMFile, format: .pem)
            let config = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            return (try NIOSSLContext(configuration: config), fingerprint(try leaf.toDERBytes()))
        } catch let e as CBLError {
            throw e
        } catch {
            throw CBLError(.badRequest, "cannot load the TLS identity (\(certificatePEMFile), \(keyPEMFile)): \(error)")
        }
    }

    /// Loads the anonymous identity kept in `directory`, generating it the first time.
    static func anonymousContext(directory: String) throws -> (NIOSSLContext, String) {
        let certPath = directory + "/" + certificateFile
        let keyPath = directory + "/" + keyFile
        if !FileIO.exists(certPath) || !FileIO.exists(keyPath) {
            let (certPEM, keyPEM) = try generate()
            try FileIO.writeAtomically(keyPath, Array(keyPEM.utf8), mode: 0o600)
            try FileIO.writeAtomically(certPath, Array(certPEM.utf8), mode: 0o644)
        }
        return try context(certificatePEMFile: certPath, keyPEMFile: keyPath)
    }

    /// A P-256 key and a self-signed certificate for it, valid for ten years, naming
    /// localhost and the loopback addresses.
    static func generate() throws -> (certificatePEM: String, keyPEM: String) {
        let key = try SigningKeyP256()
        let der = try SelfSignedCertificate.make(key: key, now: unixTimeNow())
        return (SelfSignedCertificate.pem(der), try key.pkcs8PEM())
    }

    static func fingerprint(_ der: [UInt8]) -> String { Hex.encode(SHA256.hash(der)) }
}
