import CBLiteListener
import Glibc

/// The listener's URL as another device can use it (`cblite serve --qr`): an address that
/// device can reach instead of 0.0.0.0 / ::, and with TLS the certificate's SHA-256 as the
/// fragment `#sha256=HEX` (a fragment never reaches the server), which the replication
/// commands take as the certificate to pin.
enum ShareableURL {
    static func of(_ listener: Listener) -> String {
        var url = listener.url
        let host = listener.configuration.host
        if host == "0.0.0.0" || host == "::", let address = firstNonLoopbackIPv4() {
            url = "\(listener.tlsCertificateSHA256 == nil ? "http" : "https")://\(address):\(listener.port)/"
        }
        if let fp = listener.tlsCertificateSHA256 { url += "#\(fragmentKey)=\(fp)" }
        return url
    }

    static let fragmentKey = "sha256"

    /// Splits `…#sha256=HEX` into the URL without it and the fingerprint.
    static func split(_ url: String) -> (url: String, sha256: String?) {
        guard let hash = url.lastIndex(of: "#") else { return (url, nil) }
        let fragment = url[url.index(after: hash)...]
        guard fragment.hasPrefix("\(fragmentKey)=") else { return (url, nil) }
        return (String(url[..<hash]), String(fragment.dropFirst(fragmentKey.count + 1)))
    }

    private static func firstNonLoopbackIPv4() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            let flags = Int32(entry.pointee.ifa_flags)
            guard let sa = entry.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET),
                  flags & Int32(IFF_UP) != 0, flags & Int32(IFF_LOOPBACK) == 0 else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            var address = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            guard inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil else { continue }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return nil
    }
}
