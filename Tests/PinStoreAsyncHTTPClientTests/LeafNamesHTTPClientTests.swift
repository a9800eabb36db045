import AsyncHTTPClient
import Foundation
import PinStore
import PinStoreAsyncHTTPClient
import PinStoreTestSupport
import Testing

/// The pinned `HTTPClient` sees only the leaf, never the host it was asked for, and a leaf is
/// accepted for more hosts than its DNS names say: swift-nio-ssl matches an IP-address name
/// against the socket's peer address whatever DNS name was requested
/// (`../shared/notes/linux-tls.md`), and a wildcard name covers every host under it. So the
/// leaf view may allow a leaf only if the chain-aware decision would allow it for every host it
/// could be presented for (issue 23), and must refuse a leaf naming the peer's address.
///
/// Each test is one of issue 23's reproductions, against a real TLS server on 127.0.0.1: the
/// client asks for a DNS name (`dnsOverride` sends it to 127.0.0.1) and the server presents a
/// certificate that is not pinned for that name. The chain-aware adapter
/// (`PinningTLSVerifier`) is pointed at the same server and must refuse too.
@Suite struct LeafNamesHTTPClientTests {
    /// A second pin no server presents (policies need two distinct pins).
    static let backupPin = PinIdentity.leafKey(spkiSHA256Base64: Data(repeating: 0xB0, count: 32).base64EncodedString())

    /// `pki/api-example.pem`, the certificate api.example.com is pinned to throughout.
    static func apiExamplePin() throws -> PinIdentity {
        .certificate(sha256Base64: try TestResources.certificate("pki/api-example.pem").fingerprintBase64)
    }

    /// An enforcing policy pinning api.example.com to its own certificate.
    static func apiExamplePolicy() throws -> PinPolicy {
        PinPolicy(domain: "api.example.com", pins: [try apiExamplePin(), backupPin])
    }

    /// What each adapter did with `GET https://HOST:PORT/hello` on one server.
    struct Outcome {
        /// The pinned `HTTPClient`'s response status, or its error.
        var httpClient: Result<UInt, any Error>
        /// Decrypted bytes the server received from the `HTTPClient` (0: refused before the request).
        var httpClientBytes: Int
        /// What `PinningTLSVerifier` did on the same server, for the same host.
        var chainAware: ChainAwareClient.Outcome
        /// Decrypted bytes the server received from the chain-aware client.
        var chainAwareBytes: Int
    }

    /// Serves `leaf` (`pki/LEAF-chain.pem`) on 127.0.0.1 and asks each adapter for `host` there,
    /// without an update on a refusal (the store decides as configured).
    static func request(_ host: String, servedBy leaf: String, store: PinStore) async throws -> Outcome {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/\(leaf)-chain.pem"], key: "pki/\(leaf).key.pem")
        let client = try Pins.client(store, updateOnEmpty: false, updateOnMismatch: false, loopbackNames: [host])
        let httpClient: Result<UInt, any Error>
        do {
            httpClient = .success(try await Pins.get(client, server, host: host).0.status.code)
        } catch {
            httpClient = .failure(error)
        }
        try await client.shutdown()
        let httpClientBytes = server.receivedBytes
        let chainAware = try await ChainAwareClient.get(host: host, server: server, store: store)
        let chainAwareBytes = server.receivedBytes - httpClientBytes
        await server.shutdown()
        return Outcome(httpClient: httpClient, httpClientBytes: httpClientBytes, chainAware: chainAware, chainAwareBytes: chainAwareBytes)
    }

