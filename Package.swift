// swift-tools-version:6.1
// cblite: the Swift engine (CBLiteCore), its C ABI (CBLiteCAPI -> libcblite.so), the `cblite`
// command-line tool, and SQLCipher compiled in as a C target (see Sources/CSQLCipher).
// Cryptography is the system's OpenSSL libcrypto (which SQLCipher links anyway), through the
// small C target CCrypto — not swift-crypto: its vendored BoringSSL (a crypto library the OS
// does not patch) and the FoundationEssentials it imports cost ≈ 5 MB of the 25 MB budget.
// Release flags that only the shipped .so needs (static Swift runtime, soname, export
// list) live in the Makefile so that test binaries are unaffected.
import PackageDescription

let sqlcipherDefines: [CSetting] = [
    .define("SQLITE_HAS_CODEC"),
    .define("SQLITE_TEMP_STORE", to: "2"),
    .define("SQLCIPHER_CRYPTO_OPENSSL"),
    .define("SQLITE_THREADSAFE", to: "1"),
    .define("SQLITE_DEFAULT_WAL_SYNCHRONOUS", to: "1"),
    .define("SQLITE_DEFAULT_MEMSTATUS", to: "0"),
    .define("SQLITE_DQS", to: "0"),
    .define("SQLITE_ENABLE_FTS5"),
    .define("SQLITE_OMIT_LOAD_EXTENSION"),
    .define("SQLITE_OMIT_SHARED_CACHE"),
    .define("SQLITE_LIKE_DOESNT_MATCH_BLOBS"),
    .define("SQLITE_USE_ALLOCA"),
    .define("HAVE_USLEEP", to: "1"),
    .define("NDEBUG"),
    // No SQLCipher logging to stderr from inside a host process: failures reach the
    // caller as statuses (a wrong key is a 401).
    .define("SQLCIPHER_OMIT_DEFAULT_LOGGING"),
    // Keep SQLite's symbols out of the dynamic symbol table: a host program that links
    // libsqlite3 must neither replace ours nor be replaced by it.
    .unsafeFlags(["-fvisibility=hidden", "-O2", "-Wno-everything"]),
]

// Test builds (debug) carry the fault injector (Sources/CSQLCipher/include/cblite_faults.h):
// a VFS shim and the attachment store's fault points, absent from release builds.
let faultInjectionC: CSetting = .define("CBLITE_FAULT_INJECTION", .when(configuration: .debug))
let faultInjection: SwiftSetting = .define("CBLITE_FAULT_INJECTION", .when(configuration: .debug))

