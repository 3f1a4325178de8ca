import CBLiteCore

/// The anonymous identity's certificate, written as DER by hand: one fixed shape (a
/// self-signed P-256 leaf for localhost and the loopback addresses), about a hundred
/// lines. swift-certificates did this before; with SwiftASN1 and _CryptoExtras it cost
/// about 2 MB of the library's 25 MB budget (bench/size_report.sh), for one certificate
/// made once per listener directory.
enum SelfSignedCertificate {
    /// The certificate (DER) for `key`, valid from an hour before `now` (unix seconds)
    /// for ten years, with a random serial number.
    static func make(key: SigningKeyP256, now: Int64) throws -> [UInt8] {
        let name = sequence(
            set(sequence(oid([0x55, 0x04, 0x03]) + utf8String("cblite anonymous listener"))),   // CN
            set(sequence(oid([0x55, 0x04, 0x0A]) + utf8String("cblite"))))                     // O
        let ecdsaWithSHA256 = sequence(oid([0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02]))
        var serial = (0..<16).map { _ in UInt8.random(in: 0...255) }
        serial[0] &= 0x7F                                  // positive
        serial[0] |= 0x40                                  // and minimal (no leading zero)
        let validity = sequence(time(now - 3600), time(now + 10 * 365 * 86400))
        let extensions = sequence(
            // basicConstraints, critical: not a CA
            sequence(oid([0x55, 0x1D, 0x13]) + boolean(true) + octetString(sequence())),
            // keyUsage, critical: digitalSignature, keyEncipherment
            sequence(oid([0x55, 0x1D, 0x0F]) + boolean(true) + octetString(tlv(0x03, [0x05, 0xA0]))),
            // extKeyUsage: serverAuth
            sequence(oid([0x55, 0x1D, 0x25]) + octetString(sequence(oid([0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01])))),
            // subjectAltName: DNS localhost, IP 127.0.0.1, IP ::1
            sequence(oid([0x55, 0x1D, 0x11]) + octetString(sequence(
                tlv(0x82, Array("localhost".utf8)), tlv(0x87, [127, 0, 0, 1]), tlv(0x87, [UInt8](repeating: 0, count: 15) + [1])))))
        let tbs = sequence(
            tlv(0xA0, tlv(0x02, [0x02])),                  // [0] version v3
            tlv(0x02, serial),
            ecdsaWithSHA256,
            name,                                          // issuer
            validity,
            name,                                          // subject
            try key.publicKeyDER(),                        // SubjectPublicKeyInfo
            tlv(0xA3, extensions))                         // [3] extensions
        let signature = try key.signatureDER(for: tbs)
        return sequence(tbs, ecdsaWithSHA256, tlv(0x03, [0] + signature))
    }

    /// PEM text of a DER certificate.
    static func pem(_ der: [UInt8]) -> String {
        let b64 = Base64.encode(der)
        var lines: [String] = ["-----BEGIN CERTIFICATE-----"]
        var i = b64.startIndex
        while i < b64.endIndex {
            let j = b64.index(i, offsetBy: 64, limitedBy: b64.endIndex) ?? b64.endIndex
            lines.append(String(b64[i..<j]))
            i = j
        }
        lines.append("-----END CERTIFICATE-----")
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: DER

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var out = [tag]
        let n = content.count
        if n < 0x80 {
            out.append(UInt8(n))
        } else {
            var len: [UInt8] = []
            var m = n
            while m > 0 { len.insert(UInt8(m & 0xFF), at: 0); m >>= 8 }
            out.append(0x80 | UInt8(len.count))
            out += len
        }
        return out + content
    }

    static func sequence(_ parts: [UInt8]...) -> [UInt8] { tlv(0x30, parts.flatMap { $0 }) }
    static func set(_ parts: [UInt8]...) -> [UInt8] { tlv(0x31, parts.flatMap { $0 }) }
    static func oid(_ encoded: [UInt8]) -> [UInt8] { tlv(0x06, encoded) }
    static func utf8String(_ s: String) -> [UInt8] { tlv(0x0C, Array(s.utf8)) }
    static func boolean(_ b: Bool) -> [UInt8] { tlv(0x01, [b ? 0xFF : 0x00]) }
    static func octetString(_ content: [UInt8]) -> [UInt8] { tlv(0x04, content) }

    /// UTCTime (years 1950–2049, as RFC 5280 requires) or GeneralizedTime after.
    static func time(_ unix: Int64) -> [UInt8] {
        let days = unix >= 0 ? unix / 86400 : (unix - 86399) / 86400
        let secs = unix - days * 86400
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let rest = two(month) + two(day) + two(secs / 3600) + two(secs % 3600 / 60) + two(secs % 60) + "Z"
        if year < 2050 { return tlv(0x17, Array((two(year % 100) + rest).utf8)) }
        return tlv(0x18, Array(("\(year)" + rest).utf8))
    }
}
