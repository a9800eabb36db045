// swift-tools-version:6.1
// libFuzzer targets for PinStore's parsers of untrusted bytes. A package of its own, so the
// library's users never build it. Build and run with Fuzz/run.sh (it passes
// -sanitize=fuzzer,address); see Fuzz/README.md.
import PackageDescription

let package = Package(
    name: "PinStoreFuzz",
    dependencies: [
        .package(name: "PinStore", path: ".."),
    ],
    targets: [
        // One binary; the FUZZ_TARGET environment variable picks the parser (each target has
        // its own corpus folder). libFuzzer provides main.
        .executableTarget(
            name: "PinStoreFuzz",
            dependencies: [.product(name: "PinStore", package: "PinStore")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
