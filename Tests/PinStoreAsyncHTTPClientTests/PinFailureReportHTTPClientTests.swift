import AsyncHTTPClient
import Foundation
import PinStore
import PinStoreAsyncHTTPClient
import PinStoreDevServer
import PinStoreTestSupport
import Testing

/// Pin-failure reports from the AsyncHTTPClient adapter, delivered to a collector on 127.0.0.1.
@Suite struct PinFailureReportHTTPClientTests {
    @Test func aRefusedConnectionIsReportedWithItsPortAndLeaf() async throws {
        let reports = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: reports) }
        let collector = try ReportCollector(directory: reports)
        let collectorServer = try await ListServer.start(responder: collector.responder)
        let fingerprint = try TestResources.certificate("pki/localhost-dnsonly.pem").fingerprintBase64
        var configuration = PinStore.Configuration(
            serviceURL: URL(string: "http://127.0.0.1:1/unused")!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            fallbackData: Data(#"{"fingerprints":[{"name":"localhost","fingerprint":"\#(fingerprint)","expires":4102444799}]}"#.utf8),
            storageDirectory: reports.appendingPathComponent("store"),
            requestTimeout: HangGuard.seconds)
        configuration.reportURI = collectorServer.baseURL.appendingPathComponent("pin-reports")
        let store = try PinStore(configuration: configuration)
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/attacker-dnsonly-chain.pem"], key: "pki/attacker-dnsonly.key.pem")
        let client = try Pins.client(store, updateOnMismatch: false)

        await #expect(throws: PinningFailure.self) { try await Pins.get(client, server) }
        await store.pinFailureReporter?.waitUntilIdle()
        try await client.shutdown()
        await server.shutdown()
        try? await collectorServer.shutdown()

        let files = try collector.reportFiles()
        #expect(files.count == 1)
        let report = try PinFailureReport(jsonData: try Data(contentsOf: try #require(files.first)))
        #expect(report.hostname == "localhost")
        #expect(report.port == server.port)
        #expect(report.reason == "pin_mismatch")
        let leaf = try TestResources.certificate("pki/attacker-dnsonly.pem").derRepresentation
        #expect(try report.servedCertificateChain.map { try X509Certificate.certificates(pem: $0)[0].derRepresentation } == [leaf])
        #expect(try report.validatedCertificateChain.map { try X509Certificate.certificates(pem: $0)[0].derRepresentation } == [leaf])
    }
}
