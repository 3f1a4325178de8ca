import ArgumentParser
import CBLiteCore
import CBLiteDiscovery
import CBLiteListener
import Glibc

/// `cblite serve`: serves a directory's databases over HTTP(S) with CouchDB's REST API
/// until SIGINT or SIGTERM, then stops cleanly (in-flight requests finish, databases close).
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the databases of a directory with CouchDB's REST API (for sync and curl).",
        discussion: """
            Prints the URL it listens on (and, with TLS, the certificate's SHA-256 fingerprint), \
            then serves until SIGINT or SIGTERM. Options given on the command line override the \
            configuration file's, which uses the keys of the listener's JSON configuration \
            (host, port, directory, users, read_only, allow_remote_without_auth, tls, limits); \
            its users' passwords may be given as CouchDB's PBKDF2 hashes ("-pbkdf2:sha256-…").

            --advertise NAME publishes the listener on the local network with DNS-SD (through \
            the Avahi daemon; exit 5 with a message when it is not reachable) so that \
            `cblite peers` lists it and `cblite sync DB peer:NAME/DB` reaches it; a name \
            already taken becomes "NAME #2". Serve on an address peers can reach (--host \
            0.0.0.0) with users, or "allow_remote_without_auth" in the configuration.

            --qr prints the URL as a QR code (for a dark terminal, as qrencode -t UTF8 draws \
            it), with TLS the certificate's fingerprint after it as #sha256=HEX, which \
            `cblite sync/pull/push` takes as the certificate to pin. Listening on every \
            address, the URL has the machine's first non-loopback IPv4 address.
            """)

    @Option(name: .long, help: "Directory whose databases are served (default: $CBLITE_DIR or ~/.local/share/cblite).")
    var dir: String?

    @Option(name: .long, help: "Address to listen on (default 127.0.0.1).")
    var host: String?

    @Option(name: .long, help: "Port (0: any free port; default 5984).")
    var port: Int?

    @Option(name: .long, help: "A JSON configuration file.")
    var config: String?

    @Option(name: .long, help: "A server admin's name; the password comes from $CBLITE_PASSWORD (or a prompt), never from the command line. More users, and users with roles: the configuration file's \"users\".")
    var user: String?

    @Flag(name: .long, help: "Refuse every write (403).")
    var readOnly = false

    @Flag(name: .long, help: "Serve HTTPS with a self-signed identity kept in the directory.")
    var tlsAnonymous = false

    @Option(name: .long, help: "HTTPS certificate (PEM file); needs --tls-key.")
    var tlsCert: String?

    @Option(name: .long, help: "HTTPS private key (PEM file).")
    var tlsKey: String?

    @Option(name: .long, help: "A limit as KEY=N (repeatable), a key of the configuration's \"limits\": max_connections, header_timeout_ms, max_header_count, max_attachment_bytes, ...")
    var limit: [String] = []

    @Option(name: .long, help: "Advertise the listener on the local network under this name (DNS-SD).")
    var advertise: String?

    @Option(name: .customLong("advertise-type"), help: "The advertised service type (default _couchdb._tcp).")
    var advertiseType: String?

    @Flag(name: .long, help: "Print the URL (with the TLS certificate's fingerprint) as a QR code.")
    var qr = false

    @Flag(name: .long, help: "Print {\"url\", \"tls_sha256\", \"advertised\"} and {\"stopped\": true} as JSON lines.")
    var json = false

    func run() throws {
        var members = JSONObject()
        if let config {
            guard let f = fopen(config, "r") else { throw CBLError(.notFound, "cannot read \(config)") }
            var text: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&buf, 1, buf.count, f)
                if n <= 0 { break }
                text += buf[0..<n]
            }
            fclose(f)
            members = try JSONParser.parseObject(String(decoding: text, as: UTF8.self), what: "configuration file")
            // Passwords are kept hashed in the file from now on, as CouchDB rewrites its [admins].
            let hashed = try ListenerConfiguration.hashPasswords(inFile: config)
            if hashed > 0 { writeStderr("cblite: \(config): \(hashed) password(s) written in clear are now kept hashed\n") }
        }
        members["directory"] = .string(try dir ?? members["directory"]?.stringValue ?? DatabaseName.defaultDirectory())
        if let host { members["host"] = .string(host) }
        if let port { members["port"] = .int(Int64(port)) } else if members["port"] == nil { members["port"] = .int(5984) }
        if let user {
            guard !user.contains(":") else {
                throw ToolError.usage("--user takes a NAME only: give the password in CBLITE_PASSWORD (a command line is visible to every user of the machine)")
            }
            guard let password = Secrets.userPassword(user) else {
                throw ToolError.usage("no password for \(user): set CBLITE_PASSWORD (or run on a terminal)")
            }
            var users = members["users"]?.objectValue ?? JSONObject()
            users[user] = .string(password)
            members["users"] = .object(users)
        }
        if !limit.isEmpty {
            var limits = members["limits"]?.objectValue ?? JSONObject()
            for l in limit {
                guard let eq = l.firstIndex(of: "="), let n = Int64(l[l.index(after: eq)...]) else {
                    throw CBLError(.badRequest, "--limit takes KEY=N")
                }
                limits[String(l[..<eq])] = .int(n)
            }
            members["limits"] = .object(limits)
        }
        if readOnly { members["read_only"] = .bool(true) }
        if tlsAnonymous { members["tls"] = .object(JSONObject([("anonymous", .bool(true))])) }
        if tlsCert != nil || tlsKey != nil {
            guard let tlsCert, let tlsKey else { throw CBLError(.badRequest, "--tls-cert and --tls-key go together") }
            members["tls"] = .object(JSONObject([("cert_pem_file", .string(tlsCert)), ("key_pem_file", .string(tlsKey))]))
        }

        if let advertise {
            var a = JSONObject([("name", .string(advertise))])
            if let advertiseType { a["type"] = .string(advertiseType) }
            members["advertise"] = .object(a)
        } else if advertiseType != nil {
            throw ToolError.usage("--advertise-type needs --advertise NAME")
        }

        // Block the signals before any thread starts, then wait for one synchronously.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let listener = try Listener(configuration: JSONValue.object(members).jsonString)
        try listener.start()
        let bound = listener.configuration.host
        if advertise != nil, bound.hasPrefix("127.") || bound == "::1" || bound == "localhost" {
            writeStderr("cblite: warning: advertised, but listening on \(bound) only: peers cannot connect (--host 0.0.0.0)\n")
        }
        // The advertised name once Avahi has probed it (another one after a conflict).
        let advertised = listener.advertisement.map { a -> String in
            if case .failed(let message) = a.waitSettled(timeoutMs: 10_000) { writeStderr("cblite: \(message)\n") }
            return a.name
        }
        if json {
            var o = JSONObject([("url", .string(listener.url))])
            if let fp = listener.tlsCertificateSHA256 { o["tls_sha256"] = .string(fp) }
            if let advertised { o["advertised"] = .string(advertised) }
            print(o.jsonText)
        } else {
            print("cblite listening on \(listener.url)")
            if let fp = listener.tlsCertificateSHA256 { print("TLS certificate SHA-256: \(fp)") }
            if let advertised, let a = listener.advertisement { print("advertised as \"\(advertised)\" (\(a.type))") }
        }
        if qr {
            // On standard output with the rest, unless that is JSON lines.
            let url = ShareableURL.of(listener)
            let text = try QRCode.render(url) + url + "\n"
            if json { writeStderr(text) } else { print(text, terminator: "") }
        }
        fflush(nil)
        var received: Int32 = 0
        sigwait(&signals, &received)
        listener.stop()
        print(json ? "{\"stopped\":true}" : "cblite stopped")
        fflush(nil)
    }
}
