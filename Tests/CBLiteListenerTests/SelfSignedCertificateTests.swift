import CBLiteCore
@testable import CBLiteListener
import NIOSSL
import XCTest

/// The hand-written DER of the anonymous identity, read back by BoringSSL (through
/// NIOSSL) — the parser every TLS handshake of the listener uses.
final class SelfSignedCertificateTests: XCTestCase {
    func testBoringSSLReadsTheCertificateAsWritten() throws {
        let key = try SigningKeyP256()
        let now: Int64 = 1_795_000_000
        let der = try SelfSignedCertificate.make(key: key, now: now)
        let cert = try NIOSSLCertificate(bytes: der, format: .der)
        XCTAssertEqual(try cert.toDERBytes(), der)
        XCTAssertEqual(Int64(cert.notValidBefore), now - 3600)
        XCTAssertEqual(Int64(cert.notValidAfter), now + 10 * 365 * 86400)
        // The certificate carries the key it was made for, and the PEM form is the same DER.
        XCTAssertEqual(try cert.extractPublicKey().toSPKIBytes(), try key.publicKeyDER())
        let fromPEM = try NIOSSLCertificate(bytes: Array(SelfSignedCertificate.pem(der).utf8), format: .pem)
        XCTAssertEqual(try fromPEM.toDERBytes(), der)
        let names = Array(cert._subjectAlternativeNames())
        XCTAssertEqual(names.count, 3)
        // Usable as a server identity with its key.
        let pem = SelfSignedCertificate.pem(der)
        let keyPEM = try NIOSSLPrivateKey(bytes: Array(try key.pkcs8PEM().utf8), format: .pem)
        let config = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem))], privateKey: .privateKey(keyPEM))
        XCTAssertNoThrow(try NIOSSLContext(configuration: config))
    }

    /// The certificate's signature verifies (with OpenSSL) over its to-be-signed part.
    func testSignatureVerifies() throws {
        let key = try SigningKeyP256()
        let der = try SelfSignedCertificate.make(key: key, now: 1_795_000_000)
        // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue BIT STRING }
        func elements(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
            var out: [ArraySlice<UInt8>] = []
            var i = bytes.startIndex
            while i < bytes.endIndex {
                var len = Int(bytes[i + 1]), header = 2
                if len & 0x80 != 0 {
                    let n = len & 0x7F
                    len = bytes[(i + 2)..<(i + 2 + n)].reduce(0) { $0 << 8 | Int($1) }
                    header += n
                }
                out.append(bytes[i..<(i + header + len)])
                i += header + len
            }
            return out
        }
        let outer = elements(der[...])
        XCTAssertEqual(outer.count, 1)
        let headerLength = outer[0].count - (der[1] & 0x80 != 0 ? Int(der[1] & 0x7F) + 2 : 2)
        let parts = elements(der[(der.count - headerLength)...])
        XCTAssertEqual(parts.count, 3)
        let tbs = Array(parts[0])
        let bitString = Array(parts[2])
        XCTAssertEqual(bitString[0], 0x03)
        XCTAssertLessThan(bitString[1], 0x80, "a signature of at most 72 bytes has a short length")
        XCTAssertEqual(bitString[2], 0, "no unused bits")
        let signature = Array(bitString.dropFirst(3))
        XCTAssertTrue(SigningKeyP256.isValidSignature(signature, for: tbs, publicKeyDER: try key.publicKeyDER()))
        XCTAssertFalse(SigningKeyP256.isValidSignature(signature, for: tbs + [0], publicKeyDER: try key.publicKeyDER()))
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
