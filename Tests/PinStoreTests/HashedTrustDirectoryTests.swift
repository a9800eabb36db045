import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// The system trust store with a hashed certificate directory: issuers are looked up there by
/// name as chains need them, the bundle file is parsed only when that finds none, and the
/// reload on change still applies.
@Suite struct HashedTrustDirectoryTests {
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

    /// Puts the fixture `name` into the directory under its hashed name, as `openssl rehash` would.
    @discardableResult
    func hash(_ name: String) throws -> URL {
        let certificate = try TestResources.certificate("pki/\(name)")
        let fileName = try #require(SystemTrustSource.hashedFileName(for: certificate))
        let file = certificateDirectory.appendingPathComponent(fileName)
        try TestResources.fixture("pki/\(name)").write(to: file)
        return file
    }

    func validator(checkInterval: Duration = .zero) -> ChainValidator {
        ChainValidator(trustRoots: .system(file: bundle.path, directory: certificateDirectory.path, checkInterval: checkInterval))
    }

    func verify(_ validator: ChainValidator, _ chain: [Data]? = nil) throws(ChainValidationError) {
        _ = try validator.validatedDER(chain: chain ?? self.chain, hostname: "localhost", at: ChainValidatorTests.now)
    }

    @Test func theHashedNameIsTheOneOpenSSLRehashGives() throws {
        // `openssl x509 -subject_hash -noout -in Fixtures/pki/root-ca.pem` prints 38b56757.
        let root = try TestResources.certificate("pki/root-ca.pem")
        #expect(SystemTrustSource.hashedFileName(for: root, index: 3) == "38b56757.3")
    }

    @Test func aDirectoryWithHashedNamesIsLookedUpFirst() throws {
        defer { directory.cleanUp() }
        try TestResources.fixture("pki/rogue-root-ca.pem").write(to: bundle)
        #expect(!SystemTrustSource.isHashed(certificateDirectory.path))
        try hash("root-ca.pem")
        #expect(SystemTrustSource.isHashed(certificateDirectory.path))
        #expect(SystemTrustSource(file: bundle.path, directories: [certificateDirectory.path], checkInterval: .zero, isOpenSSLDefault: false)
            .looksUpDirectoriesFirst)
    }

    /// A directory whose listing spans several of glibc's 32 KB `readdir` buffers: reading the
    /// names must stay inside each entry (copying `d_name` whole reads past the buffer's end,
    /// which AddressSanitizer, run in CI, reports; it crashed swift-corelibs-foundation#5472).
    @Test func aDirectoryOfThousandsOfOtherFilesIsReadSafelyToTheEnd() throws {
        defer { directory.cleanUp() }
        for index in 0..<3_000 {
            #expect(FileManager.default.createFile(atPath: certificateDirectory.appendingPathComponent("ca-\(index).pem").path, contents: Data()))
        }
        #expect(!SystemTrustSource.isHashed(certificateDirectory.path))
        try hash("root-ca.pem")
        #expect(SystemTrustSource.isHashed(certificateDirectory.path))
    }

    @Test func aChainToARootInTheHashedDirectoryIsTrustedWithoutParsingTheBundle() throws {
        defer { directory.cleanUp() }
        try TestResources.fixture("pki/rogue-root-ca.pem").write(to: bundle)
        try hash("root-ca.pem")
        let validator = validator()
        #expect(throws: Never.self) { try verify(validator) }
        #expect(!validator.trustRoots.store.current().hasParsedBundle)
    }

    @Test func aChainToAnUnknownRootIsRefusedThroughTheLazyLookup() throws {
        defer { directory.cleanUp() }
        try TestResources.fixture("pki/rogue-root-ca.pem").write(to: bundle)
        try hash("rogue-root-ca.pem")
        let validator = validator()
        #expect(throws: ChainValidationError(.unknownIssuer, depth: 0, detail: "")) { try verify(validator) }
        // Refused by the bundle too, not only by the directory.
        #expect(validator.trustRoots.store.current().hasParsedBundle)
    }

    @Test func aRootOnlyInTheBundleIsStillTrusted() throws {
        defer { directory.cleanUp() }
        try TestResources.fixture("pki/root-ca.pem").write(to: bundle)
        try hash("rogue-root-ca.pem")
        let validator = validator()
        #expect(throws: Never.self) { try verify(validator) }
        #expect(validator.trustRoots.store.current().hasParsedBundle)
    }

    @Test func anImpostorIsRefusedAfterTheBundleWasParsed() throws {
        defer { directory.cleanUp() }
        try TestResources.fixture("pki/root-ca.pem").write(to: bundle)
        try hash("rogue-root-ca.pem")
        let validator = validator()
        try verify(validator)
        // The rogue root is in the directory: a chain to it is trusted; a self-signed leaf that
        // is in neither place is not.
        #expect(throws: Never.self) { try verify(validator, TestResources.chainDER("pki/rogue-leaf.pem")) }
        #expect(throws: ChainValidationError(.untrustedSelfSigned, depth: 0, detail: "")) {
            try verify(validator, TestResources.chainDER("pki/self-signed.pem"))
        }
    }

    @Test func aRootRemovedFromTheHashedDirectoryIsNoLongerTrustedAfterReload() throws {
        defer { directory.cleanUp() }
        try TestResources.fixture("pki/rogue-root-ca.pem").write(to: bundle)
        let root = try hash("root-ca.pem")
        try hash("rogue-root-ca.pem")
        let validator = validator()
        try verify(validator)
        // As `update-ca-certificates` does when the root is removed: the hashed file goes, the
        // directory changes.
        try FileManager.default.removeItem(at: root)
        #expect(throws: ChainValidationError(.unknownIssuer, depth: 0, detail: "")) { try verify(validator) }
    }

    @Test func aRootAddedToTheHashedDirectoryBecomesTrustedAfterReload() throws {
        defer { directory.cleanUp() }
        try TestResources.fixture("pki/rogue-root-ca.pem").write(to: bundle)
        try hash("rogue-root-ca.pem")
        let validator = validator()
        #expect(throws: ChainValidationError(.unknownIssuer, depth: 0, detail: "")) { try verify(validator) }
        try hash("root-ca.pem")
        #expect(throws: Never.self) { try verify(validator) }
    }

    @Test func anExpiredChainIsRefusedThroughTheLazyLookup() throws {
        defer { directory.cleanUp() }
        try TestResources.fixture("pki/rogue-root-ca.pem").write(to: bundle)
        try hash("root-ca.pem")
        let validator = validator()
        let later = Date(timeIntervalSince1970: 4_200_000_000)  // after every fixture's notAfter (2099)
        #expect(throws: ChainValidationError(.expired, depth: 0, detail: "")) {
            _ = try validator.validatedDER(chain: chain, hostname: "localhost", at: later)
        }
    }
}
