import Foundation
import PinStore
import PinStoreTestSupport
import Testing

/// `pinstore sign --crl-host NAME=MODE`: the `crl` section it writes is one a store accepts and
/// applies, and what a store would refuse is refused before anything is written. The list pins
/// the fixture leaf `localhost-dnsonly.pem` (no IP-address name); the store is asked through
/// the leaf view (AsyncHTTPClient's), where a host under a CRL mode is refused with a typed
/// reason because no issuer is there to verify a CRL with: that refusal shows which mode the
/// host got, and a host under no mode is allowed by its pin.
@Suite struct SignCRLHostCommandTests {
    static let key = TestResources.fixturePath("keys/list-signing.key.pem")

    static func run(_ extra: [String], out: URL? = nil) async throws -> ProcessOutput {
        var arguments = ["sign", "--key", key, "--cert", TestResources.fixturePath("pki/localhost-dnsonly.pem")]
        if let out { arguments += ["--out", out.path] }
        return try await PinstoreBinary.run(arguments + extra)
    }

    static func sign(_ extra: [String]) async throws -> URL {
        let list = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-crl-host-\(UUID().uuidString).json")
        let result = try await run(extra, out: list)
        try #require(result.status == 0, "\(result.stderr)")
        return list
    }

    static func leafDecision(_ store: PinStore) throws -> PinningDecision {
        store.leafDecision(leaf: try TestResources.certificate("pki/localhost-dnsonly.pem").derRepresentation, peerAddress: "127.0.0.1")
    }

    @Test func aHostTheListPutsUnderSoftFailGetsThatModeInAStore() async throws {
        let store = try await SignRevocationCommandTests.store(reading: try await Self.sign(["--crl-host", "localhost=enforceSoftFail"]))
        let decision = try Self.leafDecision(store)
        #expect(!decision.isAllowed)
        #expect(decision.failure?.reason.crlCheckFailure?.unavailable?.code == .needsValidatedChain)
    }

    @Test func aPatternUnderReportOnlyReportsAndAllows() async throws {
        let store = try await SignRevocationCommandTests.store(reading: try await Self.sign(["--crl-host", "*.pay.example=enforceSoftFail", "--crl-host", "localhost=reportOnly"]))
        let decision = try Self.leafDecision(store)
        #expect(decision.isAllowed)
        #expect(decision.reportedFailure?.reason.crlCheckFailure?.unavailable?.code == .needsValidatedChain)
    }

    @Test func aHostTheListDoesNotNameKeepsTheStoresMode() async throws {
        let store = try await SignRevocationCommandTests.store(reading: try await Self.sign(["--crl-host", "api.example=enforceHardFail"]))
        let decision = try Self.leafDecision(store)
        #expect(decision.isAllowed)
        #expect(decision.reportedFailure == nil)
    }

    @Test func anUnknownModeIsRefusedWithTheModesAStoreReadsAndNothingIsWritten() async throws {
        let list = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-crl-host-\(UUID().uuidString).json")
        let result = try await Self.run(["--crl-host", "localhost=strict"], out: list)
        #expect(result.status != 0)
        #expect(result.stderr.contains(#"mode "strict" is not one of "off", "reportOnly", "enforceSoftFail", "enforceHardFail""#), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: list.path))
    }

    @Test func twoEntriesForTheSameHostAreRefusedAsAmbiguous() async throws {
        let result = try await Self.run(["--crl-host", "localhost=enforceSoftFail", "--crl-host", "localhost=off"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("ambiguous"), "\(result.stderr)")
    }

    @Test func anArgumentWithoutAModeIsRefused() async throws {
        let result = try await Self.run(["--crl-host", "localhost"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("expected NAME=MODE"), "\(result.stderr)")
    }

    @Test func aCRLSectionWithoutTheWholeListSignatureIsRefusedBeforeSigning() async throws {
        let result = try await PinstoreBinary.run(["sign", "--key", Self.key, "--cert", TestResources.fixturePath("pki/localhost.pem"),
                                                   "--no-list-signature", "--crl-host", "localhost=enforceSoftFail"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("--crl-host needs the whole-list signature"), "\(result.stderr)")
    }
}
