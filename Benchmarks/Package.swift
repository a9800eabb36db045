// swift-tools-version:6.1
// Benchmarks for PinStore, as a package of their own so the library's users never build them.
// Run: swift run -c release --package-path Benchmarks
import PackageDescription

let package = Package(
    name: "PinStoreBenchmarks",
    dependencies: [
        .package(name: "PinStore", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "PinStoreBenchmarks",
            dependencies: [.product(name: "PinStore", package: "PinStore")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
