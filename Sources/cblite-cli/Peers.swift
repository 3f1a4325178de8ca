import ArgumentParser
import CBLiteCore
import CBLiteDiscovery

/// `cblite peers`: the listeners advertised on the local network (DNS-SD through Avahi).
struct Peers: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the peers advertised on the local network (DNS-SD, e.g. `cblite serve --advertise NAME`).",
        discussion: """
            Browses for --timeout seconds, then prints each peer found: its name, URL and the \
            databases it advertises (with --json, a JSON array of {"name", "type", "domain", \
            "host", "port", "addresses", "url", "databases", "tls", "sha256"?, "txt"}). A \
            peer's name is what `cblite sync DB peer:NAME[/DB]` takes. Needs the Avahi daemon \
            (exit 5 with a message when it is not reachable).
            """)

    @Option(name: .long, help: "Seconds to browse (default 3).")
    var timeout: Double = 3

    @Option(name: .long, help: "Service type (default _couchdb._tcp).")
    var type: String = ServiceType.couchDB

    @Flag(name: .long, help: "Print a JSON array.")
    var json = false

    func run() throws {
        guard timeout >= 0, timeout <= 3600 else { throw ToolError.usage("--timeout takes 0 to 3600 seconds") }
        let peers = try PeerAddress.list(type: type, timeoutMs: Int(timeout * 1000))
        if json {
            print(String(decoding: JSONWriter.ordered(.array(peers.map { .object($0.json) })), as: UTF8.self))
        } else if peers.isEmpty {
            print("no peers found")
        } else {
            for p in peers {
                let dbs = p.txt.databases.isEmpty ? "" : "  " + p.txt.databases.joined(separator: ", ") + (p.txt.moreDatabases ? ", …" : "")
                print("\(p.name)  \(p.url ?? p.host)\(dbs)")
            }
        }
    }
}
