import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Names that are not host names are refused at every entry point: lookups, list entries,
/// configuration, and the host the certificate is checked against.
@Suite struct HostNameTests {
    /// A store holding `static-good.json` (which pins `wildcard.pem` for `*.pinstore.test`).
    func primedStore(_ directory: TemporaryDirectory) async throws -> PinStore {
        let store = try StoreFixtures.store(ScriptedFetcher.serving(try StoreFixtures.list("static-good.json")), directory: directory.url)
        try #require(await store.update() == .ok)
        return store
    }

    @Test func theWildcardFixtureIsTrustedForARealSubdomain() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try await primedStore(directory)
        #expect(store.matchPins(commonName: "www.pinstore.test", certificateData: try StoreFixtures.der("wildcard")) == .trusted)
    }

    @Test func validateRefusesANameWithANULLabel() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try await primedStore(directory)
        #expect(store.matchPins(commonName: "\0.pinstore.test", certificateData: try StoreFixtures.der("wildcard")) == .untrusted)
    }

    @Test func validateRefusesALeadingDotName() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try await primedStore(directory)
        #expect(store.matchPins(commonName: ".pinstore.test", certificateData: try StoreFixtures.der("wildcard")) == .untrusted)
    }

    @Test func validateRefusesANameWithAnEmptyInnerLabel() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try await primedStore(directory)
        #expect(store.matchPins(commonName: "api..pinstore.test", certificateData: try StoreFixtures.der("wildcard")) == .untrusted)
    }

    @Test func validateStillAcceptsATrailingDotAndUppercase() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try await primedStore(directory)
        #expect(store.matchPins(commonName: "LocalHost.", certificateData: try StoreFixtures.der("localhost")) == .trusted)
    }

    @Test func chainValidationRefusesALeadingDotHost() throws {
        let chain = try TestResources.chainDER("pki/wildcard.pem", "pki/intermediate-ca.pem")
        let validator = ChainValidator(trustRoots: .anchors([try TestResources.certificate("pki/root-ca.pem")]))
        #expect(try validator.validate(chain: chain, hostname: "www.pinstore.test", at: ChainValidatorTests.now).count == 3)
        #expect(throws: ChainValidationError.self) {
            _ = try validator.validate(chain: chain, hostname: ".pinstore.test", at: ChainValidatorTests.now)
        }
    }

    @Test func theEvaluatorDeniesALeadingDotHostAWildcardPinWouldCover() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try await primedStore(directory)
        let evaluator = PinningEvaluator(store: store, trustRoots: .anchors([try TestResources.certificate("pki/root-ca.pem")]))
        let chain = try TestResources.chainDER("pki/wildcard.pem", "pki/intermediate-ca.pem")
        #expect(evaluator.evaluateNow(host: "www.pinstore.test", presentedChain: chain, at: ChainValidatorTests.now).isAllowed)
        #expect(!evaluator.evaluateNow(host: ".pinstore.test", presentedChain: chain, at: ChainValidatorTests.now).isAllowed)
        #expect(!evaluator.evaluateNow(host: "\0.pinstore.test", presentedChain: chain, at: ChainValidatorTests.now).isAllowed)
    }

    @Test(arguments: ["*.com", "*.test", "*.co.uk", "*.CO.UK.", "*.github.io"])
    func aListWithAWildcardOnAPublicSuffixIsRefused(name: String) async throws {
        #expect(try await updateResult(withEntryNamed: name) == .invalidData)
    }

    @Test(arguments: [".api.pinstore.test", "api..pinstore.test", "*..pinstore.test", "."])
    func aListWithAnEmptyLabelIsRefused(name: String) async throws {
        #expect(try await updateResult(withEntryNamed: name) == .invalidData)
    }

    @Test(arguments: ["*.pinstore.test", "*.example.co.uk", "api.example.com."])
    func aListWithAWellFormedNameIsAccepted(name: String) async throws {
        #expect(try await updateResult(withEntryNamed: name) == .ok)
    }

    @Test func aConfigurationWithAMalformedExpectedNameIsRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let configuration = try StoreFixtures.configuration(directory: directory.url, expectedCommonNames: ["api.example.com", ".example.com"])
        #expect(throws: PinStoreError.self) {
            _ = try PinStore(configuration: configuration, fetcher: ScriptedFetcher.serving(Data()), clock: ManualClock.inValidPeriod())
        }
    }

    @Test func lookupKeyLowercasesAndDropsOneTrailingDot() {
        #expect(HostName.lookupKey("API.Example.COM.") == "api.example.com")
        #expect(HostName.lookupKey("api.example.com") == "api.example.com")
        #expect(HostName.lookupKey("::1") == "::1")
    }

    @Test(arguments: ["", ".", "..", "a..b", ".a", "a b", "a\u{7f}b", "a\0b", "a.b.."])
    func lookupKeyRefusesWhatIsNotAHostName(name: String) {
        #expect(HostName.lookupKey(name) == nil)
    }

    private func updateResult(withEntryNamed name: String) async throws -> PinStore.UpdateResult {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let entry = FingerprintEntry(name: name, fingerprint: Data(repeating: 7, count: 32), expires: 4_102_444_799)
        let body = try TestLists.signedStatic([entry], key: try StoreFixtures.signingKey())
        let store = try StoreFixtures.store(ScriptedFetcher.serving(body), directory: directory.url)
        return await store.update(mode: .forced)
    }
}
