// swift-tools-version:6.1
// PinStore: dynamic certificate-fingerprint pinning for Swift on Linux and Apple platforms.
import PackageDescription

let package = Package(
    name: "PinStore",
    products: [
        .library(name: "PinStore", targets: ["PinStore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
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
        .target(
            name: "PinStore",
            dependencies: [
                "COpenSSL",
                "CPinStoreShims",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CPinStoreTestSupport",
            path: "Tests/CPinStoreTestSupport"
        ),
        .testTarget(
            name: "PinStoreTests",
            dependencies: ["PinStore", "CPinStoreTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
