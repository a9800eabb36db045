// swift-tools-version:6.1
// Benchmarks for PinStore, as a package of their own so the library's users never build them.
// Run: swift run -c release --package-path Benchmarks
import PackageDescription

let package = Package(
    name: "PinStoreBenchmarks",
    dependencies: [
        .package(name: "PinStore", path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        .executableTarget(
            name: "PinStoreBenchmarks",
            dependencies: [
                .product(name: "PinStore", package: "PinStore"),
                .product(name: "PinStoreNIO", package: "PinStore"),
                .product(name: "PinStoreAsyncHTTPClient", package: "PinStore"),
                // The test CT log and CA (CertificateTransparencyBenchmark.swift).
                .product(name: "PinStoreSigning", package: "PinStore"),
                .product(name: "PinStoreTesting", package: "PinStore"),
                // The publisher's probe, list and rotation-latency rows (PublisherBenchmark.swift).
                .product(name: "PinStorePublisher", package: "PinStore"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
