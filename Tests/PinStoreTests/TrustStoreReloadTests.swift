import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// The system trust store is read again when its bundle or directory changes, and chains
/// verified against the old content are no longer answered from the cache.
@Suite struct TrustStoreReloadTests {
    let chain: [Data]
    let directory: TemporaryDirectory
    let bundle: URL
    let certificateDirectory: URL

    init() throws {
        chain = try TestResources.chainDER("pki/localhost-chain.pem")
        directory = try TemporaryDirectory()
        bundle = directory.url.appendingPathComponent("ca-certificates.crt")
        certificateDirectory = directory.url.appendingPathComponent("certs")
        try FileManager.default.createDirectory(at: certificateDirectory, withIntermediateDirectories: true)
    }

    func validates(_ validator: ChainValidator) -> Bool {
        (try? validator.validatedDER(chain: chain, hostname: "localhost", at: ChainValidatorTests.now)) != nil
    }

    @Test func aRootRemovedFromTheBundleIsNoLongerTrusted() throws {
        defer { directory.cleanUp() }
        try TestResources.fixture("pki/root-ca.pem").write(to: bundle)
        let validator = ChainValidator(trustRoots: .system(file: bundle.path, directory: certificateDirectory.path, checkInterval: .zero))
        #expect(validates(validator))
        // The root is replaced by another one, as `update-ca-certificates` would after removing it.
        try TestResources.fixture("pki/rogue-root-ca.pem").write(to: bundle)
        #expect(!validates(validator))
    }

    @Test func aRootAddedToTheBundleBecomesTrusted() throws {
        defer { directory.cleanUp() }
        try TestResources.fixture("pki/rogue-root-ca.pem").write(to: bundle)
        let validator = ChainValidator(trustRoots: .system(file: bundle.path, directory: certificateDirectory.path, checkInterval: .zero))
        #expect(!validates(validator))
        try TestResources.fixture("pki/root-ca.pem").write(to: bundle)
        #expect(validates(validator))
    }

    @Test func theStoreIsNotCheckedAgainBeforeTheIntervalHasPassed() throws {
        defer { directory.cleanUp() }
        try TestResources.fixture("pki/root-ca.pem").write(to: bundle)
        let validator = ChainValidator(trustRoots: .system(file: bundle.path, directory: certificateDirectory.path, checkInterval: .seconds(3600)))
        #expect(validates(validator))
        try TestResources.fixture("pki/rogue-root-ca.pem").write(to: bundle)
        // Still the content read first: the check is cheap because it is rare.
        #expect(validates(validator))
    }

    @Test func theDefaultSystemStoreIsCheckedOnceAMinute() {
        #expect(SystemTrustSource.openSSLDefault.checkInterval == .seconds(60))
    }
}
