import CBLiteCore
import Crypto
@testable import CBLiteListener
import NIOSSL
import XCTest

/// The hand-written DER of the anonymous identity, read back by BoringSSL (through
/// NIOSSL) — the parser every TLS handshake of the listener uses.
final class SelfSignedCertificateTests: XCTestCase {
    func testBoringSSLReadsTheCertificateAsWritten() throws {
        let key = P256.Signing.PrivateKey()
        let now: Int64 = 1_795_000_000
        let der = try SelfSignedCertificate.make(key: key, now: now)
        let cert = try NIOSSLCertificate(bytes: der, format: .der)
        XCTAssertEqual(try cert.toDERBytes(), der)
        XCTAssertEqual(Int64(cert.notValidBefore), now - 3600)
        XCTAssertEqual(Int64(cert.notValidAfter), now + 10 * 365 * 86400)
        // The certificate carries the key it was made for, and the PEM form is the same DER.
        XCTAssertEqual(try cert.extractPublicKey().toSPKIBytes(), Array(key.publicKey.derRepresentation))
        let fromPEM = try NIOSSLCertificate(bytes: Array(SelfSignedCertificate.pem(der).utf8), format: .pem)
        XCTAssertEqual(try fromPEM.toDERBytes(), der)
        let names = Array(cert._subjectAlternativeNames())
        XCTAssertEqual(names.count, 3)
        // Usable as a server identity with its key.
        let pem = SelfSignedCertificate.pem(der)
        let keyPEM = try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem)
        let config = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem))], privateKey: .privateKey(keyPEM))
        XCTAssertNoThrow(try NIOSSLContext(configuration: config))
    }

    func testTimesAreUTCTimeBefore2050AndGeneralizedTimeAfter() {
        XCTAssertEqual(SelfSignedCertificate.time(0), [0x17, 13] + Array("700101000000Z".utf8))
        XCTAssertEqual(SelfSignedCertificate.time(951_782_400 + 3661), [0x17, 13] + Array("000229010101Z".utf8))   // a leap day
        XCTAssertEqual(SelfSignedCertificate.time(2_524_607_999), [0x17, 13] + Array("491231235959Z".utf8))
        XCTAssertEqual(SelfSignedCertificate.time(2_524_608_000), [0x18, 15] + Array("20500101000000Z".utf8))
    }

    func testLongLengthsUseTheLongForm() {
        XCTAssertEqual(SelfSignedCertificate.tlv(0x04, [UInt8](repeating: 7, count: 127)).prefix(2), [0x04, 0x7F])
        XCTAssertEqual(SelfSignedCertificate.tlv(0x04, [UInt8](repeating: 7, count: 128)).prefix(3), [0x04, 0x81, 0x80])
        XCTAssertEqual(SelfSignedCertificate.tlv(0x04, [UInt8](repeating: 7, count: 300)).prefix(4), [0x04, 0x82, 0x01, 0x2C])
    }
}
