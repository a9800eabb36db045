import Foundation
import PinStoreTestSupport
import Testing

/// The runtime products verify lists and never carry the code that makes them (issue 30: a
/// server links the verifying half only; signing lives in PinStoreSigning). The fact is one of
/// the build, so it is checked in what the compiler produced: the object files of each runtime
/// target, as the build's own output file map lists them (a file left behind by an older build
/// is not part of the target and is not read).
@Suite("The runtime modules hold no signing code")
struct RuntimeWithoutSigningTests {
    /// What only signing code contains: the signer's and the private key's type names (in every
    /// mangled symbol and type metadata record of theirs) and OpenSSL's signing and private-key
    /// entry points (named by any object that calls them).
    static let signingMarkers = [
        "FingerprintListSigner", "P256PrivateKey",
        "EVP_DigestSign", "PEM_write_bio_PKCS8PrivateKey", "PEM_read_bio_PrivateKey",
        "CPinStoreShims_EVP_PKEY_generate_ec",
    ]

    @Test("no runtime target's objects contain signing code",
          arguments: ["PinStore", "PinStoreNIO", "PinStoreAsyncHTTPClient", "PinStoreGRPC"])
    func runtimeTargetHoldsNoSigningCode(target: String) throws {
        let objects = try BuiltObjects.of(target)
        // The scan sees what it looks for: the core calls OpenSSL's verification.
        if target == "PinStore" {
            #expect(try BuiltObjects.files(objects, containing: "EVP_DigestVerify").isEmpty == false)
        }
        for marker in Self.signingMarkers {
            let found = try BuiltObjects.files(objects, containing: marker)
            #expect(found.isEmpty, "\(target) compiles signing code (\(marker)) in \(found.map(\.lastPathComponent)); it belongs in PinStoreSigning")
        }
    }

    @Test("the signing target holds every marker the runtime check looks for")
    func signingTargetHoldsTheMarkers() throws {
        let objects = try BuiltObjects.of("PinStoreSigning")
        for marker in Self.signingMarkers {
            #expect(try BuiltObjects.files(objects, containing: marker).isEmpty == false,
                    "\(marker) is not in PinStoreSigning's objects: the runtime check for it proves nothing")
        }
    }
}

/// The object files SwiftPM compiled for one target of this package.
private enum BuiltObjects {
    struct NotFound: Error, CustomStringConvertible {
        let description: String
    }

    /// The objects listed in `<target>.build/output-file-map.json` of the build folder the tests
    /// run from (or the package's default `.build/debug`).
    static func of(_ target: String) throws -> [URL] {
        var folders: [URL] = []
        if let executable = Bundle.main.executableURL {
            folders.append(executable.deletingLastPathComponent())
        }
        if let first = CommandLine.arguments.first {
            folders.append(URL(fileURLWithPath: first).deletingLastPathComponent())
        }
        folders.append(TestResources.packageRoot.appendingPathComponent(".build/debug"))
        let maps = folders.map { $0.appendingPathComponent("\(target).build/output-file-map.json") }
        guard let map = maps.first(where: { FileManager.default.fileExists(atPath: $0.path) }) else {
            throw NotFound(description: "no output file map for \(target) in \(folders.map(\.path)); was it built by SwiftPM?")
        }
        let entries = try JSONDecoder().decode([String: [String: String]].self, from: Data(contentsOf: map))
        let objects = entries.values.compactMap { $0["object"] }.map { URL(fileURLWithPath: $0) }
        guard !objects.isEmpty else { throw NotFound(description: "\(map.path) lists no object file") }
        return objects
    }

    /// The objects whose bytes contain `marker`.
    static func files(_ objects: [URL], containing marker: String) throws -> [URL] {
        let needle = Data(marker.utf8)
        return try objects.filter { try Data(contentsOf: $0).range(of: needle) != nil }
    }
}