    /// Both adapters refused the connection before a request byte reached the server.
    static func expectRefusedByBothAdapters(_ outcome: Outcome, sourceLocation: SourceLocation = #_sourceLocation) {
        switch outcome.httpClient {
        case .success(let status):
            Issue.record("the pinned HTTPClient reached the server (status \(status))", sourceLocation: sourceLocation)
        case .failure(let error):
            #expect(error is PinningFailure, "the pinned HTTPClient failed with \(error), not a pin refusal",
                    sourceLocation: sourceLocation)
        }
        #expect(outcome.httpClientBytes == 0, "request bytes reached the server from the HTTPClient", sourceLocation: sourceLocation)
        #expect(outcome.chainAware.decision?.isAllowed == false,
                "PinningTLSVerifier decided \(String(describing: outcome.chainAware.decision))", sourceLocation: sourceLocation)
        #expect(outcome.chainAware.status == nil, sourceLocation: sourceLocation)
        #expect(outcome.chainAwareBytes == 0, "request bytes reached the server from the chain-aware client",
                sourceLocation: sourceLocation)
    }

    // MARK: - The control: a DNS-only leaf pinned for the requested name

    @Test func leafPinnedForTheRequestedNameIsAllowedByBothAdapters() async throws {
        let list = try await MutableListServer.start([Pins.entry("pki/api-example.pem", name: "api.example.com")])
        let store = try Pins.store(serviceURL: list.listURL)
        #expect(await store.update() == .ok)
        let outcome = try await Self.request("api.example.com", servedBy: "api-example", store: store)
        await list.shutdown()
        #expect(try outcome.httpClient.get() == 200)
        #expect(outcome.chainAware.status == 200)
        #expect(outcome.chainAware.decision?.isAllowed == true)
    }

    // MARK: - A leaf naming the peer's IP address stands for any host

    @Test func ipOnlyLeafPinnedForTheAddressIsRefusedForAPinnedDNSNameOnAnEnforcingStore() async throws {
        let list = try await MutableListServer.start([
            Pins.entry("pki/ip-only.pem", name: "127.0.0.1"),
            Pins.entry("pki/api-example.pem", name: "api.example.com"),
        ])
        let store = try Pins.store(serviceURL: list.listURL)
        #expect(await store.update() == .ok)
        let outcome = try await Self.request("api.example.com", servedBy: "ip-only", store: store)
        await list.shutdown()
        Self.expectRefusedByBothAdapters(outcome)
    }

    @Test func leafWithADNSNameAndTheAddressPinnedForItsDNSNameIsRefusedForAnotherPinnedName() async throws {
        let list = try await MutableListServer.start([
            Pins.entry("pki/www-and-ip.pem", name: "www.example.com"),
            Pins.entry("pki/api-example.pem", name: "api.example.com"),
        ])
        let store = try Pins.store(serviceURL: list.listURL)
        #expect(await store.update() == .ok)
        let outcome = try await Self.request("api.example.com", servedBy: "www-and-ip", store: store)
        await list.shutdown()
        Self.expectRefusedByBothAdapters(outcome)
    }

    @Test func ipOnlyLeafIsRefusedWhenTheSignedDomainsConfigLeavesUnlistedHostsUnpinned() async throws {
        let list = try await Pins.challengeListServer([Pins.entry("pki/api-example.pem", name: "api.example.com")],
                                                      domainsConfig: #"{"sslPinningRequiredForUnlisted": false}"#)
        let store = try Pins.store(serviceURL: list.baseURL.appendingPathComponent("list.json"), useChallenge: true)
        #expect(await store.update() == .ok)
        let outcome = try await Self.request("api.example.com", servedBy: "ip-only", store: store)
        try? await list.shutdown()
        Self.expectRefusedByBothAdapters(outcome)
    }

    @Test func ipOnlyLeafIsRefusedUnderListReportOnlyBesideAnEnforcingPolicyForTheRequestedHost() async throws {
        // Any enforcing source enforces: the policy for api.example.com does, whatever the list does.
        let store = try Pins.store(policies: [try Self.apiExamplePolicy()], enforcement: .listReportOnly)
        let outcome = try await Self.request("api.example.com", servedBy: "ip-only", store: store)
        Self.expectRefusedByBothAdapters(outcome)
    }

    @Test func ipOnlyLeafIsRefusedUnderStoreWideReportOnly() async throws {
        // Report-only relaxes pins, never the host-name check, which an IP-only leaf fails for
        // api.example.com on the chain-aware path: so the leaf view refuses it too.
        let store = try Pins.store([Pins.entry("pki/ip-only.pem", name: "127.0.0.1")],
                                   policies: [try Self.apiExamplePolicy()], enforcement: .reportOnly)
        let outcome = try await Self.request("api.example.com", servedBy: "ip-only", store: store)
        Self.expectRefusedByBothAdapters(outcome)
    }

    @Test func leafIsRefusedWhenOnlyAReportOnlyPolicyOnItsOtherNameCoversItBesideAnEnforcingPolicyForTheRequestedHost() async throws {
        // www.example.com's policy runs report-only and does not pin www-and-ip.pem: a mismatch
        // reported there must not stand in for api.example.com's enforcing policy.
        let store = try Pins.store(policies: [
            try Self.apiExamplePolicy(),
            PinPolicy(domain: "www.example.com", pins: [try Self.apiExamplePin(), Self.backupPin], reportOnly: true),
        ])
        let outcome = try await Self.request("api.example.com", servedBy: "www-and-ip", store: store)
        Self.expectRefusedByBothAdapters(outcome)
    }

    @Test func ipOnlyLeafDoesNotReachAHostOutsideTheExpectedNamesWhenOnlyTheAddressIsExpected() async throws {
        let store = try Pins.store([Pins.entry("pki/ip-only.pem", name: "127.0.0.1")], expectedCommonNames: ["127.0.0.1"])
        let outcome = try await Self.request("api.example.com", servedBy: "ip-only", store: store)
        Self.expectRefusedByBothAdapters(outcome)
    }

    // MARK: - A wildcard leaf stands for every host under it

    @Test func wildcardLeafPinnedForOneHostIsRefusedForAnUnpinnedHostItCovers() async throws {
        let list = try await MutableListServer.start([Pins.entry("pki/wildcard-example.pem", name: "api.example.com")])
        let store = try Pins.store(serviceURL: list.listURL)
        #expect(await store.update() == .ok)
        let outcome = try await Self.request("x.example.com", servedBy: "wildcard-example", store: store)
        await list.shutdown()
        Self.expectRefusedByBothAdapters(outcome)
        #expect(outcome.chainAware.decision?.failure?.reason == .noPinsForHost(updateResult: nil))
    }
}
