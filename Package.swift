// swift-tools-version:6.1
// PinStore: dynamic certificate-fingerprint pinning for Swift on Linux and macOS.
import PackageDescription

let package = Package(
    name: "PinStore",
    // macOS only among Apple's platforms: iOS, tvOS and watchOS have no system OpenSSL to link. Linux
    // needs no entry (SwiftPM builds every package there).
    platforms: [.macOS(.v13)],
    products: [
        // The core: signed list, store, validation. Depends on OpenSSL, swift-log, swift-metrics and
        // swift-service-lifecycle only.
        .library(name: "PinStore", targets: ["PinStore"]),
        // Enforcement on live connections: SwiftNIO verification and pinned URLSession on Linux.
        .library(name: "PinStoreNIO", targets: ["PinStoreNIO"]),
        // Pinning for AsyncHTTPClient: a pinned `HTTPClient.Configuration`. Its own product, so
        // apps that do not use AsyncHTTPClient never build it.
        .library(name: "PinStoreAsyncHTTPClient", targets: ["PinStoreAsyncHTTPClient"]),
        // Pinning for gRPC clients (grpc-swift 2 over grpc-swift-nio-transport's HTTP/2 Posix
        // transport). Its own product, so only apps that use gRPC build grpc-swift.
        .library(name: "PinStoreGRPC", targets: ["PinStoreGRPC"]),
        // Making signed lists and key documents (the server side of the core's verifier), for
        // teams that sign from their own Swift code. The runtime products above never link it.
        .library(name: "PinStoreSigning", targets: ["PinStoreSigning"]),
        // The publishing half: a long-lived service that watches partners over TLS and keeps the
        // signed list ahead of their certificate rotations (`pinstore publish`). Tooling, like the
        // signing product: the runtime products never link it.
        .library(name: "PinStorePublisher", targets: ["PinStorePublisher"]),
        // For the users' own tests (XCTest or Swift Testing): a throwaway PKI and list-signing key,
        // signed fixture lists, loopback list and HTTPS servers, a store configured against them.
        .library(name: "PinStoreTesting", targets: ["PinStoreTesting"]),
        // The command-line tool: keys, signing, inspection, a development list server, the demo.
        .executable(name: "pinstore", targets: ["PinStoreCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // Already in the graph through swift-nio; PinStoreNIO counts its per-request objects with it.
        .package(url: "https://github.com/apple/swift-atomics.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // PinStoreGRPC only (and its tests): gRPC's core and its SwiftNIO HTTP/2 transport.
        .package(url: "https://github.com/grpc/grpc-swift-2.git", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport.git", from: "2.9.2"),
        // Tests only: the OpenAPI transport example.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        // `swift package generate-documentation` (DocC); a command plugin, never linked.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
    ],
    targets: [
        // The system OpenSSL 3 (libssl-dev), found through pkg-config.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev", "pkg-config"]), .brew(["openssl@3"])]
        ),
        // Thin C wrappers for what does not import into Swift (macros, stacks, variadics).
        .target(
            name: "CPinStoreShims",
            dependencies: ["COpenSSL"]
        ),
        // posix_spawn and waitpid for the publisher's signing command and the tests' children:
        // Foundation's Process crashes on Linux with many descriptors open (its header says why).
        .target(name: "CPinStoreSpawn"),
        .target(
            name: "PinStore",
            dependencies: [
                "COpenSSL",
                "CPinStoreShims",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The signing half, kept apart from the verifying core as python-tuf keeps `repository`
        // apart from `ngclient`: the list signer, private keys, key-document and Certificate
        // Transparency tools. Used by the tool, the development server and the test kit; a server
        // that only verifies lists never links it.
        .target(
            name: "PinStoreSigning",
            dependencies: [
                "PinStore",
                "COpenSSL",
                "CPinStoreShims",
            ]
        ),
        // The publisher: publication file, partner probes, the rules before anything is published,
        // vantage points and approvals, atomic publication. NIO here is only for its TLS probe (the
        // publisher is tooling, like the CLI; servers never link it).
        .target(
            name: "PinStorePublisher",
            dependencies: [
                "PinStore",
                "PinStoreSigning",
                "CPinStoreSpawn",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // The probe waits for `TLSUserEvent.handshakeCompleted`: the server proved it
                // holds the leaf's key.
                .product(name: "NIOTLS", package: "swift-nio"),
                // The report endpoint (pin-failure reports from the stores).
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "PinStoreNIO",
            dependencies: [
                "PinStore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Atomics", package: "swift-atomics"),
            ]
        ),
        // Pinning for AsyncHTTPClient through its connection initializers (no fork, no NIO
        // verification callback): the leaf of every new connection is checked against the store.
        .target(
            name: "PinStoreAsyncHTTPClient",
            dependencies: [
                "PinStore",
                "PinStoreNIO",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Pinning for gRPC: a pinned HTTP/2 Posix client transport whose TLS handshake runs the
        // NIO verifier's chain-aware decision, and whose connections a list update re-checks.
        .target(
            name: "PinStoreGRPC",
            dependencies: [
                "PinStore",
                "PinStoreNIO",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2Posix", package: "grpc-swift-nio-transport"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A small HTTP(S) server that serves signed lists on loopback: `pinstore serve`, the
        // demo, the tests and the test kit (PinStoreTesting). Not a product of its own: apps never
        // ship it.
        .target(
            name: "PinStoreDevServer",
            dependencies: [
                "PinStore",
                "PinStoreSigning",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The test kit (`PinStoreTesting` product). Certificates and keys through the system
        // OpenSSL; its servers are the development server's. No AsyncHTTPClient.
        .target(
            name: "PinStoreTesting",
            dependencies: [
                "PinStore",
                "PinStoreSigning",
                "PinStoreDevServer",
                "COpenSSL",
                "CPinStoreShims",
            ]
        ),
        .executableTarget(
            name: "PinStoreCLI",
            dependencies: [
                "PinStore",
                "PinStoreSigning",
                "PinStorePublisher",
                "PinStoreNIO",
                "PinStoreDevServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // `pinstore publish run`: the publisher in a ServiceGroup, logging to stderr.
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(
            name: "CPinStoreTestSupport",
            path: "Tests/CPinStoreTestSupport"
        ),
        // Fixture and vector paths shared by every test target.
        .target(
            name: "PinStoreTestSupport",
            dependencies: ["PinStore", "CPinStoreTestSupport", "CPinStoreSpawn"],
            path: "Tests/PinStoreTestSupport"
        ),
        .testTarget(
            name: "PinStoreTests",
            dependencies: [
                // PinStoreTesting: the test CT log (embedded SCTs made through OpenSSL).
                "PinStore", "PinStoreSigning", "PinStoreDevServer", "CPinStoreTestSupport", "PinStoreTestSupport", "PinStoreTesting",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "PinStoreNIOTests",
            dependencies: [
                "PinStore", "PinStoreNIO", "PinStoreSigning", "PinStoreDevServer", "PinStoreTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ]
        ),
        // The child process of the crash drill (killed with SIGKILL mid-update); never a product.
        .executableTarget(
            name: "PinStoreCrashDrillChild",
            dependencies: ["PinStore"],
            path: "Tests/PinStoreCrashDrillChild"
        ),
        .testTarget(
            name: "PinStoreAsyncHTTPClientTests",
            dependencies: [
                "PinStore", "PinStoreAsyncHTTPClient", "PinStoreNIO", "PinStoreSigning", "PinStoreDevServer", "PinStoreTestSupport", "PinStoreTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The gRPC adapter through a real gRPC server with TLS on 127.0.0.1.
        .testTarget(
            name: "PinStoreGRPCTests",
            dependencies: [
                "PinStore", "PinStoreNIO", "PinStoreGRPC", "PinStoreTesting",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2Posix", package: "grpc-swift-nio-transport"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The test kit's own tests (Swift Testing), and the XCTest suite the README shows.
        .testTarget(
            name: "PinStoreTestingTests",
            dependencies: [
                "PinStore", "PinStoreNIO", "PinStoreTesting",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "PinStorePublisherTests",
            dependencies: [
                "PinStore", "PinStoreSigning", "PinStorePublisher", "PinStoreTesting", "PinStoreTestSupport", "PinStoreDevServer",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "PinStoreCLITests",
            dependencies: ["PinStore", "PinStoreSigning", "PinStoreDevServer", "PinStoreTestSupport", "PinStoreTesting"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