let package = Package(
    name: "cblite",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "cblite", type: .dynamic, targets: ["CBLiteCAPI"]),
        .executable(name: "cblite-cli", targets: ["cblite-cli"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // The listener: HTTP(S) on SwiftNIO, gzip through NIOExtras' zlib. The
        // anonymous TLS identity's certificate is written by hand (TLS/SelfSignedCertificate:
        // swift-certificates cost ~2 MB of the size budget for that one certificate).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
    ],
    targets: [
        .target(
            name: "CSQLCipher",
            path: "Sources/CSQLCipher",
            exclude: ["generate.sh", "cblite/README.md"],
            // sqlite_unit.c is the amalgamation (sqlite3.c) with cblite/result_row.c,
            // index_rows.c and page_crypto.c, which read SQLite's and SQLCipher's own
            // structures, in one translation unit. cblite/README.md: what each file relies on.
            sources: ["sqlite_unit.c", "cblite/codec_shim.c", "cblite/adaptive_mutex.c", "cblite/kept_read_locks.c",
                      "cblite/fault_injection.c", "cblite/stop_words.c", "cblite/fts_matches.c"],
            publicHeadersPath: "include",
            cSettings: sqlcipherDefines + [faultInjectionC],
            linkerSettings: [.linkedLibrary("crypto"), .linkedLibrary("m")]
        ),
        // SHA-1/SHA-256/MD5, HMAC, HKDF, AES-256-GCM, random bytes and P-256 ECDSA on the
        // system's OpenSSL 3 libcrypto (already linked for SQLCipher): one crypto library the
        // OS patches instead of swift-crypto's vendored BoringSSL, and ≈ 5 MB less in
        // libcblite.so. Hidden symbols, as SQLCipher's: nothing of it is exported.
        .target(
            name: "CCrypto",
            path: "Sources/CCrypto",
            sources: ["ccrypto.c"],
            publicHeadersPath: "include",
            cSettings: [.unsafeFlags(["-fvisibility=hidden", "-O2"])],
            linkerSettings: [.linkedLibrary("crypto")]
        ),
        // Duktape, the JavaScript engine of design documents, compiled in (duktape/ is copied
        // from Debian's duktape-dev by generate.sh) behind cblite/js_engine.c's few calls.
        // Hidden symbols, as SQLCipher's: nothing of it is exported.
        .target(
            name: "CDuktape",
            path: "Sources/CDuktape",
            exclude: ["generate.sh"],
            sources: ["duktape/duktape.c", "cblite/js_engine.c", "cblite/js_json.c"],
            publicHeadersPath: "include",
            cSettings: [.headerSearchPath("duktape"), .unsafeFlags(["-fvisibility=hidden", "-O2", "-Wno-everything"])],
            linkerSettings: [.linkedLibrary("m")]
        ),
        .systemLibrary(name: "CCBLite", path: "Sources/CCBLite"),
        // DNS-SD through the system's Avahi daemon: libavahi-client is loaded with dlopen
        // (its headers from Debian's libavahi-client-dev), so libcblite.so does not need it
        // to load and a machine without Avahi gets a clear status. Hidden symbols.
        .target(
            name: "CAvahiShim",
            path: "Sources/CAvahiShim",
            sources: ["cavahi_shim.c"],
            publicHeadersPath: "include",
            cSettings: [.unsafeFlags(["-fvisibility=hidden", "-O2"])]
        ),
        // Peer discovery: advertising a listener and browsing for peers (DNS-SD), over CAvahiShim.
        .target(
            name: "CBLiteDiscovery",
            dependencies: ["CBLiteCore", "CAvahiShim"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // libqrencode for `cblite serve --qr`: linked into the tool only, never into libcblite.so.
        .systemLibrary(name: "CQREncode", path: "Sources/CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        // The vocabulary shared by the engine and the wire format, with no storage: JSON,
        // the status/error type, hex/base64, digests, revision IDs, attachment identities.
        // CouchWire depends on it alone; the engine re-exports it.
        .target(
            name: "CBLiteBase",
            dependencies: ["CCrypto"],
            // Cross-module optimization: the engine's hot paths (JSON writing and parsing,
            // revision IDs) inline these functions as they did when they were the engine's own.
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked", "-cross-module-optimization"], .when(configuration: .release))]
        ),
        .systemLibrary(name: "CICU", path: "Sources/CICU", pkgConfig: "icu-i18n", providers: [.apt(["libicu-dev"])]),
        .target(
            name: "CBLiteCore",
            dependencies: [
                "CBLiteBase",
                "CSQLCipher",
                "CICU",
                "CCrypto",
                "CDuktape",         // design documents' JavaScript
                "CCBLite",          // the header's CBLITE_VERSION
                .product(name: "Logging", package: "swift-log"),
            ],
            // Runtime exclusivity checks cost ~5% of a read (measured with callgrind);
            // debug builds, which the tests use, keep them.
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)), faultInjection]
        ),
        .target(
            name: "CBLiteCAPI",
            dependencies: ["CBLiteCore", "CouchWire", "CBLiteListener", "CBLiteReplicator", "CCBLite", "CBLiteDiscovery"],
            exclude: ["exports.map"],
            // As in the engine: every query row passes the handle table.
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]
        ),
        .executableTarget(
            name: "cblite-cli",
            dependencies: ["CBLiteCore", "CouchWire", "CBLiteListener", "CBLiteReplicator", "CBLiteDiscovery", "CQREncode",
                           .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // The CouchDB wire format, pure (no I/O, no storage): multipart, _revisions, query
        // parameters, error bodies and names, auth headers, the replication and _changes
        // shapes. Shared by the listener, the replicator and the C ABI. Model: NIOHTTP1's codecs.
        .target(
            name: "CouchWire",
            // NIOHTTPCompression for its vendored zlib only (gzip-encoded attachments).
            dependencies: ["CBLiteBase", .product(name: "NIOHTTPCompression", package: "swift-nio-extras")],
            // The C ABI writes query and changes rows through it: inlined there (see CBLiteBase).
            swiftSettings: [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]
        ),
        // The HTTP(S) listener serving databases with CouchDB's REST API.
        .target(
            name: "CBLiteListener",
            dependencies: [
                "CBLiteCore",
                "CouchWire",
                "CBLiteReplicator",          // POST /_replicate runs cblite's own replicator
                "CBLiteDiscovery",           // "advertise": the listener's DNS-SD advertisement
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
            ],
            // NIO handlers hop between the event loop and worker threads by design; the
            // Swift 5 mode keeps that code free of Sendable ceremony.
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // The replicator: push and pull with CouchDB-protocol peers, its HTTP(S) client on
        // SwiftNIO (NIOHTTP1's codecs, NIOSSL) — no AsyncHTTPClient: see README "Replication".
        .target(
            name: "CBLiteReplicator",
            dependencies: [
                "CBLiteCore",
                "CouchWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "CBLiteCoreTests",
            dependencies: ["CBLiteCore"],
            // Databases written by earlier versions (read by CryptoCompatibilityTests via #filePath).
            exclude: ["Fixtures"],
            swiftSettings: [faultInjection]
        ),
        .testTarget(
            name: "CBLiteDiscoveryTests",
            dependencies: ["CBLiteDiscovery", "CBLiteListener", "CBLiteCore"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "CouchWireTests",
            dependencies: ["CouchWire", "CBLiteBase"]
        ),
        .testTarget(
            name: "CBLiteReplicatorTests",
            dependencies: ["CBLiteReplicator", "CBLiteListener", "CouchWire", "CBLiteCore"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "CBLiteListenerTests",
            dependencies: [
                "CBLiteListener", "CouchWire", "CBLiteCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
