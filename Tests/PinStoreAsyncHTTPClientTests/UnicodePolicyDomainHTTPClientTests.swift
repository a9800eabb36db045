import AsyncHTTPClient
import Foundation
import PinStore
import PinStoreAsyncHTTPClient
import PinStoreTestSupport
import Testing

/// A policy written for a Unicode domain (`bücher.example`) must pin the host the transports
/// connect to, which they name in its IDNA form `xn--bcher-kva.example` (Foundation's URL
/// converts it so). Issue 23 allows two outcomes: the store converts the domain and checks that
/// host against the policy, or the configuration is refused with an error naming the `xn--`
/// form to write. Never the third: the host looked up as unpinned and let through by a
/// relaxation for hosts without pins. Real TLS server on 127.0.0.1 presenting another
/// certificate for `xn--bcher-kva.example`.
@Suite struct UnicodePolicyDomainHTTPClientTests {
    static let unicodeDomain = "bücher.example"
    /// The IDNA form of `unicodeDomain` (RFC 3492 Punycode of "bücher"), the name in the fixtures' SAN.
    static let asciiHost = "xn--bcher-kva.example"

    /// The relaxations that let a host without pins through.
    enum Relaxation: String, CaseIterable, Sendable {
        /// `enforcement = .listReportOnly`: hosts without pins run report-only.
        case listReportOnly
        /// A signed challenge-mode `domainsConfig` with `sslPinningRequiredForUnlisted: false`.
        case domainsConfigExemption
    }

    /// A store whose only pins are an enforcing policy for `bücher.example` pinning
    /// `pki/bucher-idn.pem`, under `relaxation`; the list server too, when there is one.
    static func store(_ relaxation: Relaxation) async throws -> (PinStore, stop: @Sendable () async -> Void) {
        let policy = PinPolicy(domain: unicodeDomain, pins: [
            .certificate(sha256Base64: try TestResources.certificate("pki/bucher-idn.pem").fingerprintBase64),
            .leafKey(spkiSHA256Base64: Data(repeating: 0xB0, count: 32).base64EncodedString()),   // a backup nothing presents
        ])
        switch relaxation {
        case .listReportOnly:
            return (try Pins.store(policies: [policy], enforcement: .listReportOnly), stop: {})
        case .domainsConfigExemption:
            let list = try await Pins.challengeListServer([Pins.entry("pki/api-example.pem", name: "api.example.com")],
                                                          domainsConfig: #"{"sslPinningRequiredForUnlisted": false}"#)
            do {
                let store = try Pins.store(serviceURL: list.baseURL.appendingPathComponent("list.json"), useChallenge: true,
                                           policies: [policy])
                #expect(await store.update() == .ok)
                return (store, stop: { try? await list.shutdown() })
            } catch {
                try? await list.shutdown()
                throw error
            }
        }
    }

    @Test(arguments: Relaxation.allCases)
    func unicodePolicyDomainRefusesAnotherCertificateForItsIDNAHostOrIsRefusedAtConfiguration(_ relaxation: Relaxation) async throws {
        let made: (PinStore, stop: @Sendable () async -> Void)
        do {
            made = try await Self.store(relaxation)
        } catch {
            // Refused at configuration: the error must say which name to write instead.
            #expect(String(describing: error).contains(Self.asciiHost), "refused without naming \(Self.asciiHost): \(error)")
            return
        }
        let (store, stop) = made
        let outcome = try await LeafNamesHTTPClientTests.request(Self.asciiHost, servedBy: "bucher-idn-impostor", store: store)
        await stop()
        LeafNamesHTTPClientTests.expectRefusedByBothAdapters(outcome)
        #expect((outcome.httpClient.failure as? PinningFailure)?.reason == .pinMismatch)
        #expect(outcome.chainAware.decision?.failure?.reason == .pinMismatch)
    }
}
