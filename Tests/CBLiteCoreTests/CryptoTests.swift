import XCTest
@testable import CBLiteCore

/// The cryptography layer on OpenSSL (Crypto/Crypto.swift over CCrypto): known-answer
/// vectors for every primitive, and P-256 signatures round-tripped through OpenSSL.
final class CryptoTests: XCTestCase {
    private func hex(_ s: String) -> [UInt8] { Hex.decode(s)! }
    private let abc = Array("abc".utf8)

    func testDigestsOfABC() {
        XCTAssertEqual(SHA1.hash(abc), hex("a9993e364706816aba3e25717850c26c9cd0d89d"))
        XCTAssertEqual(SHA256.hash(abc), hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
        XCTAssertEqual(MD5.hash(abc), hex("900150983cd24fb0d6963f7d28e17f72"))
        XCTAssertEqual(SHA1.hash([]), hex("da39a3ee5e6b4b0d3255bfef95601890afd80709"))
        XCTAssertEqual(SHA256.hash([]), hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
    }

    func testIncrementalAndPartsAgreeWithOneShot() {
        let data = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var h = SHA1()
        h.update(Array(data[0..<1]))
        h.update(Array(data[1..<4097]))
        h.update([])
        h.update(Array(data[4097...]))
        var copy = h                                      // value semantics: the copy goes on alone
        XCTAssertEqual(h.finalize(), SHA1.hash(data))
        copy.update(abc)
        XCTAssertEqual(copy.finalize(), SHA1.hash(data + abc))
        XCTAssertEqual(h.finalize(), SHA1.hash([]), "finalize starts over")
        let parts = data.withUnsafeBytes { d in
            abc.withUnsafeBytes { a in SHA1.hash(parts: [a, UnsafeRawBufferPointer(rebasing: d[0..<0]), d, a]) }
        }
        XCTAssertEqual(parts, SHA1.hash(abc + data + abc))
        var s = SHA256()
        s.update(Array("a".utf8))
        s.update(Array("bc".utf8))
        XCTAssertEqual(s.finalize(), SHA256.hash(abc))
    }

    func testHMACSHA256RFC4231() {
        // Test case 1.
        XCTAssertEqual(HMACSHA256.authenticationCode(Array("Hi There".utf8), key: [UInt8](repeating: 0x0B, count: 20)),
                       hex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"))
        // Test case 2.
        let mac = HMACSHA256.authenticationCode(Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        XCTAssertEqual(mac, hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
        XCTAssertTrue(HMACSHA256.isValid(mac, for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8)))
        var bad = mac
        bad[31] ^= 1
        XCTAssertFalse(HMACSHA256.isValid(bad, for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8)))
        XCTAssertFalse(HMACSHA256.isValid(Array(mac.prefix(16)), for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8)))
    }

    func testPBKDF2Vectors() {
        let (p, s) = (Array("password".utf8), Array("salt".utf8))
        // RFC 6070 (HMAC-SHA1).
        XCTAssertEqual(PBKDF2.deriveKey(password: p, salt: s, iterations: 1, prf: .sha1, outputByteCount: 20),
                       hex("0c60c80f961f0e71f3a9b524af6012062fe037a6"))
        XCTAssertEqual(PBKDF2.deriveKey(password: p, salt: s, iterations: 4096, prf: .sha1, outputByteCount: 20),
                       hex("4b007901b765489abead49d926f721d065a429c1"))
        // HMAC-SHA256 (as Python's hashlib.pbkdf2_hmac derives them).
        XCTAssertEqual(PBKDF2.deriveKey(password: p, salt: s, iterations: 1, prf: .sha256, outputByteCount: 32),
                       hex("120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b"))
        XCTAssertEqual(PBKDF2.deriveKey(password: p, salt: s, iterations: 4096, prf: .sha256, outputByteCount: 32),
                       hex("c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a"))
    }

    func testHKDFSHA256RFC5869() {
        // Test case 1.
        let okm = HKDFSHA256.deriveKey(inputKeyMaterial: [UInt8](repeating: 0x0B, count: 22), salt: hex("000102030405060708090a0b0c"),
                                       info: hex("f0f1f2f3f4f5f6f7f8f9"), outputByteCount: 42)
        XCTAssertEqual(okm, hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
        // Test case 3: no salt, no info (the attachment naming key has no salt).
        XCTAssertEqual(HKDFSHA256.deriveKey(inputKeyMaterial: [UInt8](repeating: 0x0B, count: 22), info: [], outputByteCount: 42),
                       hex("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"))
    }

    func testAESGCMVectors() throws {
        // McGrew & Viega, "The Galois/Counter Mode of Operation", test case 16 (AES-256, AAD).
        let key = hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = hex("cafebabefacedbaddecaf888")
        let plain = hex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
        let aad = hex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let box = try AESGCM.seal(plain, key: key, nonce: nonce, authenticating: aad)
        XCTAssertEqual(box.ciphertext, hex("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"))
        XCTAssertEqual(box.tag, hex("76fc6ece0f4e1768cddf8853bb2d551b"))
        XCTAssertEqual(AESGCM.open(box.ciphertext, tag: box.tag, key: key, nonce: nonce, authenticating: aad), plain)
        // Any change to the ciphertext, tag, AAD, nonce or key fails authentication.
        var c = box.ciphertext; c[0] ^= 1
        XCTAssertNil(AESGCM.open(c, tag: box.tag, key: key, nonce: nonce, authenticating: aad))
        var t = box.tag; t[15] ^= 1
        XCTAssertNil(AESGCM.open(box.ciphertext, tag: t, key: key, nonce: nonce, authenticating: aad))
        XCTAssertNil(AESGCM.open(box.ciphertext, tag: box.tag, key: key, nonce: nonce, authenticating: aad + [0]))
        var n = nonce; n[11] ^= 1
        XCTAssertNil(AESGCM.open(box.ciphertext, tag: box.tag, key: key, nonce: n, authenticating: aad))
        var k = key; k[0] ^= 1
        XCTAssertNil(AESGCM.open(box.ciphertext, tag: box.tag, key: k, nonce: nonce, authenticating: aad))
        XCTAssertNil(AESGCM.open(box.ciphertext, tag: Array(box.tag.prefix(12)), key: key, nonce: nonce, authenticating: aad))

        // Test cases 13 and 14 (zero key and nonce; empty and one-block plaintext, no AAD).
        let zeroKey = [UInt8](repeating: 0, count: 32), zeroNonce = [UInt8](repeating: 0, count: 12)
        let empty = try AESGCM.seal([], key: zeroKey, nonce: zeroNonce, authenticating: [])
        XCTAssertEqual(empty.ciphertext, [])
        XCTAssertEqual(empty.tag, hex("530f8afbc74536b9a963b4f1c4cb738b"))
        XCTAssertEqual(AESGCM.open([], tag: empty.tag, key: zeroKey, nonce: zeroNonce, authenticating: []), [])
        let block = try AESGCM.seal([UInt8](repeating: 0, count: 16), key: zeroKey, nonce: zeroNonce, authenticating: [])
        XCTAssertEqual(block.ciphertext, hex("cea7403d4d606b6e074ec5d3baf39d18"))
        XCTAssertEqual(block.tag, hex("d0d1c8a799996bf0265b98b5d48ab919"))
    }

    func testRandomAndConstantTimeEquality() throws {
        let a = try secureRandomBytes(32), b = try secureRandomBytes(32)
        XCTAssertEqual(a.count, 32)
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(try secureRandomBytes(0), [])
        XCTAssertTrue(constantTimeEqual(a, a))
        XCTAssertFalse(constantTimeEqual(a, b))
        XCTAssertFalse(constantTimeEqual(a, Array(a.prefix(31))))
        XCTAssertTrue(constantTimeEqual([], []))
    }

    func testP256SignVerifyAndPEMRoundTrip() throws {
        let key = try SigningKeyP256()
        let spki = try key.publicKeyDER()
        XCTAssertEqual(spki.count, 91, "SubjectPublicKeyInfo of an uncompressed P-256 point")
        XCTAssertEqual(Array(spki.prefix(27)), hex("3059301306072a8648ce3d020106082a8648ce3d03010703420004"))
        let message = Array("to be signed".utf8)
        let sig = try key.signatureDER(for: message)
        XCTAssertEqual(sig.first, 0x30, "a DER SEQUENCE of r and s")
        XCTAssertTrue(SigningKeyP256.isValidSignature(sig, for: message, publicKeyDER: spki))
        XCTAssertFalse(SigningKeyP256.isValidSignature(sig, for: message + [0], publicKeyDER: spki))
        XCTAssertFalse(SigningKeyP256.isValidSignature(sig, for: message, publicKeyDER: try SigningKeyP256().publicKeyDER()))
        XCTAssertFalse(SigningKeyP256.isValidSignature([0x30, 0], for: message, publicKeyDER: spki))
        XCTAssertFalse(SigningKeyP256.isValidSignature(sig, for: message, publicKeyDER: [1, 2, 3]))

        let pem = try key.pkcs8PEM()
        XCTAssertTrue(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        XCTAssertTrue(pem.hasSuffix("-----END PRIVATE KEY-----\n"))
        let again = try SigningKeyP256(pem: pem)
        XCTAssertEqual(try again.publicKeyDER(), spki)
        XCTAssertTrue(SigningKeyP256.isValidSignature(try again.signatureDER(for: message), for: message, publicKeyDER: spki))
    }

    func testFailuresAreInternalErrorsWithOpenSSLsReason() {
        let e = assertStatus(.internalError, try SigningKeyP256(pem: "-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n"))
        XCTAssertTrue(e?.message.contains("OpenSSL") ?? false, e?.message ?? "")
    }
}
